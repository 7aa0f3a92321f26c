import Foundation
import NewsPushTesting
import Testing

/// What reaches the lock screen from broken feeds, through the binary against the emulator:
/// mojibake repaired, RSS in a default namespace read, documents that yield nothing reported as
/// failures, links pushed only when they are http(s), alert text cleaned.
@Suite("Broken feeds, as the run and parse see them")
struct FeedKindsCLITests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World, Politics],
                template: '{"aps":{"alert":"$(messageParam)"},"url":"$(url)"}'}
        """

    func item(_ title: String, _ slug: String, link: String? = nil, description: String = "") -> String {
        "<item><title>\(title)</title><link>\(link ?? "https://news.example.org/\(slug)")</link><guid>\(slug)</guid>"
            + "<pubDate>\(rfc822(minutesAgo: 3))</pubDate><description>\(description)</description></item>"
    }

    func rss(_ items: [String], rootAttributes: String = "") -> String {
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><rss version=\"2.0\"\(rootAttributes)><channel><title>Desk</title>"
            + "<link>https://news.example.org/</link>\(items.joined())</channel></rss>"
    }

    func config(_ folder: TemporaryFolder, hub: LocalHub, feeds: [String], extra: String = "") throws -> String {
        try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", retries: 0}
            policy: {first_run: send, budget: {per_category: 50, per: 1h}}
            \(extra)
            feeds:
            \(feeds.map { "  - {url: \"\($0)\", category: World}" }.joined(separator: "\n"))
            """)
    }

    func alerts(_ hub: LocalHub) async throws -> [(text: String, url: String)] {
        try await hub.emulator.allDeliveries().map { delivery in
            let body = try #require(
                try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any])
            let aps = try #require(body["aps"] as? [String: Any])
            return (aps["alert"] as? String ?? "", body["url"] as? String ?? "")
        }
    }

    @Test func mojibakeNamespacesAndUnusableFeedsInOneRun() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let feeds = try await LocalHTTPServer.serving([
            "/mojibake.xml": CannedResponse(
                text: rss([
                    item("El gobierno ordenÃ³ evacuar la costa", "es"),
                    item("Council tax rises by Â£120", "gb"),
                    item("Minister: itâ€™s â€œoff the tableâ€\u{9D}", "quotes"),
                ])),
            "/harvard.xml": CannedResponse(
                text: rss(
                    [item("Harvard-namespaced story", "harvard")],
                    rootAttributes: " xmlns=\"https://cyber.harvard.edu/rss/rss.html\"")),
            "/foreign.xml": CannedResponse(
                text: "<rss version=\"2.0\" xmlns:x=\"http://example.com/export\"><channel><title>Export</title>"
                    + "<x:item><x:title>Lost story</x:title><x:link>https://news.example.org/lost</x:link></x:item>"
                    + "</channel></rss>"
            ),
            "/bare.xml": CannedResponse(
                text:
                    "<rss version=\"2.0\"><channel><title>Bare</title><item><description>No title, no "
                    + "link</description></item></channel></rss>"
            ),
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(
            folder, hub: hub,
            feeds: ["/mojibake.xml", "/harvard.xml", "/foreign.xml", "/bare.xml"].map { "\(feeds.baseURL)\($0)" })
        let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(run.status == 2, "two feeds yielded nothing usable: partial, \(run.stderr)")
        let texts = try await alerts(hub).map(\.text)
        #expect(texts.contains("Breaking World News : El gobierno ordenó evacuar la costa"))
        #expect(texts.contains("Breaking World News : Council tax rises by £120"))
        #expect(texts.contains("Breaking World News : Minister: it’s “off the table”"))
        #expect(texts.contains("Breaking World News : Harvard-namespaced story"), "RSS in a default namespace is read")
        #expect(texts.count == 4)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let feedReports = try #require(report["feeds"] as? [[String: Any]])
        for name in ["/foreign.xml", "/bare.xml"] {
            let entry = try #require(feedReports.first { ($0["url"] as? String)?.hasSuffix(name) == true })
            #expect(entry["status"] as? String == "error")
            #expect((entry["error"] as? String)?.contains("no usable items") == true, "\(entry)")
        }
        let text = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(
            (text.stdout + text.stderr).contains(
                "foreign.xml: no usable items: the document has 1 <item> or <entry> elements"),
            "\(text.stdout) \(text.stderr)")
    }

    @Test func pushesCarryOnlyHTTPLinksAndCleanText() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let feeds = try await LocalHTTPServer.serving([
            "/desk.xml": CannedResponse(
                text: rss([
                    item("Script link story", "script", link: "javascript:alert(1)"),
                    item(
                        "&lt;img src=\"https://img.example.org/x.png\"&gt;", "image-title",
                        description: "Markets fell sharply in early trading today. Analysts blamed rates."),
                    item("Q&amp;amp;A: what the deal means", "qna"),
                    item(
                        "Rescue teams reach the village", "rescue",
                        description: "Rescue teams reach the village. Four people were saved."),
                ]))
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(
            folder, hub: hub, feeds: ["\(feeds.baseURL)/desk.xml"],
            extra: "categories: {World: {message: \"{title} | {summary}\"}}")
        let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(run.status == 0, "\(run.stderr)")
        let alerts = try await alerts(hub)
        let script = try #require(alerts.first { $0.text.hasPrefix("Script link story") })
        #expect(script.url == "", "a javascript: link is never pushed")
        #expect(
            alerts.contains { $0.text == "Markets fell sharply in early trading today. | Analysts blamed rates." },
            "a title of only markup gives way to the summary's first sentence: \(alerts.map(\.text))")
        #expect(alerts.contains { $0.text == "Q&A: what the deal means | " || $0.text == "Q&A: what the deal means |" })
        #expect(
            alerts.contains { $0.text == "Rescue teams reach the village | Four people were saved." },
            "the summary does not repeat the title")
        #expect(!alerts.contains { $0.text.contains("&amp;") || $0.text.contains("<img") })
    }

    @Test func parseKeepsRelativeLinksOfAFileRelative() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let file = try folder.write("desk.xml", rss([item("Relative story", "rel", link: "/2026/11/relative-story")]))
        let parsed = try await newspush(["parse", file])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let feed = try #require(try JSONSerialization.jsonObject(with: Data(parsed.stdout.utf8)) as? [String: Any])
        let items = try #require(feed["items"] as? [[String: Any]])
        #expect(items.first?["link"] as? String == "/2026/11/relative-story")
        #expect(!parsed.stdout.contains("file:"))
        let stdin = try await newspush(
            ["parse", "-"], input: rss([item("Relative story", "rel", link: "relative-story")]))
        #expect(
            stdin.stdout.contains(#""link":"relative-story""#) || stdin.stdout.contains(#""link" : "relative-story""#),
            "\(stdin.stdout)")

        let bare = try folder.write(
            "bare.xml",
            "<rss version=\"2.0\"><channel><title>Bare</title><item><description>x</description></item></channel></rss>"
        )
        let failed = try await newspush(["parse", bare, file, "--format", "jsonl"])
        #expect(failed.status != 0)
        let lines = failed.stdout.split(separator: "\n")
        #expect(lines.count == 2, "one broken source does not stop the other")
        #expect(
            lines.first?.contains("no usable items: none of its 1 items has a title or a link") == true,
            "\(failed.stdout)")
    }
}
