import Foundation
import HubEmulator
import NewsPushTesting
import Testing

@testable import NewsPushLedger

#if canImport(Glibc)
    import Glibc
#endif

/// A careful, hostile operator's first day: each case through the built binary against
/// the emulator and feed servers on 127.0.0.1, numbered as the issue numbers them.
@Suite("A hostile operator's first day")
struct HostileOperatorTests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone-world, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: phone-science, platform: apple, tags: [Science],
             template: '{"aps":{"alert":"$(messageParam)"},"title":"$(title)","url":"$(url)","source":"$(source)"}'}
          - {id: phone-fr, platform: apple, tags: [Sports], template: '{"aps":{"alert":"$(messageParam_fr)"}}'}
          - {id: phone-de, platform: apple, tags: [Sports], template: '{"aps":{"alert":"$(messageParam_de)"}}'}
        """

    func config(_ folder: TemporaryFolder, hub: String, extra: String = "", feeds: [String] = []) throws -> String {
        let list = feeds.isEmpty ? "feeds: []" : "feeds:\n" + feeds.map { "  - \($0)" }.joined(separator: "\n")
        return try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "\(hub)",
                retries: 1, retry_delay: 10ms, timeout: 5m}
            policy: {first_run: send, budget: {per_category: 50, per: 1h}}
            \(extra)
            \(list)
            """)
    }

    func json(_ result: CommandResult) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "not JSON: \(result.stdout) \(result.stderr)")
    }

    func outbox(_ config: String) async throws -> [[String: Any]] {
        let export = try await newspush(["state", "export", "--config", config])
        #expect(export.status == 0, "\(export.stderr)")
        return try #require(try json(export)["outbox"] as? [[String: Any]], "\(export.stdout)")
    }

    func payload(_ hub: LocalHub, device: String) async throws -> [String: Any] {
        let delivery = try #require(await hub.emulator.allDeliveries().last { $0.device == device }, "no delivery")
        return try #require(try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any])
    }

    func alert(_ payload: [String: Any]) -> String? { (payload["aps"] as? [String: Any])?["alert"] as? String }

    // A test send never reaches readers: not scheduled, and on the record as a test.
    @Test func aTestSendIsNeverScheduledAndAlwaysRecordedAsATest() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub.endpoint)
            let scheduled = try await newspush(
                [
                    "publish", "--config", config, "--category", "Science", "--title", "X", "--at", "+20s", "--test",
                    "--yes",
                ],
                environment: hubEnvironment)
            #expect(scheduled.status == 64, "\(scheduled.stdout) \(scheduled.stderr)")
            #expect(scheduled.stderr.contains("--test") && scheduled.stderr.contains("--at"), "\(scheduled.stderr)")
            #expect(!scheduled.stdout.contains("test push"), "nothing planned: \(scheduled.stdout)")
            // Every test path is on the record as a test, never as the story's push.
            for arguments in [
                ["publish", "--category", "Science", "--title", "Lab test one", "--test", "--yes"],
                ["hub", "test-send", "--category", "Science", "--title", "Lab test two"],
            ] {
                let sent = try await newspush(arguments + ["--config", config], environment: hubEnvironment)
                #expect(sent.status == 0, "\(arguments): \(sent.stderr)")
            }
            // (New case) a correction tried with --test is a test too, not the story's correction.
            let key = "link:news.example.org/lab"
            let story = try await newspush(
                [
                    "publish", "--config", config, "--category", "Science", "--title", "Lab opens",
                    "--url", "https://news.example.org/lab", "--yes",
                ], environment: hubEnvironment)
            #expect(story.status == 0, "\(story.stderr)")
            let tried = try await newspush(
                ["publish", "--config", config, "--replace", key, "--title", "Lab opens late", "--test", "--yes"],
                environment: hubEnvironment)
            #expect(tried.status == 0, "\(tried.stderr)")
            let kinds = try await outbox(config).compactMap { $0["kind"] as? String }
            #expect(kinds.sorted() == ["push", "test", "test", "test"], "\(kinds)")
            let correction = try await newspush(
                ["publish", "--config", config, "--replace", key, "--title", "Lab opens late", "--yes"],
                environment: hubEnvironment)
            #expect(correction.status == 0, "the real correction is not refused as already sent: \(correction.stderr)")
            // A test counts in no budget and is never the story's push: the real one goes out.
            let real = try await newspush(
                ["publish", "--config", config, "--category", "Science", "--title", "Lab test one", "--yes"],
                environment: hubEnvironment)
            #expect(real.status == 0, "\(real.stderr)")
        }
    }

    // Every language any category declares is sent with every push.
    @Test func everyDeclaredLanguageGetsAMessageInEveryCategory() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(
                folder, hub: hub.endpoint,
                extra: """
                    categories:
                      World: {messages: {fr: "Monde : {title}"}}
                      Politics: {messages: {de: "Politik: {title}"}}
                    """, feeds: ["{url: \"http://127.0.0.1:1/w.xml\", category: World}"])
            let publish = try await newspush(
                [
                    "publish", "--config", config, "--category", "Sports", "--title", "Cup final goes to extra time",
                    "--yes",
                ],
                environment: hubEnvironment)
            #expect(publish.status == 0, "\(publish.stderr)")
            for device in ["phone-fr", "phone-de"] {
                let text = alert(try await payload(hub, device: device))
                #expect(text?.contains("Cup final goes to extra time") == true, "\(device): \(text ?? "nil")")
            }
            let check = try await newspush(
                ["check", "--config", config, "--format", "json"], environment: hubEnvironment)
            let details = try #require(try json(check)["warnings"] as? [String], "\(check.stdout)").joined(
                separator: "\n")
            #expect(details.contains("Sports") && details.contains("fr"), "\(details)")
        }
    }

    // Control characters, bidirectional overrides and blank titles never reach a phone.
    @Test func everyTextPropertyIsCleanedAndBlankIsJudgedAfterCleaning() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub.endpoint)
            // (New cases: zero-width spaces, a blank --message.)
            for (option, blank) in [
                ("--title", "\u{01}\u{02}\u{1b}"), ("--title", " \u{202E}\u{2066} "), ("--title", "\u{7}\n\t"),
                ("--title", "\u{200B}\u{200B}"), ("--message", "\u{7}\u{1b}"),
            ] {
                let result = try await newspush(
                    ["publish", "--config", config, "--category", "World", option, blank, "--yes"],
                    environment: hubEnvironment)
                #expect(result.status == 64, "\(blank.unicodeScalars.map(\.value)): \(result.stdout) \(result.stderr)")
            }
            #expect(await hub.emulator.allDeliveries().isEmpty)
            let dirty = "Chip\u{1b}[2J\u{07} shortage\nends \u{202E}now"
            let sent = try await newspush(
                [
                    "publish", "--config", config, "--category", "Science", "--title", dirty,
                    "--url", "https://news.example.org/chips", "--yes",
                ], environment: hubEnvironment)
            #expect(sent.status == 0, "\(sent.stderr)")
            let payload = try await payload(hub, device: "phone-science")
            for (name, value) in payload where name != "aps" {
                let text = try #require(value as? String)
                #expect(
                    !text.unicodeScalars.contains {
                        $0.properties.generalCategory == .control || (0x202A...0x2069).contains($0.value)
                    },
                    "\(name): \(text.unicodeScalars.map(\.value))")
            }
            #expect(payload["title"] as? String == "Chip[2J shortage ends now", "\(payload)")
        }
    }

    // In the run: an item whose title and summary are blank once cleaned is not pushed.
    @Test func aRunDoesNotPushAnItemWithNothingReadable() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let now = Date()
        let feed = """
            <?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>W</title>
            <item><title>&#x202E;&#x2066; &#x9;</title><link>https://news.example.org/blank</link>
            <guid>blank</guid><pubDate>\(rfc822(now))</pubDate></item>
            <item><title>Readable story here</title><link>https://news.example.org/fine</link>
            <guid>fine</guid><pubDate>\(rfc822(now))</pubDate></item>
            </channel></rss>
            """
        let feeds = try await LocalHTTPServer.serving(["/w.xml": CannedResponse(text: feed)])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(
            folder, hub: hub.endpoint, feeds: ["{url: \"\(feeds.baseURL)/w.xml\", category: World}"])
        let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(run.status == 0, "\(run.stderr)")
        let items = try #require(try json(run)["items"] as? [[String: Any]])
        let blank = try #require(items.first { ($0["link"] as? String)?.hasSuffix("/blank") == true })
        #expect(blank["decision"] as? String == "unclassified", "\(blank)")
        let deliveries = await hub.emulator.allDeliveries().map(\.payload)
        #expect(deliveries.count == 1 && deliveries[0].contains("Readable story here"), "\(deliveries)")
    }

    // A correction keeps the story's link and source; the same text again is refused.
    @Test func aCorrectionKeepsTheLinkAndRefusesTheSameText() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let feeds = try await LocalHTTPServer.serving([
                "/space.xml": CannedResponse(
                    text: rssFeed(title: "Space", items: [("probe", "Probe lands on moon", 1)]))
            ])
            defer { feeds.stop() }
            let config = try config(
                folder, hub: hub.endpoint,
                feeds: ["{url: \"\(feeds.baseURL)/space.xml\", name: Space Desk, category: Science}"])
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            let key = try #require((try json(run)["items"] as? [[String: Any]])?.first?["key"] as? String)
            let original = try await payload(hub, device: "phone-science")
            #expect(original["url"] as? String == "https://news.example.org/probe", "\(original)")
            let correction = try await newspush(
                ["publish", "--config", config, "--replace", key, "--title", "Probe lands on Mars", "--yes"],
                environment: hubEnvironment)
            #expect(correction.status == 0, "\(correction.stderr)")
            let corrected = try await payload(hub, device: "phone-science")
            #expect(corrected["url"] as? String == original["url"] as? String, "\(corrected)")
            #expect(corrected["source"] as? String == "Space Desk", "\(corrected)")
            #expect(alert(corrected)?.contains("Mars") == true)
            let again = try await newspush(
                ["publish", "--config", config, "--replace", key, "--title", "Probe lands on Mars", "--yes"],
                environment: hubEnvironment)
            #expect(again.status == 1, "refused: \(again.stdout) \(again.stderr)")
            #expect(again.stderr.contains("--force"), "\(again.stderr)")
            #expect(await hub.emulator.allDeliveries().filter { $0.device == "phone-science" }.count == 2)
            let forced = try await newspush(
                [
                    "publish", "--config", config, "--replace", key, "--title", "Probe lands on Mars", "--force",
                    "--yes",
                ],
                environment: hubEnvironment)
            #expect(forced.status == 0, "\(forced.stderr)")
        }
    }

    // A prune never lets a story be published twice, and never cuts inside policy.max_age.
    @Test func aPrunedStoryIsNotPublishedAgainAndAShortRetentionIsRefused() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub.endpoint)
            let t0 = wholeSecondsNow()
            let publish = [
                "publish", "--config", config, "--category", "World", "--title", "Ceasefire agreed",
                "--url", "https://news.example.org/ceasefire", "--yes",
            ]
            #expect(try await newspush(publish, environment: hubEnvironment.merging(testClock(t0)) { $1 }).status == 0)
            let short = try await newspush(
                ["state", "prune", "--config", config, "--retention", "0s"],
                environment: hubEnvironment.merging(testClock(t0)) { $1 })
            #expect(short.status == 64, "\(short.stdout) \(short.stderr)")
            #expect(short.stderr.contains("max_age"), "\(short.stderr)")
            // Four hours on (max_age is 3 h), a prune at max_age removes it and keeps a tombstone.
            let later = hubEnvironment.merging(testClock(t0.addingTimeInterval(4 * 3600))) { $1 }
            let prune = try await newspush(
                ["state", "prune", "--config", config, "--retention", "3h"], environment: later)
            #expect(prune.status == 0, "\(prune.stderr)")
            let again = try await newspush(publish, environment: later)
            #expect(again.status == 1, "refused as a repeat: \(again.stdout) \(again.stderr)")
            #expect((again.stdout + again.stderr).contains("prune"), "\(again.stdout) \(again.stderr)")
            #expect(await hub.emulator.allDeliveries().filter { $0.device == "phone-world" }.count == 1)
        }
    }

    // A time without a zone is refused, as the message for other forms promises.
    @Test func aScheduleTimeWithoutAZoneIsRefused() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub.endpoint)
            let day = ISO8601DateFormatter.string(
                from: Date().addingTimeInterval(2 * 86400), timeZone: TimeZone(identifier: "UTC") ?? .current,
                formatOptions: [.withFullDate])
            let at = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Embargoed report",
                    "--at", "\(day)T18:00:00", "--yes",
                ], environment: hubEnvironment.merging(["TZ": "America/New_York"]) { $1 })
            #expect(at.status == 64, "\(at.stdout) \(at.stderr)")
            #expect(at.stderr.contains("zone"), "\(at.stderr)")
            // (New case) the same with a space, as people type it.
            let spaced = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Embargoed report",
                    "--at", "\(day) 18:00", "--yes",
                ], environment: hubEnvironment)
            #expect(spaced.status == 64, "\(spaced.stdout) \(spaced.stderr)")
            let zoned = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Embargoed report",
                    "--at", "\(day)T18:00:00-05:00", "--yes",
                ], environment: hubEnvironment)
            #expect(zoned.status == 0, "\(zoned.stderr)")
            #expect((zoned.stdout + zoned.stderr).contains("\(day)T23:00:00Z"), "the UTC time: \(zoned.stdout)")
        }
    }

    /// A ledger with one pushed story, written by a run (so looking has something to show).
    func ledgerWithAStory(_ folder: TemporaryFolder, hub: LocalHub) async throws -> (config: String, stop: () -> Void) {
        let feeds = try await LocalHTTPServer.serving([
            "/w.xml": CannedResponse(text: rssFeed(title: "W", items: [("r1", "Harbour reopens after storm", 1)]))
        ])
        let config = try config(
            folder, hub: hub.endpoint, feeds: ["{url: \"\(feeds.baseURL)/w.xml\", category: World}"])
        let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(run.status == 0, "\(run.stderr)")
        return (config, { feeds.stop() })
    }

    /// The commands an operator uses to look, each expected to work and change nothing.
    static let looking: [[String]] = [
        ["preview"], ["state", "show"], ["state", "check"], ["state", "export"], ["review", "list"],
        ["review", "history"],
    ]

    // Looking needs no write access: a read-only mount (and nothing left behind).
    @Test(.enabled(if: SmallDisk.available, "needs root and a tmpfs mount"))
    func lookingWorksOnAReadOnlyMount() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let disk = folder.file("disk")
            try SmallDisk.mount(disk, kilobytes: 4096)
            defer { SmallDisk.unmount(disk) }
            let feeds = try await LocalHTTPServer.serving([
                "/w.xml": CannedResponse(text: rssFeed(title: "W", items: [("r1", "Harbour reopens after storm", 1)]))
            ])
            defer { feeds.stop() }
            let config = try folder.write(
                "disk/feeds.yaml",
                """
                hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "\(hub.endpoint)"}
                policy: {first_run: send}
                feeds:
                  - {url: "\(feeds.baseURL)/w.xml", category: World}
                """)
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            try #require(SmallDisk.run("/bin/mount", ["-o", "remount,ro", disk]) == 0)
            for command in Self.looking {
                let result = try await newspush(command + ["--config", config], environment: hubEnvironment)
                #expect(result.status == 0, "\(command) on a read-only mount: \(result.stderr)")
            }
            // `check` looks too, and says what a run would meet (exit 78).
            let check = try await newspush(["check", "--config", config], environment: hubEnvironment)
            #expect(check.status == 78 && check.stdout.contains("is not writable by this user"), "\(check.stdout)")
            #expect(check.stdout.contains("ok   ledger:"), "the ledger itself can be read: \(check.stdout)")
            let left = try FileManager.default.contentsOfDirectory(atPath: disk)
            #expect(left.allSatisfy { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }, "\(left)")
        }
    }

    // Looking on a full disk.
    @Test(.enabled(if: SmallDisk.available, "needs root and a tmpfs mount"))
    func lookingWorksOnAFullDisk() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let disk = folder.file("disk")
            try SmallDisk.mount(disk, kilobytes: 4096)
            defer { SmallDisk.unmount(disk) }
            let feeds = try await LocalHTTPServer.serving([
                "/w.xml": CannedResponse(text: rssFeed(title: "W", items: [("r1", "Harbour reopens after storm", 1)]))
            ])
            defer { feeds.stop() }
            let config = try folder.write(
                "disk/feeds.yaml",
                """
                hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "\(hub.endpoint)"}
                policy: {first_run: send}
                feeds:
                  - {url: "\(feeds.baseURL)/w.xml", category: World}
                """)
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            try SmallDisk.fill(disk, leaving: 0)
            for command in [["preview"], ["state", "show"], ["state", "check"]] {
                let result = try await newspush(command + ["--config", config], environment: hubEnvironment)
                #expect(result.status == 0, "\(command) on a full disk: \(result.stderr)")
            }
        }
    }

    /// How to run the binary as a user who cannot write what root made: `setpriv` to nobody
    /// when the tests run as root, else the binary itself (the folder is then made read-only).
    static let asAnotherUser: [String]? = {
        guard getuid() == 0 else { return [] }
        return FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : nil
    }()

    // Looking as a user who cannot write the ledger's folder.
    @Test(.enabled(if: asAnotherUser != nil, "as root, needs setpriv to become another user"))
    func lookingWorksInAFolderTheUserCannotWrite() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let folder = try TemporaryFolder()
        defer {
            chmod(folder.path, 0o755)
            folder.cleanup()
        }
        let (config, stop) = try await ledgerWithAStory(folder, hub: hub)
        defer { stop() }
        chmod(folder.file("newspush-state.db"), 0o444)
        chmod(folder.path, 0o555)
        let prefix = try #require(Self.asAnotherUser)
        for command in Self.looking {
            let arguments = prefix + [try binaryURL().path] + command + ["--config", config]
            let result = try await newspushRaw(arguments[0], Array(arguments.dropFirst()), environment: hubEnvironment)
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
    }

    // Looking leaves no trace: no -wal or -shm file, the ledger's bytes unchanged.
    @Test func lookingLeavesTheLedgerUntouched() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let (config, stop) = try await ledgerWithAStory(folder, hub: hub)
            defer { stop() }
            let path = folder.file("newspush-state.db")
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            for command in Self.looking {
                let result = try await newspush(command + ["--config", config], environment: hubEnvironment)
                #expect(result.status == 0, "\(command): \(result.stderr)")
                let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                #expect(files.allSatisfy { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }, "\(command): \(files)")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        }
    }

    // A damaged ledger is never written to: the run stops (exit 1), sends nothing, and leaves
    //    the file as it found it, even when the damage is in a page the run would not read.
    @Test func aRunStopsOnADamagedLedgerItDoesNotHappenToRead() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let t0 = wholeSecondsNow()
            let desk = FeedDesk(dated: [("d1", "Storm closes harbour", t0.addingTimeInterval(-60))])
            let feeds = try await FeedDesk.serve(["/w.xml": desk])
            defer { feeds.stop() }
            let config = try config(
                folder, hub: hub.endpoint, feeds: ["{url: \"\(feeds.baseURL)/w.xml\", category: World}"])
            let first = try await newspush(
                ["run", "--config", config], environment: hubEnvironment.merging(testClock(t0)) { $1 })
            #expect(first.status == 0, "\(first.stderr)")
            // Garble the index of the outbox's attempts: a run with nothing new never reads it.
            let path = folder.file("newspush-state.db")
            let (page, pageSize): (Int, Int) = try {
                let db = try SQLiteDatabase(path: path, mode: .readWrite)
                let root = try db.query("SELECT rootpage FROM sqlite_master WHERE name = 'outbox_last_attempt'")
                let size = try db.query("PRAGMA page_size")
                return (try #require(root.first?.int(0)), try #require(size.first?.int(0)))
            }()
            let handle = try #require(FileHandle(forUpdatingAtPath: path))
            try handle.seek(toOffset: UInt64((page - 1) * pageSize))
            try handle.write(contentsOf: Data((0..<pageSize).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }))
            try handle.close()
            let damaged = try Data(contentsOf: URL(fileURLWithPath: path))
            let later = hubEnvironment.merging(testClock(t0.addingTimeInterval(120))) { $1 }
            let run = try await newspush(["run", "--config", config], environment: later)
            #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
            #expect(run.stderr.contains("damaged") || run.stderr.contains("corrupt"), "\(run.stderr)")
            #expect(await hub.emulator.allDeliveries().count == 1, "nothing sent from a damaged ledger")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == damaged, "the damaged file is untouched")
        }
    }

    // Smaller: with zero feeds a run is a configuration error, as in check.
    @Test func aRunWithoutFeedsExits78() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(folder, hub: "http://127.0.0.1:1/")
        let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(run.status == 78, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("feeds"), "\(run.stderr)")
    }

    // Smaller: pushes settled as unknown after a killed run are reported by the next run.
    @Test func theNextRunReportsThePushesAKilledRunLeftUnknown() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let feeds = try await LocalHTTPServer.serving([
                "/w.xml": CannedResponse(text: rssFeed(title: "W", items: [("k1", "Dam bursts upstream", 1)]))
            ])
            defer { feeds.stop() }
            let config = try config(
                folder, hub: hub.endpoint, feeds: ["{url: \"\(feeds.baseURL)/w.xml\", category: World}"])
            await hub.emulator.inject(Fault(delaySeconds: 600))
            let process = try startNewspush(["run", "--config", config])
            // Killed once its intent is journalled (the hub holds the request until its clock moves).
            await hub.emulator.untilSomethingWaits()
            process.signal(SIGKILL)
            _ = await process.exitStatus()
            await hub.emulator.clearFaults()
            let next = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(next.status == 0, "\(next.stderr)")
            let interrupted = try #require(try json(next)["interrupted_sends"] as? [[String: Any]], "\(next.stdout)")
            #expect(interrupted.count == 1 && interrupted.first?["status"] as? String == "unknown", "\(interrupted)")
            let text = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(!text.stdout.contains("UNKNOWN"), "reported once: \(text.stdout)")
        }
    }

    // Smaller: --format json prints one JSON error document on every failing exit.
    @Test func jsonOutputSaysWhyOnUsageAndLockErrors() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(folder, hub: "http://127.0.0.1:1/", feeds: ["{url: \"http://127.0.0.1:1/w.xml\"}"])
        let usage = try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", "\u{7}", "--yes", "--format", "json"],
            environment: hubEnvironment)
        #expect(usage.status == 64)
        #expect(try json(usage)["exit_status"] as? Int == 64, "\(usage.stdout)")
        let fd = open(folder.file("newspush-state.db.lock"), O_RDWR | O_CREAT, 0o644)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        defer { close(fd) }
        let locked = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(locked.status == 75)
        let document = try json(locked)
        #expect(document["exit_status"] as? Int == 75 && (document["error"] as? String)?.contains("lock") == true)
    }

    // Smaller: a 404 for the hub itself says the hub is not found.
    @Test func cancellingOnAWrongHubSaysTheHubIsNotFound() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub.endpoint)
            let scheduled = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Embargoed", "--at", "+1h",
                    "--yes",
                    "--format", "json",
                ], environment: hubEnvironment)
            let id = try #require(try json(scheduled)["notification_id"] as? String)
            let wrong = try String(contentsOfFile: config, encoding: .utf8).replacingOccurrences(
                of: "name: breaking-news", with: "name: braking-news")
            try wrong.write(toFile: config, atomically: true, encoding: .utf8)
            let cancel = try await newspush(["hub", "cancel", "--config", config, id], environment: hubEnvironment)
            #expect(cancel.status == 1, "\(cancel.stderr)")
            #expect(cancel.stderr.contains("braking-news") && cancel.stderr.contains("not found"), "\(cancel.stderr)")
            #expect(!cancel.stderr.contains("already delivered"), "\(cancel.stderr)")
        }
    }

    // Smaller: forcing out a story whose scheduled send waits says so.
    @Test func forcingAStoryWithAScheduledSendSaysSo() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub.endpoint)
            let publish = [
                "publish", "--config", config, "--category", "World", "--title", "Election result due",
                "--url", "https://news.example.org/result", "--yes",
            ]
            #expect(try await newspush(publish + ["--at", "+1h"], environment: hubEnvironment).status == 0)
            let forced = try await newspush(publish + ["--force"], environment: hubEnvironment)
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(forced.stderr.contains("scheduled send"), "\(forced.stderr)")
        }
    }

    // Smaller: config abuse: spellings of one feed URL, and limits of zero.
    @Test func checkCatchesSpellingsOfOneFeedAndSaysWhatZeroLimitsDo() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let spellings = try config(
            folder, hub: "http://127.0.0.1:1/",
            feeds: [
                "{url: \"http://news.example.org/rss.xml\", category: World}",
                "{url: \"HTTP://News.Example.org:80/rss.xml\", category: World}",
            ])
        let duplicate = try await newspush(["check", "--config", spellings], environment: hubEnvironment)
        #expect(duplicate.status == 78, "\(duplicate.stdout)")
        #expect(duplicate.stderr.contains("already listed at line"), "\(duplicate.stderr)")
        let zero = try folder.write(
            "zero.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "http://127.0.0.1:1/"}
            policy: {max_age: 0s, budget: {per_category: 0, per: 1h}}
            feeds:
              - {url: "http://news.example.org/rss.xml", category: World}
            """)
        let check = try await newspush(["check", "--config", zero], environment: hubEnvironment)
        #expect(
            check.stdout.contains("warn policy.max_age") && check.stdout.contains("nothing is pushed"),
            "\(check.stdout)")
        #expect(check.stdout.contains("warn policy.budget.per_category"), "\(check.stdout)")
    }

    // Smaller: commands that never talk to the hub need no key.
    @Test func stateCommandsNeedNoHubKey() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let (config, stop) = try await ledgerWithAStory(folder, hub: hub)
            defer { stop() }
            for command in [["state", "show"], ["state", "check"], ["state", "export"], ["state", "prune"]] {
                let result = try await newspush(command + ["--config", config], environment: [:])
                #expect(result.status == 0, "\(command) without NEWSPUSH_HUB_CONNECTION_STRING: \(result.stderr)")
            }
        }
    }

    // Smaller: a connection string in a config error is redacted by its position, never by
    // searching the message for its value.
    @Test func aMalformedConnectionStringIsRedactedByPosition() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(folder, hub: "http://127.0.0.1:1/")
        let run = try await newspush(["run", "--config", config], environment: ["NEWSPUSH_HUB_CONNECTION_STRING": "x"])
        #expect(run.status == 78)
        #expect(run.stderr.contains("expected"), "\(run.stderr)")
        #expect(!run.stderr.contains("e${"), "\(run.stderr)")
    }

    // (New case) an image link that is not http(s), or carries control characters, is dropped.
    @Test func anImageThatIsNotAWebLinkIsNotSent() async throws {
        let hub = try await LocalHub.start(
            devicesYAML: """
                hub: breaking-news
                devices:
                  - {id: phone, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"},"image":"$(image)"}'}
                """)
        defer { hub.stop() }
        let now = Date()
        let feed = """
            <?xml version="1.0" encoding="utf-8"?>
            <rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>W</title>
            <item><title>Flood waters rise in the valley</title><link>https://news.example.org/flood</link>
            <guid>flood</guid><pubDate>\(rfc822(now))</pubDate>
            <media:content url="javascript:alert(1)" medium="image"/></item>
            </channel></rss>
            """
        let feeds = try await LocalHTTPServer.serving(["/w.xml": CannedResponse(text: feed)])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(
            folder, hub: hub.endpoint, feeds: ["{url: \"\(feeds.baseURL)/w.xml\", category: World}"])
        let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(run.status == 0, "\(run.stderr)")
        let payload = try await payload(hub, device: "phone")
        #expect(payload["image"] as? String == "", "\(payload)")
    }

    // (New cases) a ledger cut short, or a file that is not a ledger: exit 1, nothing sent,
    //    the file untouched.
    @Test(arguments: ["truncated", "garbage"])
    func aRunStopsOnALedgerThatIsNotWhole(damage: String) async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let (config, stop) = try await ledgerWithAStory(folder, hub: hub)
            defer { stop() }
            let path = folder.file("newspush-state.db")
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes =
                damage == "truncated"
                ? bytes.prefix(bytes.count / 2) : Data((0..<bytes.count).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try bytes.write(to: URL(fileURLWithPath: path))
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 1, "\(damage): \(run.stdout) \(run.stderr)")
            #expect(await hub.emulator.allDeliveries().count == 1, "\(damage): nothing sent")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "\(damage): untouched")
        }
    }
}
