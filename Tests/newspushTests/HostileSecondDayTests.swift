import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A hostile operator's second day: each case through the built binary against the
/// emulator and feed servers on 127.0.0.1, numbered as the issue numbers them.
@Suite("A hostile operator's second day")
struct HostileSecondDayTests {
    let first = HostileOperatorTests()

    // Characters that render as nothing make a blank alert, on every path alike.
    static let invisible: [String] = [
        "\u{3164}\u{3164}", "\u{115F}\u{1160}", "\u{FFA0}", "\u{2800}\u{2800}", "\u{17B4}\u{17B5}",
        "\u{180E}\u{FE0F}", "\u{E0041}\u{E0042}", "\u{3000}\u{2028}", "\u{0301}\u{0302}",
    ]

    @Test func invisibleLettersAreBlankForPublishAndForTheRun() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
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
    }

    // A message template that renders blank is a configuration error.
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

    // Every text property is bounded, by characters and by bytes.
    @Test func everyTextPropertyIsBoundedByCharactersAndBytes() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
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
            #expect(
                deliveries.count == 2 && deliveries.allSatisfy { $0.payload.utf8.count < 4096 }, "\(deliveries.count)")
        }
    }
}

/// The desk's cases (9–11), against a running `newspush desk` spoken to in raw HTTP.
@Suite("A hostile operator's second day: the desk")
struct HostileDeskTests {
    let first = HostileOperatorTests()

    init() {}

    /// A newsroom with a ledger, editors alice and bob and viewer vera, and its desk.
    func desk(_ folder: TemporaryFolder, hub: String = "http://127.0.0.1:1/", proxies: String = "") async throws
        -> (config: String, desk: DeskProcess)
    {
        let config = try first.config(
            folder, hub: hub,
            extra: "desk: {users: desk-users.yaml\(proxies.isEmpty ? "" : ", trusted_proxies: \(proxies)")}",
            feeds: ["{url: \"http://127.0.0.1:1/w.xml\", category: World}"])
        #expect(try await newspush(["state", "migrate", "--config", config]).status == 0)
        for (name, role) in [("alice", "editor"), ("bob", "editor"), ("vera", "viewer")] {
            let added = try await newspush(
                ["desk", "add-user", name, "--role", role, "--config", config], input: "\(name)-password\n")
            #expect(added.status == 0, "\(added.stderr)")
        }
        return (config, try await DeskProcess.start(["desk", "--listen", "127.0.0.1:0", "--config", config]))
    }

    func signIn(_ desk: DeskProcess, _ name: String) async throws -> (cookie: String, csrf: String) {
        let answer = await desk.send(
            "POST /login HTTP/1.1", body: "user=\(name)&password=\(name)-password",
            headers: ["Content-Type: application/x-www-form-urlencoded"])
        let cookie = try #require(answer.cookie, "\(answer.status) \(answer.body)")
        let page = await desk.send("GET / HTTP/1.1", headers: ["Cookie: \(cookie)"])
        return (cookie, try #require(page.csrf, "\(page.status) \(page.body.prefix(300))"))
    }

    // No request, signed in or not, can stop the desk; a bad one is a 400 or a refusal.
    @Test func noRequestKillsTheDesk() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let (_, desk) = try await desk(folder)
        defer { desk.stop() }
        let form = "Content-Type: application/x-www-form-urlencoded"
        for body in [
            "user=a b&password=x", "user=%zz&password=%", "user=<x>&password={|^}", "%", "&&==&", "user=%E2%82",
        ] {
            let answer = await desk.send("POST /login HTTP/1.1", body: body, headers: [form])
            #expect(answer.status == 401, "\(body): \(answer.status)")
            #expect(desk.isRunning, "the desk died on \(body)")
        }
        let (cookie, csrf) = try await signIn(desk, "alice")
        for target in ["/sent?since={|^}", "/sent?q=%zz&since=%", "/publish?title=a%20b%&url={x}", "/next?fresh=%"] {
            let answer = await desk.send("GET \(target) HTTP/1.1", headers: ["Cookie: \(cookie)"])
            #expect((200..<500).contains(answer.status), "\(target): \(answer.status)")
            #expect(desk.isRunning, "the desk died on \(target)")
        }
        // Fuzzed: random bytes in forms and queries, signed in and not.
        var random = SystemRandomNumberGenerator()
        for round in 0..<150 {
            let text = hostileFormText(using: &random)
            let query = text.replacingOccurrences(of: " ", with: "+").replacingOccurrences(of: "#", with: "%23")
            let answer =
                round.isMultiple(of: 2)
                ? await desk.send("POST /login HTTP/1.1", body: text, headers: [form])
                : await desk.send(
                    "POST /publish HTTP/1.1", body: "csrf=\(csrf)&" + text, headers: [form, "Cookie: \(cookie)"])
            let page = await desk.send("GET /sent?\(query) HTTP/1.1", headers: ["Cookie: \(cookie)"])
            #expect(answer.status != 0 && answer.status < 500, "\(text.debugDescription): \(answer.status)")
            #expect(page.status != 0 && page.status < 500, "\(query.debugDescription): \(page.status)")
            #expect(desk.isRunning, "the desk died on \(text.debugDescription)")
            if !desk.isRunning { break }
        }
    }

    // The users file's current word holds on every request.
    @Test func aSessionFollowsTheUsersFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let (config, desk) = try await desk(folder)
        defer { desk.stop() }
        let form = "Content-Type: application/x-www-form-urlencoded"
        let usersFile = folder.file("desk-users.yaml")
        // Demoted to viewer: the old session decides nothing.
        let alice = try await signIn(desk, "alice")
        let users = try String(contentsOfFile: usersFile, encoding: .utf8)
        let demoted = users.components(separatedBy: "\n").map {
            $0.contains("\"alice\"") ? $0.replacingOccurrences(of: "role: editor", with: "role: viewer") : $0
        }.joined(separator: "\n")
        try demoted.write(toFile: usersFile, atomically: true, encoding: .utf8)
        let publish = await desk.send(
            "POST /api/publish HTTP/1.1", body: "category=World&title=Demoted+editor+story&dry_run=1",
            headers: [form, "Cookie: \(alice.cookie)", "X-CSRF-Token: \(alice.csrf)"])
        #expect(publish.status == 403, "\(publish.status) \(publish.body)")
        // A new password: the old session is over.
        let bob = try await signIn(desk, "bob")
        let changed = try await newspush(
            ["desk", "add-user", "bob", "--role", "editor", "--config", config], input: "bob-new-password\n")
        #expect(changed.status == 0)
        let page = await desk.send("GET / HTTP/1.1", headers: ["Cookie: \(bob.cookie)"])
        #expect(page.status == 303 && page.headers["location"] == "/login", "\(page.status)")
        let api = await desk.send("GET /api/review HTTP/1.1", headers: ["Cookie: \(bob.cookie)"])
        #expect(api.status == 401, "\(api.status)")
        // Removed from the file: the same.
        let vera = try await signIn(desk, "vera")
        let without = try String(contentsOfFile: usersFile, encoding: .utf8).components(separatedBy: "\n")
            .filter { !$0.contains("\"vera\"") }.joined(separator: "\n")
        try without.write(toFile: usersFile, atomically: true, encoding: .utf8)
        let gone = await desk.send("GET /api/history HTTP/1.1", headers: ["Cookie: \(vera.cookie)"])
        #expect(gone.status == 401, "\(gone.status)")
    }

    // GET /login when signed in goes to the desk; HEAD answers as GET without a body.
    @Test func signedInLoginAndHeadAnswerAsExpected() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let (_, desk) = try await desk(folder)
        defer { desk.stop() }
        let alice = try await signIn(desk, "alice")
        let login = await desk.send("GET /login HTTP/1.1", headers: ["Cookie: \(alice.cookie)"])
        #expect(login.status == 303 && login.headers["location"] == "/", "\(login.status)")
        let head = await desk.send("HEAD / HTTP/1.1", headers: ["Cookie: \(alice.cookie)"])
        #expect(head.status == 200 && head.body.isEmpty, "\(head.status)")
        #expect(head.headers["content-security-policy"] != nil)
        let anonymous = await desk.send("HEAD /login HTTP/1.1")
        #expect(anonymous.status == 200, "\(anonymous.status)")
    }

    // An unreadable ledger: every answer says why, with the security headers, and is logged.
    @Test func anUnreadableLedgerIsSaidWithTheSecurityHeaders() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let (config, desk) = try await desk(folder)
        defer { desk.stop() }
        let alice = try await signIn(desk, "alice")
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: folder.file("newspush-state.db")))
        let cli = try await newspush(["review", "list", "--config", config])
        #expect(cli.status == 1)
        for target in ["/", "/api/review", "/sent", "/api/history"] {
            let answer = await desk.send("GET \(target) HTTP/1.1", headers: ["Cookie: \(alice.cookie)"])
            #expect(answer.status == 500, "\(target): \(answer.status)")
            #expect(answer.headers["content-security-policy"] != nil, "\(target): \(answer.headers)")
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(target)")
            #expect(answer.headers["referrer-policy"] == "same-origin", "\(target)")
            #expect(answer.body.contains("newspush-state.db"), "\(target): \(answer.body.prefix(400))")
        }
    }
}

/// The "never twice" cases (1–5): the same story reaches no reader twice, whichever way it
/// comes back.
@Suite("A hostile operator's second day: never twice")
struct HostileNeverTwiceTests {
    let first = HostileOperatorTests()

    static let devices = """
        hub: breaking-news
        devices:
          - {id: world, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: both, platform: apple, tags: [World, Politics], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: politics, platform: apple, tags: [Politics], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: science, platform: apple, tags: [Science], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: alice, platform: apple, tags: [World, "user:alice"], template: '{"aps":{"alert":"$(messageParam)"}}'}
        """

    /// A newsroom of `feeds` (path, name, category) served by `server`, with `extra` config.
    func newsroom(
        _ folder: TemporaryFolder, hub: LocalHub, server: LocalHTTPServer? = nil,
        feeds: [(path: String, name: String, category: String)] = [], extra: String = ""
    ) throws -> String {
        try first.config(
            folder, hub: hub.endpoint, extra: extra,
            feeds: feeds.map {
                "{url: \"\(server?.baseURL ?? "")\($0.path)\", name: \($0.name), category: \($0.category)}"
            })
    }

    /// How many alerts each device got whose text contains `text`.
    func reached(_ hub: LocalHub, _ text: String) async -> [String: Int] {
        var count: [String: Int] = [:]
        for delivery in await hub.emulator.allDeliveries() where delivery.payload.contains(text) {
            count[delivery.device, default: 0] += 1
        }
        return count
    }

    func publish(_ config: String, _ arguments: [String]) async throws -> CommandResult {
        try await newspush(["publish", "--config", config, "--yes"] + arguments, environment: hubEnvironment)
    }

    // A --tags push that can reach the category's readers is the story's push.
    @Test func tagsThatReachTheCategorysReadersAreTheStorysPush() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([
                ("l1", "Harbour bridge reopens after repairs", 2), ("l2", "Port strike ends after nine days", 2),
                ("l3", "Ferry service resumes on the north route", 2),
            ])
            let server = try await FeedDesk.serve(["/w.xml": desk])
            defer { server.stop() }
            let config = try newsroom(folder, hub: hub, server: server, feeds: [("/w.xml", "World Desk", "World")])
            for (guid, title, tags) in [
                ("l1", "Harbour bridge reopens after repairs", "World || Politics"),
                ("l2", "Port strike ends after nine days", "!user:alice"),
            ] {
                let sent = try await publish(
                    config,
                    [
                        "--category", "World", "--title", title, "--url", "https://news.example.org/\(guid)", "--tags",
                        tags,
                    ])
                #expect(sent.status == 0, "\(tags): \(sent.stderr)")
                let again = try await publish(
                    config, ["--category", "World", "--title", title, "--url", "https://news.example.org/\(guid)"])
                #expect(again.status == 1, "\(tags): a repeat must be refused: \(again.stderr)")
            }
            // A trial on one person's devices stays a trial: the story's push still goes out.
            let trial = try await publish(
                config,
                [
                    "--category", "World", "--title", "Ferry service resumes on the north route",
                    "--url", "https://news.example.org/l3", "--tags", "user:alice",
                ])
            #expect(trial.status == 0, "\(trial.stderr)")
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(await reached(hub, "Harbour bridge") == ["world": 1, "both": 1, "politics": 1, "alice": 1])
            #expect(await reached(hub, "Port strike") == ["world": 1, "both": 1, "politics": 1, "science": 1])
            #expect(await reached(hub, "Ferry service") == ["world": 1, "both": 1, "alice": 2])
            let kinds = try await first.outbox(config).compactMap { $0["kind"] as? String }.sorted()
            #expect(kinds == ["push", "push", "push", "trial"], "\(kinds)")
        }
    }

    // A held story published by hand, then approved: one alert.
    @Test func aHeldStoryPublishedByHandIsNotSentAgainOnApproval() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([
                ("h1", "Storm closes every school in the region", 2), ("h2", "Dam level reaches a record high", 2),
            ])
            let server = try await FeedDesk.serve(["/w.xml": desk])
            defer { server.stop() }
            let config = try newsroom(
                folder, hub: hub, server: server, feeds: [("/w.xml", "World Desk", "World")],
                extra: "review: {rules: [{category: World, mode: review}]}")
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            let queue = try await newspush(["review", "list", "--config", config, "--format", "json"])
            let held = try #require(try first.json(queue)["held"] as? [[String: Any]])
            func id(_ title: String) throws -> String {
                try #require(
                    held.first { ($0["properties"] as? [String: String])?["title"]?.hasPrefix(title) == true }?["id"]
                        as? String)
            }
            // The same link by hand: refused while held; forced, it closes the held push.
            let refused = try await publish(
                config,
                ["--category", "World", "--title", "Storm shuts schools", "--url", "https://news.example.org/h1"])
            #expect(refused.status == 1 && refused.stderr.contains("held"), "\(refused.stderr)")
            let forced = try await publish(
                config,
                [
                    "--category", "World", "--title", "Storm shuts schools", "--url", "https://news.example.org/h1",
                    "--force",
                ])
            #expect(forced.status == 0, "\(forced.stderr)")
            let approve = try await newspush(
                ["review", "approve", try id("Storm closes"), "--config", config], environment: hubEnvironment)
            #expect(approve.status != 0, "\(approve.stdout) \(approve.stderr)")
            // A near-identical headline forced out under another link: the approval checks again.
            let copy = try await publish(
                config,
                [
                    "--category", "World", "--title", "Dam level reaches a record high", "--url",
                    "https://other.example.org/dam", "--force",
                ])
            #expect(copy.status == 0, "\(copy.stderr)")
            let second = try await newspush(
                ["review", "approve", try id("Dam level"), "--config", config], environment: hubEnvironment)
            #expect(second.status != 0 && second.stderr.contains("not sent"), "\(second.stdout) \(second.stderr)")
            #expect(await reached(hub, "Storm") == ["world": 1, "both": 1, "alice": 1])
            #expect(await reached(hub, "Dam level") == ["world": 1, "both": 1, "alice": 1])
            let after = try await newspush(["review", "list", "--config", config, "--format", "json"])
            #expect((try first.json(after)["held"] as? [Any])?.isEmpty == true, "\(after.stdout)")
        }
    }

    // A rejected story does not come back: not from another feed, not under a new guid.
    @Test func aRejectedStoryStaysRejectedFromEveryFeed() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let wire = FeedDesk([("r1", "Minister resigns over budget leak", 2)])
            let other = FeedDesk([("o1", "Weather warning for the coast", 2)])
            let server = try await FeedDesk.serve(["/wire.xml": wire, "/other.xml": other])
            defer { server.stop() }
            let config = try newsroom(
                folder, hub: hub, server: server,
                feeds: [("/wire.xml", "Wire", "Politics"), ("/other.xml", "Other Desk", "Politics")],
                extra: "review: {rules: [{feed: Wire, mode: review}]}")
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            let queue = try await newspush(["review", "list", "--config", config, "--format", "json"])
            let held = try #require((try first.json(queue)["held"] as? [[String: Any]])?.first?["id"] as? String)
            let reject = try await newspush(["review", "reject", held, "--reason", "unconfirmed", "--config", config])
            #expect(reject.status == 0, "\(reject.stderr)")
            await other.set([
                ("o1", "Weather warning for the coast", 2), ("o2", "Minister resigns over budget leak", 1),
            ])
            await wire.set([("r2", "Minister resigns over budget leak!", 1)])
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            let items = try #require(try first.json(run)["items"] as? [[String: Any]])
            for item in items where (item["title"] as? String)?.hasPrefix("Minister") == true {
                #expect(item["decision"] as? String == "rejected", "\(item)")
            }
            #expect(await reached(hub, "Minister").isEmpty)
            let after = try await newspush(["review", "list", "--config", config, "--format", "json"])
            #expect((try first.json(after)["held"] as? [Any])?.isEmpty == true, "\(after.stdout)")
            let byHand = try await publish(
                config, ["--category", "Politics", "--title", "Minister resigns over budget leak"])
            #expect(byHand.status == 1 && byHand.stderr.contains("rejected"), "\(byHand.stderr)")
        }
    }

    // Correcting a story whose send is still scheduled cancels the old text's send.
    @Test func aCorrectionCancelsTheScheduledSendOfTheOldText() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try newsroom(folder, hub: hub)
            let scheduled = try await publish(
                config,
                [
                    "--category", "Science", "--title", "Probe lands on Mars at dawn", "--url",
                    "https://news.example.org/probe", "--at", "+1h", "--format", "json",
                ])
            #expect(scheduled.status == 0, "\(scheduled.stderr)")
            let id = try #require(try first.json(scheduled)["notification_id"] as? String, "\(scheduled.stdout)")
            let corrected = try await publish(
                config,
                [
                    "--replace", "link:news.example.org/probe", "--title", "Probe lands on Mars at dusk", "--format",
                    "json",
                ])
            #expect(corrected.status == 0, "\(corrected.stderr)")
            #expect(corrected.stderr.contains("cancelled") && corrected.stderr.contains(id), "\(corrected.stderr)")
            #expect(await hub.emulator.notification(id)?.state == "Cancelled")
            #expect(await reached(hub, "Probe lands") == ["science": 1])
            #expect(await reached(hub, "at dusk") == ["science": 1])
            let statuses = try await first.outbox(config).compactMap { $0["status"] as? String }.sorted()
            #expect(statuses == ["cancelled", "sent"], "\(statuses)")
        }
    }

    // A correction under another category reaches the readers of the wrong alert too.
    @Test func aCorrectionToAnotherCategoryReachesBothAudiences() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try newsroom(folder, hub: hub)
            let wrong = try await publish(
                config,
                [
                    "--category", "Science", "--title", "Budget cuts research funding", "--url",
                    "https://news.example.org/cut",
                ])
            #expect(wrong.status == 0, "\(wrong.stderr)")
            let corrected = try await publish(
                config,
                [
                    "--replace", "link:news.example.org/cut", "--category", "Politics", "--title",
                    "Budget cuts research funding by a tenth",
                ])
            #expect(corrected.status == 0, "\(corrected.stderr)")
            #expect(
                corrected.stderr.contains("Science") && corrected.stderr.contains("Politics"), "\(corrected.stderr)")
            #expect(await reached(hub, "by a tenth") == ["science": 1, "politics": 1, "both": 1])
        }
    }
}

/// The cases of losing a story and of the contracts (12–15).
@Suite("A hostile operator's second day: losing nothing, contracts")
struct HostileContractTests {
    let first = HostileOperatorTests()

    // A full temporary folder (TMPDIR) stops no run, and a message never blames the wrong disk.
    @Test(.enabled(if: SmallDisk.available, "needs root and a tmpfs mount"))
    func aFullTemporaryFolderStopsNoRun() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let scratch = folder.file("tmp")
            try SmallDisk.mount(scratch, kilobytes: 64)
            defer { SmallDisk.unmount(scratch) }
            try SmallDisk.fill(scratch, leaving: 0)
            let items = (1...300).map {
                ("s\($0)", "Story number \($0) of a long feed about the harbour", Double($0) + 1)
            }
            let feeds = try await LocalHTTPServer.serving([
                "/w.xml": CannedResponse(text: rssFeed(title: "W", items: items))
            ])
            defer { feeds.stop() }
            let config = try first.config(
                folder, hub: hub.endpoint, feeds: ["{url: \"\(feeds.baseURL)/w.xml\", category: World}"])
            let environment = hubEnvironment.merging(["TMPDIR": scratch]) { $1 }
            for round in 0..<2 {
                let run = try await newspush(["run", "--config", config, "--format", "json"], environment: environment)
                #expect(run.status == 0, "round \(round): \(run.stderr)")
                #expect(!run.stderr.contains("ledger") || !run.stderr.contains("full"), "\(run.stderr)")
            }
            let state = try await newspush(["state", "show", "--config", config], environment: environment)
            #expect(state.status == 0, "\(state.stderr)")
            #expect(await hub.emulator.allDeliveries().count == 50)
        }
    }

    /// The whole of stdout as one JSON object (two documents, or none, fail).
    func document(_ result: CommandResult) throws -> [String: Any] {
        try #require(
            try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "not one JSON document: \(result.stdout) \(result.stderr)")
    }

    // One JSON document on every path, one exit code per cause.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: sqlite3), "needs sqlite3 to make a newer ledger"))
    func oneDocumentAndOneExitCodePerCause() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let hub = try await LocalHub.start(devicesYAML: HostileOperatorTests.devices)
        defer { hub.stop() }
        let basic = try await LocalHub.start(devicesYAML: HostileOperatorTests.devices + "\ntier: basic")
        defer { basic.stop() }
        let config = try first.config(folder, hub: hub.endpoint)
        let ledger = folder.file("newspush-state.db")
        #expect(try await newspush(["state", "migrate", "--config", config]).status == 0)
        let good = try Data(contentsOf: URL(fileURLWithPath: ledger))
        // A damaged, a foreign and a newer ledger: one document each, with what is known.
        var header = Data("SQLite format 3\0".utf8)
        header.append(Data(repeating: 0x47, count: 4000))
        for (damage, bytes, version) in [
            ("garbage", Data(repeating: 0x41, count: 8192), nil), ("foreign", header, nil), ("newer", good, 99),
        ] as [(String, Data, Int?)] {
            try bytes.write(to: URL(fileURLWithPath: ledger))
            if damage == "newer" {
                let sql = "UPDATE meta SET value = '99' WHERE name = 'schema_version'"
                try #require(SmallDisk.run(sqlite3, [ledger, sql]) == 0)
            }
            let check = try await newspush(["state", "check", "--config", config, "--format", "json"])
            #expect(check.status == 1, "\(damage): \(check.status)")
            let answer = try document(check)
            #expect(answer["ok"] as? Bool == false, "\(damage)")
            #expect((answer["schema_version"] as? Int) == version, "\(damage): \(answer)")
            #expect(answer["schema_version"] != nil, "\(damage): schema_version is present, null when unknown")
        }
        try good.write(to: URL(fileURLWithPath: ledger))
        // A publish that is not confirmed answers with a document too.
        let unconfirmed = try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", "Unconfirmed story", "--format", "json"],
            environment: hubEnvironment, input: "n\n")
        #expect(unconfirmed.status == 1)
        #expect(try document(unconfirmed)["status"] as? String == "not-confirmed", "\(unconfirmed.stdout)")
        // A hub that cannot be reached, or refuses the key: 1 (SPEC §7), for test-send as for publish.
        let away = try first.config(folder, hub: "http://127.0.0.1:1/")
        let wrongKey = [
            "NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString.replacingOccurrences(of: "AAEC", with: "ZZEC")
        ]
        for (configPath, environment) in [(away, hubEnvironment), (config, wrongKey)] {
            let test = try await newspush(
                [
                    "hub", "test-send", "--config", configPath, "--category", "World", "--title", "Test", "--format",
                    "json",
                ],
                environment: environment)
            #expect(test.status == 1, "\(test.stdout) \(test.stderr)")
            _ = try document(test)
        }
        // An unknown id: 1 on every tier.
        for endpoint in [hub.endpoint, basic.endpoint] {
            let tiered = try first.config(folder, hub: endpoint)
            let cancel = try await newspush(
                ["hub", "cancel", "NOSUCHID", "--config", tiered], environment: hubEnvironment)
            #expect(cancel.status == 1, "cancel on \(endpoint): \(cancel.stderr)")
            let status = try await newspush(
                ["hub", "status", "NOSUCHID", "--config", tiered, "--format", "json"], environment: hubEnvironment)
            #expect(status.status == 1, "status on \(endpoint): \(status.stderr)")
        }
    }

    // The smaller cases.
    @Test func theSmallerCases() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let hub = try await LocalHub.start(devicesYAML: HostileOperatorTests.devices)
        defer { hub.stop() }
        let config = try first.config(
            folder, hub: hub.endpoint, feeds: ["{url: \"http://127.0.0.1:1/w.xml\", category: World}"])
        // check says what the first run does: first_run: send pushes, it does not record a baseline.
        let check = try await newspush(["check", "--config", config], environment: hubEnvironment)
        #expect(!check.stdout.contains("records a baseline") && check.stdout.contains("pushes"), "\(check.stdout)")
        // hub cancel under a held lock: exit 75 at once; --wait exists.
        let fd = open(folder.file("newspush-state.db.lock"), O_RDWR | O_CREAT, 0o644)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        let cancel = try await newspush(["hub", "cancel", "X1", "--config", config], environment: hubEnvironment)
        close(fd)
        #expect(cancel.status == 75, "\(cancel.stderr)")
        // At once: not after the 30 s the old code waited (the process's own time).
        #expect(cancel.seconds < 25, "at once, not after 30 s")
        let help = try await newspush(["hub", "cancel", "--help"])
        #expect(help.stdout.contains("--wait"))
        // publish --help no longer says trials are not recorded.
        let publishHelp = try await newspush(["publish", "--help"])
        #expect(!publishHelp.stdout.contains("not recorded"), "\(publishHelp.stdout)")
        // Negative durations: the value is named, not "Missing value".
        for arguments in [
            ["publish", "--wait", "-5s"], ["review", "list", "--since", "-2h"],
            ["state", "prune", "--retention", "-1d"],
        ] {
            let result = try await newspush(arguments + ["--config", config], environment: hubEnvironment)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(
                !result.stderr.contains("Missing value") && result.stderr.contains("-"),
                "\(arguments): \(result.stderr)")
        }
        // An unknown --language: a malformed one is refused, an unconfigured one is said.
        let malformed = try await newspush(
            [
                "publish", "--config", config, "--category", "World", "--title", "Lang", "--language", "english!",
                "--yes",
            ],
            environment: hubEnvironment)
        #expect(malformed.status == 64, "\(malformed.stderr)")
        let unconfigured = try await newspush(
            [
                "publish", "--config", config, "--category", "World", "--title", "Langue", "--language", "fr",
                "--dry-run",
            ],
            environment: hubEnvironment)
        #expect(unconfigured.stderr.contains("no message in 'fr'"), "\(unconfigured.stderr)")
        // A metrics file that cannot be written is refused before the run.
        let metrics = try await newspush(
            ["run", "--config", config, "--metrics-file", "/proc/version"], environment: hubEnvironment)
        #expect(metrics.status != 0, "\(metrics.stderr)")
        #expect(metrics.stderr.contains("/proc/version"), "\(metrics.stderr)")
    }
}

/// A machine whose clock runs hours ahead decides nothing by it.
@Suite("A hostile operator's second day: the clock")
struct HostileClockTests {
    let first = HostileOperatorTests()
    static let libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
    static let missing =
        FileManager.default.isReadableFile(atPath: libfaketime) ? nil : "needs libfaketime (scripts/setup.sh)"

    /// What runs the built binary under a clock `offset` off (`+5h`): libfaketime preloaded
    /// into the binary itself. (Not the `faketime` wrapper: it runs the binary as its own child,
    /// and a test's SIGKILL to the wrapper left the binary running on.)
    static func clock(_ offset: String) -> [String: String] {
        ["LD_PRELOAD": libfaketime, "FAKETIME": offset]
    }

    /// The built binary under a clock `offset` off, to its end.
    func skewed(_ offset: String, _ arguments: [String]) async throws -> CommandResult {
        try await newspushRaw(
            try binaryURL().path, arguments, environment: hubEnvironment.merging(Self.clock(offset)) { $1 })
    }

    @Test(.enabled(if: missing == nil, "\(missing ?? "")"))
    func aClockHoursAheadRecordsNothingAndExpiresNothing() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let desk = FeedDesk([
                ("c1", "Rescue teams reach the village", 3), ("c2", "Council backs the new budget", 4),
            ])
            let server = try await FeedDesk.serve(["/w.xml": desk])
            defer { server.stop() }
            let config = try first.config(
                folder, hub: hub.endpoint, extra: "review: {rules: [{title: Council, mode: review}]}",
                feeds: ["{url: \"\(server.baseURL)/w.xml\", category: World}"])
            #expect(try await newspush(["state", "migrate", "--config", config]).status == 0)
            for offset in ["+5h", "-5h"] {
                let ahead = try await skewed(offset, ["run", "--config", config])
                #expect(ahead.status == 1, "\(offset): \(ahead.stderr)")
                #expect(ahead.stderr.contains("clock"), "\(offset): \(ahead.stderr)")
                let export = try first.json(try await newspush(["state", "export", "--config", config]))
                let items = export["items"] as? [String: Any], feeds = export["feeds"] as? [String: Any]
                #expect(items?.isEmpty == true && feeds?.isEmpty == true, "\(offset): nothing recorded: \(export)")
            }
            #expect(await hub.emulator.allDeliveries().isEmpty)
            // With the clock right, the same items are fresh news.
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(await hub.emulator.allDeliveries().count == 1)
            // An approval under a clock hours ahead does not expire the held push for good.
            let queue = try await newspush(["review", "list", "--config", config, "--format", "json"])
            let id = try #require((try first.json(queue)["held"] as? [[String: Any]])?.first?["id"] as? String)
            let approve = try await skewed("+5h", ["review", "approve", id, "--config", config])
            #expect(approve.status == 1 && approve.stderr.contains("clock"), "\(approve.stderr)")
            let approved = try await newspush(
                ["review", "approve", id, "--config", config], environment: hubEnvironment)
            #expect(approved.status == 0, "\(approved.stderr)")
            #expect(await hub.emulator.allDeliveries().count == 2)
        }
    }
}

/// The sqlite3 shell, which makes ledgers no newspush would write (scripts/setup.sh installs it).
let sqlite3 = "/usr/bin/sqlite3"
