import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// Ready for the real hub (issue 39): newspush reads a hub set up wrong, or not yet done, as the
/// service words it; each case through the built binary against the emulator configured so.
@Suite("Ready for the real hub")
struct HubReadinessTests {
    let first = HostileOperatorTests()

    // 3. Telemetry right after a send: "not processed yet", not a wrong id; --wait asks again.
    @Test func telemetryRightAfterASendIsNotProcessedYet() async throws {
        let hub = try await LocalHub.start(devicesYAML: HostileOperatorTests.devices + "\ntelemetry_delay: 4s")
        defer { hub.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try first.config(folder, hub: hub.endpoint)
        let sent = try await newspush(
            [
                "publish", "--config", config, "--category", "World", "--title", "Telemetry story", "--yes", "--format",
                "json",
            ],
            environment: hubEnvironment)
        let id = try #require(try first.json(sent)["notification_id"] as? String, "\(sent.stdout)")
        let early = try await newspush(["hub", "status", id, "--config", config], environment: hubEnvironment)
        #expect(early.status == 0, "\(early.stdout) \(early.stderr)")
        #expect(early.stdout.contains("not processed yet") && !early.stdout.contains("knows no notification"))
        let fromLedger = try await newspush(
            ["hub", "status", "--last", "1", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(fromLedger.stdout.contains("\"not_processed_yet\" : true"), "\(fromLedger.stdout)")
        let waited = try await newspush(
            ["hub", "status", id, "--wait", "30s", "--config", config], environment: hubEnvironment)
        #expect(waited.status == 0 && waited.stdout.contains("state Completed"), "\(waited.stdout) \(waited.stderr)")
        // An id sent long ago that the hub does not know is still a wrong id.
        let old = try await newspush(
            ["hub", "status", "NH-20200101000000000-0123456789abcdef0123456789abcdef-01", "--config", config],
            environment: hubEnvironment)
        #expect(old.status == 1 && old.stdout.contains("knows no notification"), "\(old.stdout) \(old.stderr)")
    }
}
