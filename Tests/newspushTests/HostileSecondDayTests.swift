import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// A hostile operator's second day (issue 40): each case through the built binary against the
/// emulator and feed servers on 127.0.0.1, numbered as the issue numbers them.
@Suite("A hostile operator's second day")
struct HostileSecondDayTests {
    let first = HostileOperatorTests()

    // 6. Characters that render as nothing make a blank alert, on every path alike.
    static let invisible: [String] = [
        "\u{3164}\u{3164}", "\u{115F}\u{1160}", "\u{FFA0}", "\u{2800}\u{2800}", "\u{17B4}\u{17B5}",
        "\u{180E}\u{FE0F}", "\u{E0041}\u{E0042}", "\u{3000}\u{2028}", "\u{0301}\u{0302}",
    ]

    @Test func invisibleLettersAreBlankForPublishAndForTheRun() async throws {
        let hub = try await LocalHub.start(devicesYAML: HostileOperatorTests.devices)
        defer { hub.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let now = Date()
        var items = ""
        for (index, text) in Self.invisible.enumerated() {
            items += """
                <item><title>\(text)</title><description>\(text)</description>
                <link>https://news.example.org/blank-\(index)</link><guid>blank-\(index)</guid>
                <pubDate>\(rfc822(now))</pubDate></item>
                """
        }
        let feed = """
            <?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>W</title>\(items)
            <item><title>Filler \u{3164} between words is still a story</title><link>https://news.example.org/fine</link>
            <guid>fine</guid><pubDate>\(rfc822(now))</pubDate></item></channel></rss>
            """
        let feeds = try await LocalHTTPServer.serving(["/w.xml": CannedResponse(text: feed)])
        defer { feeds.stop() }
        let config = try first.config(
            folder, hub: hub.endpoint, feeds: ["{url: \"\(feeds.baseURL)/w.xml\", category: World}"])
        for text in Self.invisible {
            for option in ["--title", "--message"] {
                let result = try await newspush(
                    ["publish", "--config", config, "--category", "World", option, text, "--yes"],
                    environment: hubEnvironment)
                #expect(
                    result.status == 64,
                    "\(option) \(text.unicodeScalars.map { String($0.value, radix: 16) }): \(result.stderr)")
            }
        }
        #expect(await hub.emulator.allDeliveries().isEmpty)
        let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(run.status == 0, "\(run.stderr)")
        let listed = try #require(try first.json(run)["items"] as? [[String: Any]])
        for item in listed where (item["link"] as? String)?.contains("/blank-") == true {
            #expect(item["decision"] as? String == "unclassified", "\(item)")
        }
        let deliveries = await hub.emulator.allDeliveries().map(\.payload)
        #expect(deliveries.count == 1 && deliveries[0].contains("still a story"), "\(deliveries)")
    }

    // 7. A message template that renders blank is a configuration error.
    @Test(arguments: ["\"\"", "\"   \"", "\"\u{3164}\"", "\"{url}\"", "\" {source} \""])
    func aBlankMessageTemplateIsAConfigError(message: String) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        for value in ["message: \(message)", "messages: {fr: \(message)}"] {
            let config = try first.config(
                folder, hub: "http://127.0.0.1:1/", extra: "categories:\n  World: {\(value)}",
                feeds: ["{url: \"http://127.0.0.1:1/w.xml\", category: World}"])
            let check = try await newspush(["check", "--config", config], environment: hubEnvironment)
            #expect(check.status == 78, "\(value): \(check.stdout) \(check.stderr)")
            #expect((check.stdout + check.stderr).contains("blank"), "\(check.stdout) \(check.stderr)")
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 78, "\(value): \(run.stderr)")
        }
    }

    // 8. Every text property is bounded, by characters and by bytes.
    @Test func everyTextPropertyIsBoundedByCharactersAndBytes() async throws {
        let hub = try await LocalHub.start(devicesYAML: HostileOperatorTests.devices)
        defer { hub.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try first.config(folder, hub: hub.endpoint)
        let long = Array(repeating: "governments", count: 9_000).joined(separator: " ")
        let heavy = "Z" + String(repeating: "\u{0301}", count: 3_000) + " falls"
        for (index, title) in [long, heavy].enumerated() {
            let sent = try await newspush(
                [
                    "publish", "--config", config, "--category", "Science", "--title", title,
                    "--url", "https://news.example.org/long-\(index)", "--yes", "--format", "json",
                ], environment: hubEnvironment)
            #expect(sent.status == 0, "\(sent.stderr)")
            let payload = try await first.payload(hub, device: "phone-science")
            let alert = try #require(first.alert(payload))
            let shown = try #require(payload["title"] as? String)
            #expect(alert.count <= 178 && alert.utf8.count <= 4 * 178, "\(alert.count) \(alert.utf8.count)")
            #expect(shown.count <= 256 && shown.utf8.count <= 4 * 256, "\(shown.count) \(shown.utf8.count)")
            #expect(alert.hasSuffix("…") || index == 1, "\(alert.suffix(20))")
        }
        let deliveries = await hub.emulator.allDeliveries()
        #expect(deliveries.count == 2 && deliveries.allSatisfy { $0.payload.utf8.count < 4096 }, "\(deliveries.count)")
    }
}
