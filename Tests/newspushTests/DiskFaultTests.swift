import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A small tmpfs the tests can fill: only as root, and only where mounting is allowed.
enum SmallDisk {
    /// Whether this machine lets the tests mount a tmpfs (checked once by trying).
    static let available: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/bin/mount") else { return false }
        let probe = NSTemporaryDirectory() + "newspush-tmpfs-probe-\(getpid())"
        try? FileManager.default.createDirectory(atPath: probe, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe]) == 0 else { return false }
        return run("/bin/umount", [probe]) == 0
    }()

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        (try? ChildProcess.run(tool, arguments, environment: ["PATH": "/usr/bin:/bin"]))?.status ?? -1
    }

    /// Mounts a tmpfs of `kilobytes` at `path`.
    static func mount(_ path: String, kilobytes: Int) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try #require(run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", path]) == 0)
    }

    static func unmount(_ path: String) { run("/bin/umount", ["-l", path]) }

    /// Fills the disk at `path` until about `free` bytes are left.
    static func fill(_ path: String, leaving free: Int) throws {
        var stats = statvfs()
        try #require(statvfs(path, &stats) == 0)
        let available = Int(stats.f_bavail) * Int(stats.f_frsize)
        let filler = max(0, available - free)
        FileManager.default.createFile(atPath: path + "/filler", contents: Data(count: filler))
    }
}

/// A full or read-only disk under the ledger: nothing is sent without a recorded intent, nothing
/// is lost, and the run says what is wrong (exit 1).
@Suite("Disk faults", .serialized)
struct DiskFaultTests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"},"story":"$(id)"}'}
        """

    func newsroom(_ folder: TemporaryFolder, hub: LocalHub, feeds: LocalHTTPServer, ledger: String) throws -> String {
        try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", concurrency: 2}
            state: \(ledger)
            policy: {first_run: send, budget: {per_category: 100, per: 1h}}
            feeds:
              - {url: "\(feeds.baseURL)/world.xml", category: World}
            """)
    }

    func storiesDelivered(_ hub: LocalHub) async throws -> [String: Int] {
        var perStory: [String: Int] = [:]
        for delivery in await hub.emulator.allDeliveries() {
            let payload = try #require(
                try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any])
            perStory[payload["story"] as? String ?? "?", default: 0] += 1
        }
        return perStory
    }

    /// The disk fills at several levels, from nothing left to enough for part of the run.
    @Test(
        .enabled(if: SmallDisk.available, "needs root and a tmpfs mount"),
        arguments: [0, 8_192, 32_768, 98_304, 196_608])
    func aFullDiskNeverSendsWithoutAnIntentAndLosesNoStory(freeBytes: Int) async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let items = (0..<6).map {
                (guid: "d\($0)", title: "Disk story number \($0) of six", minutesAgo: Double($0))
            }
            let feeds = try await LocalHTTPServer.serving([
                "/world.xml": CannedResponse(text: rssFeed(title: "World", items: items))
            ])
            defer { feeds.stop() }
            let disk = folder.file("disk")
            try SmallDisk.mount(disk, kilobytes: 1024)
            defer { SmallDisk.unmount(disk) }
            let ledger = disk + "/ledger.db"
            let config = try newsroom(folder, hub: hub, feeds: feeds, ledger: ledger)
            #expect(
                try await newspush(["state", "migrate", "--config", config], environment: hubEnvironment).status == 0)
            try SmallDisk.fill(disk, leaving: freeBytes)

            let full = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(full.status == 0 || full.status == 1, "exit \(full.status): \(full.stderr)")
            if full.status == 1 {
                #expect(
                    (full.stdout + full.stderr).contains("is full"),
                    "says the disk is full: \(full.stdout) \(full.stderr)")
            }
            let afterFull = try await storiesDelivered(hub)
            #expect(afterFull.values.allSatisfy { $0 == 1 })
            print(
                "disk full with \(freeBytes) bytes free: exit \(full.status), \(afterFull.count) of 6 sent before space "
                    + "came back"
            )

            // Space again: every story is delivered, none twice; none that was never sent is "unknown".
            try FileManager.default.removeItem(atPath: disk + "/filler")
            let recovered = try await newspush(
                ["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(recovered.status == 0, "\(recovered.stderr)")
            let delivered = try await storiesDelivered(hub)
            #expect(delivered.count == 6, "every story reached the phone: \(delivered)")
            #expect(delivered.values.allSatisfy { $0 == 1 }, "pushed twice: \(delivered.filter { $0.value > 1 })")
            let show = try await newspush(
                ["state", "show", "--config", config, "--format", "json"], environment: hubEnvironment)
            let stories =
                try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])["items"]
                as? [String: [String: Any]]
            #expect(stories?.count == 6)
            for (key, story) in stories ?? [:] {
                let status = story["status"] as? String
                #expect(status == "pushed" || status == "unknown", "\(key) ended \(status ?? "?")")
                if status == "unknown" { #expect(afterFull[key] == 1, "\(key) is unknown but was never sent") }
            }
        }
    }

    @Test(.enabled(if: SmallDisk.available, "needs root and a tmpfs mount"))
    func aReadOnlyLedgerFolderStopsTheRunBeforeSending() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let feeds = try await LocalHTTPServer.serving([
                "/world.xml": CannedResponse(text: rssFeed(title: "World", items: [("r1", "Read only story", 1)]))
            ])
            defer { feeds.stop() }
            let disk = folder.file("disk")
            // Room for a new ledger (its tables, and their copy in the write-ahead log as it is made).
            try SmallDisk.mount(disk, kilobytes: 4096)
            defer { SmallDisk.unmount(disk) }
            let config = try newsroom(folder, hub: hub, feeds: feeds, ledger: disk + "/ledger.db")
            let made = try await newspush(["state", "migrate", "--config", config], environment: hubEnvironment)
            #expect(made.status == 0, "\(made.stderr)")
            try #require(SmallDisk.run("/bin/mount", ["-o", "remount,ro", disk]) == 0)
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 1)
            #expect(run.stderr.contains("ledger"), "\(run.stderr)")
            #expect(await hub.emulator.allDeliveries().isEmpty)
            let check = try await newspush(["check", "--config", config], environment: hubEnvironment)
            #expect(check.status == 78)
            #expect(check.stdout.contains("is not writable") || check.stdout.contains("read-only"), "\(check.stdout)")
        }
    }
}
