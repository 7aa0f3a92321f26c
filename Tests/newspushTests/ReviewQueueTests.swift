import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The review queue through the built binary against the emulator: rules hold the
/// right pushes, editors approve (edited), reject, or let them expire, exactly one push however
/// many approve, and every decision is on the record with its editor.
@Suite("Review queue")
struct ReviewQueueTests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: reader, platform: apple, tags: [World, Politics], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: editor, platform: apple, tags: [newsroom-editors], template: '{"aps":{"alert":"$(messageParam)"}}'}
        """

    static let rules = """
        review:
          rules:
            - {feed: Trusted Politics, mode: auto}
            - {category: Politics, mode: review}
            - {title: "(?i)\\\\b(dead|killed|toll)\\\\b", mode: review}
            - {feed: Wire, mode: review}
          notify: {tags: "newsroom-editors"}
        """

    /// A newsroom of `feeds` (path → (name, category, desk)) with the review rules.
    func newsroom(
        _ folder: TemporaryFolder, hub: LocalHub, server: LocalHTTPServer,
        feeds: [(path: String, name: String, category: String)], extra: String = "", state: String
    ) throws -> String {
        let list = feeds.map {
            "  - {url: \"\(server.baseURL)\($0.path)\", name: \($0.name), category: \($0.category)}"
        }
        return try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", retries: 1, retry_delay: 10ms}
            policy: {first_run: send, budget: {per_category: 50, per: 1h}}
            \(Self.rules)
            \(state)
            \(extra)
            feeds:
            \(list.joined(separator: "\n"))
            """)
    }

    func json(_ result: CommandResult) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "not JSON: \(result.stdout) \(result.stderr)")
    }

    func decisions(_ result: CommandResult) throws -> [String: String] {
        let items = try #require(try json(result)["items"] as? [[String: Any]])
        return Dictionary(
            items.map { (($0["title"] as? String) ?? "", ($0["decision"] as? String) ?? "") },
            uniquingKeysWith: { first, _ in first })
    }

    func held(_ config: String) async throws -> [[String: Any]] {
        let list = try await newspush(["review", "list", "--config", config, "--format", "json"])
        #expect(list.status == 0, "\(list.stderr)")
        return try #require(try json(list)["held"] as? [[String: Any]], "\(list.stdout)")
    }

    func readerAlerts(_ hub: LocalHub) async -> [String] {
        await hub.emulator.allDeliveries().filter { $0.device == "reader" }.map(\.payload)
    }

    /// Four feeds: every rule kind holds or lets through the right items.
    func fourFeeds(at now: Date = Date()) async throws -> LocalHTTPServer {
        try await FeedDesk.serve([
            "/politics.xml": FeedDesk(dated: [("p1", "Budget vote set for tonight", now.addingTimeInterval(-60))]),
            "/world.xml": FeedDesk(dated: [
                ("w1", "Ten killed as storm hits the coast", now.addingTimeInterval(-60)),
                ("w2", "Ceasefire talks resume in Geneva", now.addingTimeInterval(-120)),
            ]),
            "/wire.xml": FeedDesk(dated: [("x1", "Envoys arrive for summit", now.addingTimeInterval(-60))]),
            "/trusted.xml": FeedDesk(dated: [("t1", "Senate confirms new minister", now.addingTimeInterval(-60))]),
        ])
    }

    static let fourFeedList: [(path: String, name: String, category: String)] = [
        ("/politics.xml", "Politics Desk", "Politics"), ("/world.xml", "World Desk", "World"),
        ("/wire.xml", "Wire", "World"), ("/trusted.xml", "Trusted Politics", "Politics"),
    ]

    @Test(arguments: LedgerBackend.allCases) func eachRuleKindHoldsOrLetsThroughTheRightItems(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let server = try await fourFeeds()
            defer { server.stop() }
            let config = try newsroom(folder, hub: hub, server: server, feeds: Self.fourFeedList, state: state)
            let expected = [
                "Budget vote set for tonight": "held", "Ten killed as storm hits the coast": "held",
                "Envoys arrive for summit": "held", "Ceasefire talks resume in Geneva": "pushed",
                "Senate confirms new minister": "pushed",
            ]
            let preview = try await newspush(
                ["preview", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(
                try decisions(preview)
                    == expected.mapValues { $0 == "held" ? "would-hold" : "would-push" }, "\(preview.stdout)")
            #expect(try await held(config).isEmpty, "a preview holds nothing")
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(try decisions(run) == expected)
            let summary = try #require(try json(run)["summary"] as? [String: Any])
            #expect(summary["review_waiting"] as? Int == 3 && summary["review_held"] as? Int == 3, "\(summary)")
            let alerts = await readerAlerts(hub)
            #expect(alerts.count == 2 && alerts.allSatisfy { $0.contains("Ceasefire") || $0.contains("Senate") })
            #expect(try await held(config).count == 3)
            // The editors' device is told once, and no reader's device.
            let notices = await hub.emulator.allDeliveries().filter { $0.device == "editor" }.map(\.payload)
            #expect(notices.count == 1 && notices[0].contains("3 alerts wait for review"), "\(notices)")
            // A cron run with nothing new says nothing; the next with a held item one line.
            let quiet = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(quiet.status == 0 && quiet.stdout.isEmpty, "\(quiet.stdout)")
        }
    }

    @Test(arguments: LedgerBackend.allCases) func anApprovalSendsExactlyOneEditedPushAndEveryDecisionIsOnRecord(
        _ backend: LedgerBackend
    ) async throws {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let server = try await fourFeeds()
            defer { server.stop() }
            let config = try newsroom(folder, hub: hub, server: server, feeds: Self.fourFeedList, state: state)
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            let waiting = try await held(config)
            func id(_ title: String) throws -> String {
                try #require(
                    waiting.first { ($0["properties"] as? [String: String])?["title"] == title }?["id"] as? String,
                    "\(title)")
            }
            let storm = try id("Ten killed as storm hits the coast")
            let before = await readerAlerts(hub).count
            let approve = try await newspush(
                [
                    "review", "approve", storm, "--config", config, "--title", "Storm hits coast: ten dead", "--editor",
                    "alice",
                ],
                environment: hubEnvironment)
            #expect(approve.status == 0, "\(approve.stderr)")
            let alerts = await readerAlerts(hub)
            #expect(
                alerts.count == before + 1 && alerts.last?.contains("Storm hits coast: ten dead") == true, "\(alerts)")
            let again = try await newspush(
                ["review", "approve", storm, "--config", config, "--editor", "bob"], environment: hubEnvironment)
            #expect(again.status == 1 && again.stderr.contains("already approved by alice"), "\(again.stderr)")
            // Rejected: never sent, not by approving it later nor by a run.
            let budget = try id("Budget vote set for tonight")
            let reject = try await newspush(
                ["review", "reject", budget, "--config", config, "--reason", "not confirmed", "--editor", "carol"],
                environment: [:])
            #expect(reject.status == 0, "\(reject.stderr)")
            #expect(
                try await newspush(["review", "approve", budget, "--config", config], environment: hubEnvironment)
                    .status
                    == 1)
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            let outbox = try #require(
                try json(try await newspush(["state", "export", "--config", config]))["outbox"] as? [[String: Any]])
            #expect(outbox.first { $0["id"] as? String == budget }?["status"] as? String == "rejected")
            #expect(await readerAlerts(hub).count == before + 1)
            // Publishing by hand and cancelling a scheduled send are decisions on the record too.
            let published = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Harbour reopens after repairs",
                    "--at",
                    "+1h", "--yes", "--format", "json",
                ], environment: hubEnvironment.merging(["LOGNAME": "dave"]) { $1 })
            let scheduled = try #require(try json(published)["notification_id"] as? String, "\(published.stderr)")
            let cancel = try await newspush(
                ["hub", "cancel", "--config", config, scheduled],
                environment: hubEnvironment.merging(["LOGNAME": "erin"]) { $1 })
            #expect(cancel.status == 0, "\(cancel.stderr)")
            // The history: every decision with its editor.
            let history = try await newspush([
                "review", "history", "--config", config, "--since", "1h", "--format", "json",
            ])
            let records = try #require(try json(history)["history"] as? [[String: Any]])
            let decided = records.map { "\($0["action"] as? String ?? "") \($0["editor"] as? String ?? "")" }
            for line in [
                "held newspush", "approved alice", "edited alice", "rejected carol", "published dave", "cancelled erin",
            ] {
                #expect(decided.contains(line), "\(line) in \(decided)")
            }
            let export = try await newspush(["state", "export", "--config", config])
            #expect(try (json(export)["audit"] as? [[String: Any]])?.count == records.count)
        }
    }

    @Test(arguments: LedgerBackend.allCases) func aHeldPushThatGoesStaleExpiresAndIsNeverSent(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let t0 = wholeSecondsNow()
            let server = try await fourFeeds(at: t0)
            defer { server.stop() }
            let config = try newsroom(folder, hub: hub, server: server, feeds: Self.fourFeedList, state: state)
            let first = try await newspush(
                ["run", "--config", config], environment: hubEnvironment.merging(testClock(t0)) { $1 })
            #expect(first.status == 0, "\(first.stderr)")
            let storm = try #require(try await held(config).first?["id"] as? String)
            let before = await readerAlerts(hub).count
            // Four hours on (max_age 3 h): the run expires every held push.
            let later = hubEnvironment.merging(testClock(t0.addingTimeInterval(4 * 3600))) { $1 }
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: later)
            #expect(run.status == 2 || run.status == 0, "\(run.stderr)")
            #expect(try await held(config).isEmpty)
            let approve = try await newspush(["review", "approve", storm, "--config", config], environment: later)
            #expect(approve.status == 1 && approve.stderr.contains("expired"), "\(approve.stderr)")
            #expect(await readerAlerts(hub).count == before)
            let history = try await newspush(["review", "history", "--config", config])
            #expect(history.stdout.components(separatedBy: "expired").count - 1 == 3, "\(history.stdout)")
        }
    }

    @Test(arguments: LedgerBackend.allCases) func theSameStoryFromASecondFeedJoinsTheHeldPush(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let now = Date()
        let wire = FeedDesk(dated: [
            ("x1", "Envoys from twelve nations arrive in Vienna for the summit", now.addingTimeInterval(-60))
        ])
        let other = FeedDesk(dated: [])
        let server = try await FeedDesk.serve(["/wire.xml": wire, "/other.xml": other])
        defer { server.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try newsroom(
            folder, hub: hub, server: server,
            feeds: [("/wire.xml", "Wire", "World"), ("/other.xml", "Other", "World")], state: state)
        #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
        // The other feed lists the same article (same link), and a near-identical headline.
        await other.replace([
            ("x1", "Envoys from twelve nations arrive in Vienna for the summit", now),
            ("x2", "Envoys from twelve nations arrive in Vienna for summit", now),
        ])
        let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
        let items = try #require(try json(run)["items"] as? [[String: Any]])
        let fromOther = items.filter { $0["feed"] as? String == "Other" }.compactMap { $0["decision"] as? String }
        #expect(fromOther.sorted() == ["held", "same-story"], "\(items)")
        #expect(try await held(config).count == 1, "one held push for the story")
        #expect(await readerAlerts(hub).isEmpty)
    }

    @Test(arguments: LedgerBackend.allCases) func aCronRunThatOnlyHeldSomethingSaysSoInOneLine(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let server = try await FeedDesk.serve([
                "/politics.xml": FeedDesk([("p1", "Budget vote set for tonight", 1)])
            ])
            defer { server.stop() }
            let config = try newsroom(
                folder, hub: hub, server: server, feeds: [("/politics.xml", "Desk", "Politics")], state: state)
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("1 push waits for an editor"), "\(run.stdout)")
            let metrics = folder.file("metrics.prom")
            _ = try await newspush(["run", "--config", config, "--metrics-file", metrics], environment: hubEnvironment)
            #expect(try String(contentsOfFile: metrics, encoding: .utf8).contains("newspush_review_waiting 1"))
        }
    }

    @Test(arguments: LedgerBackend.allCases) func anEditorsNoticeTheHubRefusedIsNeverSentLate(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let server = try await FeedDesk.serve([
                "/politics.xml": FeedDesk([("p1", "Budget vote set for tonight", 1)])
            ])
            defer { server.stop() }
            let config = try newsroom(
                folder, hub: hub, server: server, feeds: [("/politics.xml", "Desk", "Politics")], state: state)
            await hub.emulator.inject(Fault(status: 503, count: 2))
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            let again = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(again.status == 0, "\(again.stderr)")
            let notices = await hub.emulator.allDeliveries().filter { $0.device == "editor" }
            #expect(notices.isEmpty, "a refused notice is not sent by a later run: \(notices.map(\.payload))")
            let check = try await newspush(["state", "check", "--config", config])
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        }
    }

    @Test(arguments: LedgerBackend.allCases) func twoEditorsApprovingAtOnceSendOnePush(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let server = try await fourFeeds()
            defer { server.stop() }
            let config = try newsroom(folder, hub: hub, server: server, feeds: Self.fourFeedList, state: state)
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            let id = try #require(try await held(config).first?["id"] as? String)
            let before = await readerAlerts(hub).count
            async let first = newspush(
                ["review", "approve", id, "--config", config, "--wait", "20s", "--editor", "alice"],
                environment: hubEnvironment)
            async let second = newspush(
                ["review", "approve", id, "--config", config, "--wait", "20s", "--editor", "bob"],
                environment: hubEnvironment)
            let statuses = try await [first.status, second.status].sorted()
            #expect(statuses == [0, 1], "\(statuses)")
            #expect(await readerAlerts(hub).count == before + 1)
        }
    }

    @Test(arguments: LedgerBackend.allCases) func killingAnApprovalMidSendNeverSendsTwice(_ backend: LedgerBackend)
        async throws
    {
        let state = try await backend.stateLine()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let server = try await fourFeeds()
            defer { server.stop() }
            let config = try newsroom(folder, hub: hub, server: server, feeds: Self.fourFeedList, state: state)
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            let id = try #require(try await held(config).first?["id"] as? String)
            let before = await readerAlerts(hub).count
            await hub.emulator.inject(Fault(delaySeconds: 600))  // held until the hub's clock moves on
            let process = try startNewspush(["review", "approve", id, "--config", config])
            await hub.emulator.untilSomethingWaits()
            process.signal(SIGKILL)
            _ = await process.exitStatus()
            await hub.emulator.clearFaults()
            let again = try await newspush(["review", "approve", id, "--config", config], environment: hubEnvironment)
            #expect(again.status == 1, "\(again.stderr)")
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect((try json(run)["interrupted_sends"] as? [Any])?.count == 1, "\(run.stdout)")
            await hub.emulator.advanceClock(by: 600)  // the held request: the hub delivers it now
            await hub.emulator.settle()
            #expect(await readerAlerts(hub).count <= before + 1, "never twice")
        }
    }
}

extension FeedDesk {
    /// Replaces the items (a new version, so the feed answers in full).
    func replace(_ items: [(guid: String, title: String, published: Date)]) {
        self.items = items
        version += 1
    }
}
