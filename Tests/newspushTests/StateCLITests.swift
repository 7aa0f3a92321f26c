import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("State under failure: crashes, concurrent runs, maintenance commands")
struct StateCLITests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"},"story":"$(id)"}'}
        """

    func newsroom(_ folder: TemporaryFolder, hub: LocalHub, feeds: LocalHTTPServer, concurrency: Int = 2) throws
        -> String
    {
        try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", concurrency: \(concurrency), timeout: 5m}
            policy: {first_run: send, budget: {per_category: 100, per: 1h}}
            feeds:
              - {url: "\(feeds.baseURL)/world.xml", category: World}
            """)
    }

    @Test func killingARunAtAnyMomentNeverPushesAStoryTwice() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let items = (0..<30).map {
            (guid: "s\($0)", title: "Story number \($0) of the crash test", minutesAgo: Double($0))
        }
        let feeds = try await LocalHTTPServer.serving([
            "/world.xml": CannedResponse(text: rssFeed(title: "World", items: items))
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try newsroom(folder, hub: hub, feeds: feeds)
        let statePath = folder.file("newspush-state.db")
        // Every send takes 30 ms, so kills land before, during and after sends.
        await hub.emulator.inject(Fault(delaySeconds: 0.03, count: 10_000))
        for round in 0..<14 {
            let process = try startNewspush(["run", "--config", config, "-q"])
            let wait = 0.04 + Double(round) * 0.045
            try await Task.sleep(nanoseconds: UInt64(wait * 1e9))
            process.signal(SIGKILL)
            _ = await process.exitStatus()
            if FileManager.default.fileExists(atPath: statePath) {
                let check = try await newspush(["state", "check", "--state", statePath])
                #expect(check.status == 0, "round \(round): state does not load: \(check.stdout) \(check.stderr)")
            }
        }
        await hub.emulator.clearFaults()
        let final = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(final.status == 0 || final.status == 2)

        var perStory: [String: Int] = [:]
        for delivery in await hub.emulator.allDeliveries() {
            let payload = try #require(
                try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any])
            perStory[payload["story"] as? String ?? "?", default: 0] += 1
        }
        #expect(perStory.values.allSatisfy { $0 == 1 }, "pushed twice: \(perStory.filter { $0.value > 1 })")
        let show = try await newspush(["state", "show", "--state", statePath, "--format", "json"])
        let state = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
        let stories = try #require(state["items"] as? [String: [String: Any]])
        print(
            "crash test: \(perStory.count) delivered, statuses "
                + "\(Dictionary(grouping: stories.values, by: { $0["status"] as? String ?? "" }).mapValues(\.count))"
        )
        #expect(stories.count == 30)
        // Every story ends pushed, or unknown when a kill hit it mid-send; none is left pending.
        #expect(stories.values.allSatisfy { ["pushed", "unknown"].contains($0["status"] as? String) })
        let pushed = Set(stories.filter { $0.value["status"] as? String == "pushed" }.keys)
        #expect(pushed.isSubset(of: Set(perStory.keys)), "a story marked pushed was never delivered")
        #expect(perStory.count >= 20, "only \(perStory.count) of 30 stories were delivered")
    }

    @Test func aSecondRunExits75AtOnce() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let feeds = try await LocalHTTPServer.serving([
                "/world.xml": CannedResponse(text: rssFeed(title: "World", items: [("x", "Slow story to send now", 1)]))
            ])
            defer { feeds.stop() }
            let config = try newsroom(folder, hub: hub, feeds: feeds)
            // The first run holds the lock while the hub holds its push (until the hub's clock moves
            // on 600 s); the second must exit 75 while the first still runs, not wait for it.
            await hub.emulator.inject(Fault(delaySeconds: 600, count: 1))
            let first = try startNewspush(["run", "--config", config])
            await hub.emulator.untilSomethingWaits()
            let second = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(second.status == 75)
            #expect(first.isRunning, "the second run waited for the first to finish")
            await hub.emulator.advanceClock(by: 600)
            #expect(await first.exitStatus() == 0)
            #expect(await hub.emulator.allDeliveries().count == 1)
        }
    }

    @Test func showForgetPruneAndCheck() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let now = Date()
        func stamp(_ d: Date) -> String {
            let f = ISO8601DateFormatter()
            return f.string(from: d)
        }
        let old = stamp(now.addingTimeInterval(-40 * 86400)), fresh = stamp(now)
        let path = try folder.write(
            "state.json",
            """
            {"version": 1, "feeds": {}, "items": {
              "guid:a": {"status": "pushed", "feed": "f", "title": "Pushed story", "category": "World",
                  "first_seen": "\(fresh)", "last_seen": "\(fresh)", "pushed_at": "\(fresh)"},
              "guid:b": {"status": "seen", "feed": "f", "title": "Old story", "first_seen": "\(old)",
                  "last_seen": "\(old)"}
            }}
            """)
        let show = try await newspush(["state", "show", "--state", path])
        #expect(show.status == 0)
        #expect(show.stdout.contains("2 stories (1 pushed, 1 seen)"))
        #expect(show.stdout.contains("guid:a  Pushed story pushed"))
        let newer = try #require(show.stdout.range(of: "guid:a")), older = try #require(show.stdout.range(of: "guid:b"))
        #expect(newer.lowerBound < older.lowerBound, "newest first: \(show.stdout)")
        let check = try await newspush(["state", "check", "--state", path])
        #expect(check.status == 0)
        #expect(check.stdout.contains("2 stories") && check.stdout.contains(": ok"))
        let prune = try await newspush(["state", "prune", "--state", path, "--retention", "30d"])
        #expect(prune.status == 0)
        #expect(prune.stdout.contains("pruned 1 story; 1 kept, 1 tombstones"))
        let forget = try await newspush(["state", "forget", "guid:a", "--state", path])
        #expect(forget.status == 0)
        let unknown = try await newspush(["state", "forget", "guid:zzz", "--state", path])
        #expect(unknown.status == 1)
        #expect(try await newspush(["state", "show", "--state", path]).stdout.contains("0 stories"))
        // The JSON file was migrated by the first command that wrote: kept beside the ledger.
        #expect(FileManager.default.fileExists(atPath: folder.file("state.json.migrated")))
        let ledger = folder.file("state.db")
        let export = try await newspush(["state", "export", "--state", ledger])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: Any])
        #expect((document["tombstones"] as? [String: String])?.keys.sorted() == ["guid:b"])
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: ledger))
        let corrupt = try await newspush(["state", "check", "--state", ledger])
        #expect(corrupt.status == 1)
        #expect(corrupt.stderr.contains("corrupt"))
    }
}
