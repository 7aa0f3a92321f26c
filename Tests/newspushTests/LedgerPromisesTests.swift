import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A feed whose items can change between runs; it answers 304 to the ETag of its current items.
actor FeedDesk {
    var items: [(guid: String, title: String, published: Date)]
    var version = 1
    private(set) var fullResponses = 0

    init(_ items: [(guid: String, title: String, minutesAgo: Double)]) { self.items = Self.dated(items) }

    /// Items with fixed publication dates (for runs on a test clock).
    init(dated items: [(guid: String, title: String, published: Date)]) { self.items = items }

    func set(_ items: [(guid: String, title: String, minutesAgo: Double)]) {
        self.items = Self.dated(items)
        version += 1
    }

    private static func dated(_ items: [(guid: String, title: String, minutesAgo: Double)])
        -> [(guid: String, title: String, published: Date)]
    {
        items.map { ($0.guid, $0.title, Date().addingTimeInterval(-$0.minutesAgo * 60)) }
    }

    func answer(_ request: RecordedRequest) -> CannedResponse {
        let etag = "\"v\(version)\""
        if request.header("If-None-Match") == etag { return CannedResponse(status: 304, headers: [("ETag", etag)]) }
        fullResponses += 1
        return CannedResponse(headers: [("ETag", etag)], text: rssFeed(title: "Desk", dated: items))
    }

    static func serve(_ desks: [String: FeedDesk]) async throws -> LocalHTTPServer {
        try await LocalHTTPServer.start { request in
            let path = String(request.uri.split(separator: "?").first ?? "")
            guard let desk = desks[path] else { return CannedResponse(status: 404, text: "no such feed") }
            return await desk.answer(request)
        }
    }
}

/// SPEC §6 through the built binary against the emulator: each numbered problem of the ledger
/// issue, and the outbox surviving kills and hub outages.
@Suite("Ledger promises: never lose a story, never flood")
struct LedgerPromisesTests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World, Politics, Sports],
                template: '{"aps":{"alert":"$(messageParam)"},"story":"$(id)"}'}
        """

    /// A connection string for the same namespace with another key: the hub answers 401.
    static let wrongKeyConnection = testConnectionString.replacingOccurrences(of: "AAECAwQF", with: "ZZECAwQF")

    func config(
        _ folder: TemporaryFolder, endpoint: String, feeds: [(url: String, category: String)],
        firstRun: String = "send", extra: String = "", state: String
    ) throws -> String {
        let list = feeds.map { "  - {url: \"\($0.url)\", category: \($0.category)}" }.joined(separator: "\n")
        return try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(endpoint)", retries: 1, retry_delay: 10ms}
            policy: {first_run: \(firstRun), budget: {per_category: 50, per: 1h}}
            \(state)
            \(extra)
            feeds:
            \(list.isEmpty ? "  []" : list)
            """.replacingOccurrences(of: "feeds:\n  []", with: "feeds: []"))
    }

    func json(_ result: CommandResult) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "not JSON: \(result.stdout) \(result.stderr)")
    }

    func decisions(_ report: [String: Any]) -> [String: String] {
        var result: [String: String] = [:]
        for item in report["items"] as? [[String: Any]] ?? [] {
            if let key = item["key"] as? String, let decision = item["decision"] as? String { result[key] = decision }
        }
        return result
    }

    func summary(_ report: [String: Any]) -> [String: Any] { report["summary"] as? [String: Any] ?? [:] }

    // A pending push is retried although its feed answers 304.
    @Test(arguments: LedgerBackend.allCases) func aPendingPushIsSentWhileItsFeedAnswers304(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("p1", "Harbour barrier closes as storm nears the coast", 5)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try config(
                folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/world.xml", "World")], state: state)
            await hub.emulator.inject(Fault(status: 503, count: 100))
            let first = try await newspush(
                ["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(first.status == 1, "sending had to stop: \(first.stderr)")
            let report = try json(first)
            #expect(summary(report)["pushes_pending"] as? Int == 1)
            #expect(summary(report)["pending_until"] is String)
            #expect(decisions(report).values.allSatisfy { $0 == "pending" })
            await hub.emulator.clearFaults()
            let second = try await newspush(
                ["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(second.status == 0, "\(second.stderr)")
            let again = try json(second)
            #expect((again["feeds"] as? [[String: Any]])?.first?["status"] as? String == "not-modified")
            #expect(summary(again)["pushes_sent"] as? Int == 1)
            #expect(await hub.emulator.allDeliveries().count == 1)
            #expect(await desk.fullResponses == 1)
        }
    }

    // A wrong key stops sending with exit 1 and every story waits; fixed, all are sent.
    @Test(arguments: LedgerBackend.allCases) func aWrongKeyKeepsEveryStoryPendingUntilItIsFixed(
        _ backend: LedgerBackend
    ) async throws {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([
                ("k1", "Talks resume in the capital after a week", 3),
                ("k2", "Flood warnings issued along the river", 6),
                ("k3", "Election date set for the spring", 9),
            ])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try config(
                folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/world.xml", "World")], state: state)
            let wrong = try await newspush(
                ["run", "--config", config, "--format", "json"],
                environment: ["NEWSPUSH_HUB_CONNECTION_STRING": Self.wrongKeyConnection])
            #expect(wrong.status == 1)
            let report = try json(wrong)
            let stopped = try #require(report["sending_stopped"] as? String)
            #expect(stopped.contains("401") && stopped.contains("SharedAccessKey"), "says what to fix: \(stopped)")
            #expect(summary(report)["pushes_pending"] as? Int == 3)
            #expect(summary(report)["pushes_failed"] as? Int == 0)
            #expect(report["sending_stopped"] is String)
            #expect(await hub.emulator.allDeliveries().isEmpty)
            let fixed = try await newspush(
                ["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(fixed.status == 0, "\(fixed.stderr)")
            #expect(summary(try json(fixed))["pushes_sent"] as? Int == 3)
            #expect(await hub.emulator.allDeliveries().count == 3)
        }
    }

    // A publish to a hub that is down waits in the outbox; the feed's copy is not news again.
    @Test(arguments: LedgerBackend.allCases) func aPublishToAHubThatIsDownIsSentLaterAndOnlyOnce(
        _ backend: LedgerBackend
    ) async throws {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("scoop", "Scoop of the day", 1)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            var config = try config(folder, endpoint: "http://127.0.0.1:1/", feeds: [], state: state)
            let publish = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Scoop of the day",
                    "--url", "https://news.example.org/scoop", "--yes",
                ], environment: hubEnvironment)
            #expect(publish.status == 1)
            #expect(publish.stderr.contains("waits in the outbox"), "\(publish.stderr)")
            // The hub is back, and the feed now carries the same article (another id, same link).
            config = try self.config(
                folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/world.xml", "World")], state: state)
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            let report = try json(run)
            #expect(decisions(report)["link:news.example.org/scoop"] == "pushed")
            #expect(decisions(report)["guid:127.0.0.1/scoop"] == "seen", "the feed's copy is the published story")
            let deliveries = await hub.emulator.allDeliveries()
            #expect(deliveries.count == 1)
            #expect(
                deliveries.first?.payload.contains("link:news.example.org/scoop") == true,
                "the publish's push, not the feed's")
            let again = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(again.status == 0)
            #expect(await hub.emulator.allDeliveries().count == 1)
        }
    }

    // A feed added after the first run records a baseline instead of flooding.
    @Test(arguments: LedgerBackend.allCases) func aFeedAddedLaterRecordsABaseline(_ backend: LedgerBackend) async throws
    {
        let state = try await backend.stateLine()
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let world = FeedDesk([("w1", "First world story of the morning", 5)])
        let sport = FeedDesk([
            ("s1", "Cup final goes to extra time", 4), ("s2", "Record transfer agreed overnight", 8),
            ("s3", "Marathon course changed for the heat", 12),
        ])
        let feeds = try await FeedDesk.serve(["/world.xml": world, "/sport.xml": sport])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        var config = try config(
            folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/world.xml", "World")], firstRun: "baseline",
            state: state)
        #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
        config = try self.config(
            folder, endpoint: hub.endpoint,
            feeds: [("\(feeds.baseURL)/world.xml", "World"), ("\(feeds.baseURL)/sport.xml", "Sports")],
            firstRun: "baseline", state: state)
        let added = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(added.status == 0)
        #expect(
            added.stdout.contains(
                "baseline: Desk read for the first time: 3 items recorded as already known, none pushed"),
            "\(added.stdout)")

        #expect(await hub.emulator.allDeliveries().isEmpty)
        // From then on the feed's new stories are news.
        await sport.set([
            ("s4", "Late winner sends the champions through", 1), ("s1", "Cup final goes to extra time", 4),
        ])
        let next = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(decisions(try json(next))["guid:127.0.0.1/s4"] == "pushed")
        #expect(await hub.emulator.allDeliveries().count == 1)
    }

    // `state forget` works although the feed would answer 304.
    @Test(arguments: LedgerBackend.allCases) func forgetMakesTheNextRunReadTheFeedInFull(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("f1", "Ceasefire announced after overnight talks", 5)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try config(
                folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/world.xml", "World")], state: state)
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            #expect(await hub.emulator.allDeliveries().count == 1)
            let forget = try await newspush(
                ["state", "forget", "guid:127.0.0.1/f1", "--config", config], environment: hubEnvironment)
            #expect(forget.status == 0, "\(forget.stderr)")
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(decisions(try json(run))["guid:127.0.0.1/f1"] == "pushed")
            #expect(await desk.fullResponses == 2)
            #expect(await hub.emulator.allDeliveries().count == 2)
        }
    }

    // A feed answering 304 keeps alive only the stories of its last full response.
    @Test(arguments: LedgerBackend.allCases) func storiesGoneFromA304FeedArePruned(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([
                ("old", "Story that leaves the feed soon", 5), ("stays", "Story that stays in the feed", 4),
            ])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try config(
                folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/world.xml", "World")],
                extra: "state_retention: 2s", state: state)
            // On the session clock: the third run is 10 s later, past the retention of 2 s.
            let t0 = wholeSecondsNow()
            func at(_ seconds: Double) -> [String: String] {
                hubEnvironment.merging(testClock(t0.addingTimeInterval(seconds)), uniquingKeysWith: { $1 })
            }
            #expect(try await newspush(["run", "--config", config], environment: at(0)).status == 0)
            await desk.set([("stays", "Story that stays in the feed", 4)])
            #expect(try await newspush(["run", "--config", config], environment: at(1)).status == 0)
            // Every run from now on gets 304.
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: at(10))
            #expect((try json(run)["feeds"] as? [[String: Any]])?.first?["status"] as? String == "not-modified")
            let show = try await newspush(
                ["state", "show", "--config", config, "--format", "json"], environment: hubEnvironment)
            let items =
                try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])["items"]
                as? [String: Any]
            #expect(items?.keys.sorted() == ["guid:127.0.0.1/stays"])
            let prune = try await newspush(["state", "prune", "--config", config], environment: at(11))
            #expect(prune.stdout.contains("0 stories; 1 kept, 1 tombstones"), "\(prune.stdout)")
        }
    }

    // Publish and run share one sender and its outcome rules: throttled → pending (sent by
    //    the next run), refused for itself → failed (never re-sent).
    @Test(arguments: LedgerBackend.allCases) func publishFollowsTheRunsOutcomeRules(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            // (A run needs a feed: with none it is a configuration error, exit 78.)
            let feeds = try await LocalHTTPServer.serving([
                "/quiet.xml": CannedResponse(text: rssFeed(title: "Quiet", items: []))
            ])
            defer { feeds.stop() }
            let config = try config(
                folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/quiet.xml", "World")], state: state)
            await hub.emulator.inject(Fault(status: 503, count: 100))
            let throttled = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Polls have closed",
                    "--yes",
                ], environment: hubEnvironment)
            #expect(throttled.status == 1)
            #expect(throttled.stderr.contains("waits in the outbox"))
            await hub.emulator.clearFaults()
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(summary(try json(run))["pushes_sent"] as? Int == 1)
            #expect(await hub.emulator.allDeliveries().count == 1)

            await hub.emulator.inject(Fault(status: 400, count: 1))
            let refused = try await newspush(
                [
                    "publish", "--config", config, "--category", "Politics", "--title", "Budget vote delayed",
                    "--yes",
                ], environment: hubEnvironment)
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("not sent") && refused.stderr.contains("400"))
            let after = try await newspush(
                ["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(summary(try json(after))["pushes_sent"] as? Int == 0)
            let show = try await newspush(["state", "show", "--config", config], environment: hubEnvironment)
            #expect(show.stdout.contains("failed    Politics"), "\(show.stdout)")
            #expect(show.stdout.contains("reason: hub rejected the request as malformed (400)"))
        }
    }

    // An outbox entry survives kill -9 and the next run sends it once.
    @Test(arguments: LedgerBackend.allCases) func anOutboxEntrySurvivesKill9AndIsSentOnce(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let desk = FeedDesk([("k9", "Bridge reopens after repairs", 2)])
        // The slow feed says when it is asked (on its server's own thread), and answers after 60 s.
        let asked = DispatchSemaphore(value: 0)
        let slow = try await LocalHTTPServer.start { _ in
            asked.signal()
            return CannedResponse(status: 200, body: Data("<rss/>".utf8), delay: 60)
        }
        defer { slow.stop() }
        let feeds = try await FeedDesk.serve(["/world.xml": desk])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        var config = try config(
            folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/world.xml", "World")], state: state)
        await hub.emulator.inject(Fault(status: 503, count: 100))
        #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 1)
        await hub.emulator.clearFaults()
        // The next run hangs on a slow feed and is killed before it sends anything.
        config = try self.config(
            folder, endpoint: hub.endpoint,
            feeds: [("\(feeds.baseURL)/world.xml", "World"), ("\(slow.baseURL)/slow.xml", "Sports")], state: state)
        let process = try startNewspush(["run", "--config", config])
        // Killed from a thread of its own as soon as the run waits for the slow feed: a test task
        // sleeping a second first could wake after the run had sent, on a busy machine.
        let waited = await offThePool { () -> Bool in
            let inFetch = asked.wait(timeout: .now() + 120) == .success
            process.signal(SIGKILL)
            _ = process.waitForExit()
            return inFetch
        }
        #expect(waited, "the run never asked for the slow feed")
        #expect(await hub.emulator.allDeliveries().isEmpty)
        config = try self.config(
            folder, endpoint: hub.endpoint, feeds: [("\(feeds.baseURL)/world.xml", "World")], state: state)
        let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(await hub.emulator.allDeliveries().count == 1)
        #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
        #expect(await hub.emulator.allDeliveries().count == 1)
    }

    // The hub is down for two runs, then back: every fresh story is sent once, stale ones expire.
    @Test(arguments: LedgerBackend.allCases) func aHubDownForTwoRunsThenBackSendsFreshStoriesOnceAndExpiresStaleOnes(
        _ backend: LedgerBackend
    ) async throws {
        let state = try await backend.stateLine()
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        // max_age 40 s, on the session clock (independent of how long the machine takes): at
        // t0 "aging" is 30 s old and "fresh" 1 s; the hub is back at t0 + 20 s, when "aging" is
        // stale (50 s) and "fresh" is not (21 s).
        let t0 = wholeSecondsNow()
        let desk = FeedDesk(dated: [
            ("aging", "Story published a while ago already", t0.addingTimeInterval(-30)),
            ("fresh", "Story published a second ago", t0.addingTimeInterval(-1)),
        ])
        let feeds = try await FeedDesk.serve(["/world.xml": desk])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let down = try config(
            folder, endpoint: "http://127.0.0.1:1/", feeds: [("\(feeds.baseURL)/world.xml", "World")], state: state)
        try String(contentsOfFile: down, encoding: .utf8).replacingOccurrences(
            of: "policy: {", with: "policy: {max_age: 40s, "
        )
        .write(toFile: down, atomically: true, encoding: .utf8)
        for minute in 0..<2 {
            let run = try await newspush(
                ["run", "--config", down, "--format", "json"],
                environment: hubEnvironment.merging(
                    testClock(t0.addingTimeInterval(Double(minute))), uniquingKeysWith: { $1 }))
            #expect(run.status == 1)
            #expect(summary(try json(run))["pushes_pending"] as? Int == 2)
            let stopped = try json(run)["sending_stopped"] as? String ?? ""
            #expect(stopped.contains("connection refused") && stopped.contains("could not reach the hub"), "\(stopped)")
        }
        let up = try String(contentsOfFile: down, encoding: .utf8).replacingOccurrences(
            of: "http://127.0.0.1:1/", with: hub.endpoint)
        try up.write(toFile: down, atomically: true, encoding: .utf8)
        let later = hubEnvironment.merging(testClock(t0.addingTimeInterval(20)), uniquingKeysWith: { $1 })
        let back = try await newspush(["run", "--config", down, "--format", "json"], environment: later)
        #expect(back.status == 0, "\(back.stderr)")
        let report = try json(back)
        #expect(decisions(report)["guid:127.0.0.1/fresh"] == "pushed")
        #expect(decisions(report)["guid:127.0.0.1/aging"] == "expired")
        #expect(summary(report)["pushes_pending"] as? Int == 0)
        let deliveries = await hub.emulator.allDeliveries()
        #expect(deliveries.count == 1)
        #expect(deliveries.first?.payload.contains("guid:127.0.0.1/fresh") == true)
        #expect(try await newspush(["run", "--config", down], environment: later).status == 0)
        #expect(await hub.emulator.allDeliveries().count == 1)
    }
}
