import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The command line over the core sessions: one exit status per error (SPEC §7), and one fetch →
/// parse stage with the run's limits for every command that reads feeds.
@Suite("One session per command")
struct SessionCLITests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
        """

    func config(
        _ folder: TemporaryFolder, hub: String = "http://127.0.0.1:1/", extra: String = "",
        feeds: String = "feeds: []"
    ) throws -> String {
        try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "\(hub)"}
            \(extra)
            \(feeds)
            """)
    }

    /// Holds the run lock of the ledger at `path` until the returned descriptor is closed.
    func holdLock(_ path: String) throws -> Int32 {
        let fd = open(path + ".lock", O_RDWR | O_CREAT, 0o644)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd
    }

    @Test func aBadConnectionStringIsAConfigurationErrorForHubTokenToo() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(folder)
        let bad = ["NEWSPUSH_HUB_CONNECTION_STRING": "Endpoint=sb://contoso-news.servicebus.windows.net/"]
        for arguments in [["hub", "token"], ["run"], ["publish", "--category", "World", "--title", "T", "--yes"]] {
            let result = try await newspush(arguments + ["--config", config], environment: bad)
            #expect(result.status == 78, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("hub.connection_string"), "\(arguments): \(result.stderr)")
        }
    }

    @Test func hubCancelWaitsForTheLockAndExits75WithNothingCancelled() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub.endpoint)
            let scheduled = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Embargoed", "--at", "+1h",
                    "--yes",
                    "--format", "json",
                ], environment: hubEnvironment)
            #expect(scheduled.status == 0, "\(scheduled.stderr)")
            let answer = try #require(
                try JSONSerialization.jsonObject(with: Data(scheduled.stdout.utf8)) as? [String: Any])
            let id = try #require(answer["notification_id"] as? String)
            let fd = try holdLock(folder.file("newspush-state.db"))
            defer { close(fd) }
            let cancel = try await newspush(["hub", "cancel", "--config", config, id], environment: hubEnvironment)
            #expect(cancel.status == 75, "\(cancel.stderr)")
            #expect(cancel.stderr.contains("holds the lock"))
            #expect(await hub.emulator.notification(id)?.state == "Scheduled", "nothing is cancelled without the lock")
        }
    }

    @Test func checkFetchKeepsTheParseBudget() async throws {
        // A large feed that takes far longer than a millisecond to parse.
        let items = (0..<4000).map {
            (guid: "g\($0)", title: "Story number \($0) with a longer headline", minutesAgo: 1.0)
        }
        let feeds = try await LocalHTTPServer.serving([
            "/big.xml": CannedResponse(text: rssFeed(title: "Big", items: items))
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(
            folder, extra: "fetch: {parse_budget: 1ms}",
            feeds: "feeds:\n  - {url: \"\(feeds.baseURL)/big.xml\", name: Big, category: World}")
        let check = try await newspush(["check", "--fetch", "--config", config], environment: hubEnvironment)
        #expect(check.status == 2, "\(check.stdout) \(check.stderr)")
        #expect(
            check.stdout.contains("FAIL feed Big") && check.stdout.contains("fetch.parse_budget"), "\(check.stdout)")
        let preview = try await newspush(
            ["preview", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(preview.stdout.contains("fetch.parse_budget"), "the run reads it the same way")
    }
}
