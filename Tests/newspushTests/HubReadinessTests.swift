import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// Ready for the real hub: newspush reads a hub set up wrong, or not yet done, as the
/// service words it; each case through the built binary against the emulator configured so.
@Suite("Ready for the real hub")
struct HubReadinessTests {
    let first = HostileOperatorTests()

    // Telemetry right after a send: "not processed yet", not a wrong id; --wait asks again.
    // (The hub's telemetry comes an hour after the send on its clock, which the test moves on.)
    @Test func telemetryRightAfterASendIsNotProcessedYet() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices + "\ntelemetry_delay: 3600s") { hub, folder in
            let config = try first.config(folder, hub: hub.endpoint)
            let sent = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Telemetry story", "--yes",
                    "--format",
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
            async let waiting = newspush(
                ["hub", "status", id, "--wait", "5m", "--config", config], environment: hubEnvironment)
            // Once the waiting command has asked (after the two above), the hour passes.
            for _ in 0..<600 where await hub.emulator.telemetryRequests(for: id) < 3 {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            await hub.emulator.advanceClock(by: 3600)
            let waited = try await waiting
            #expect(
                waited.status == 0 && waited.stdout.contains("state Completed"), "\(waited.stdout) \(waited.stderr)")
            // An id sent long ago that the hub does not know is still a wrong id.
            let old = try await newspush(
                ["hub", "status", "NH-20200101000000000-0123456789abcdef0123456789abcdef-01", "--config", config],
                environment: hubEnvironment)
            #expect(old.status == 1 && old.stdout.contains("knows no notification"), "\(old.stdout) \(old.stderr)")
        }
    }

    static let mixed = """
        hub: breaking-news
        devices:
          - {id: iphone, platform: apple, tags: [World]}
          - {id: pixel, platform: fcmv1, tags: [Sports]}
        """

    // A hub without a platform's credential: one error, the other formats go on, nothing lost.
    @Test func aMissingCredentialStopsItsFormatOnceAndKeepsItsPushes() async throws {
        let broken = try await LocalHub.start(devicesYAML: Self.mixed + "\ncredentials: [apple]")
        defer { broken.stop() }
        let fixed = try await LocalHub.start(devicesYAML: Self.mixed)
        defer { fixed.stop() }
        let server = try await FeedDesk.serve([
            "/world.xml": FeedDesk([("w1", "Bridge reopens after repairs", 2), ("w2", "Talks resume in Geneva", 3)]),
            "/sports.xml": FeedDesk([
                ("s1", "Cup final goes to extra time", 2), ("s2", "Record transfer agreed", 3),
                ("s3", "Coach resigns after defeat", 4),
            ]),
        ])
        defer { server.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        func config(_ hub: LocalHub, _ name: String) throws -> String {
            try folder.write(
                name,
                """
                hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                    endpoint: "\(hub.endpoint)", retries: 1, retry_delay: 10ms, concurrency: 1}
                state: newspush-state.db
                policy: {first_run: send, budget: {per_category: 50, per: 1h}}
                categories:
                  World: {format: apple}
                  Sports: {format: fcmv1}
                feeds:
                  - {url: "\(server.baseURL)/world.xml", category: World}
                  - {url: "\(server.baseURL)/sports.xml", category: Sports}
                """)
        }
        let run = try await newspush(
            ["run", "--config", try config(broken, "broken.yaml"), "--format", "json"], environment: hubEnvironment)
        #expect(run.status == 1, "\(run.stderr)")
        let said = (run.stdout + run.stderr).components(separatedBy: "no platform credential for fcmv1").count - 1
        #expect(said == 1, "said once: \(run.stdout) \(run.stderr)")
        let pushes = try #require(try first.json(run)["pushes"] as? [[String: Any]])
        let statuses = Dictionary(grouping: pushes, by: { $0["category"] as? String ?? "" }).mapValues {
            $0.compactMap { $0["status"] as? String }.sorted()
        }
        #expect(statuses["World"] == ["sent", "sent"], "\(statuses)")
        #expect(statuses["Sports"] == ["pending", "pending", "pending"], "\(statuses)")
        #expect(await broken.emulator.allDeliveries().map(\.device) == ["iphone", "iphone"])
        // Once the hub has the credential, the next run sends the pushes it kept.
        let again = try await newspush(
            ["run", "--config", try config(fixed, "fixed.yaml")], environment: hubEnvironment)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(await fixed.emulator.allDeliveries().map(\.device) == ["pixel", "pixel", "pixel"])
    }

    /// A config whose World pushes are native apple, Sports native fcmv1, the rest templates.
    func goLiveConfig(_ folder: TemporaryFolder, hub: LocalHub, name: String) throws -> String {
        try folder.write(
            name,
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", retries: 1, retry_delay: 10ms}
            categories:
              World: {format: apple}
              Sports: {format: fcmv1}
            feeds:
              - {url: "http://127.0.0.1:1/w.xml", category: World}
            """)
    }

    /// A hub (with `hub` settings) whose native devices take World's apple and Sports' fcmv1
    /// pushes, and whose `templates` devices take the template pushes (to Politics).
    func goLiveDevices(hub: String = "", templates: String) -> String {
        """
        hub: breaking-news
        \(hub)
        devices:
          - {id: iphone-native, platform: apple, tags: [World]}
          - {id: pixel-native, platform: fcmv1, tags: [Sports]}
        \(templates)
        """
    }

    // The go-live check: every format the config sends reaches a device, or it says why.
    @Test func theGoLiveCheckSaysWhatToFix() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let fcm = #"{"message":{"notification":{"body":"$(messageParam)"}}}"#
        let healthy = try await LocalHub.start(
            devicesYAML: goLiveDevices(
                templates: """
                      - {id: iphone, platform: apple, tags: [Politics], template: '{"aps":{"alert":"$(messageParam)"}}'}
                      - {id: pixel, platform: fcmv1, tags: [Politics], template: '\(fcm)'}
                    """))
        defer { healthy.stop() }
        let good = try await newspush(
            ["check", "--hub", "--config", try goLiveConfig(folder, hub: healthy, name: "good.yaml")],
            environment: hubEnvironment)
        #expect(good.status == 0, "\(good.stdout) \(good.stderr)")
        #expect(good.stdout.contains("ok   hub template: reached 2 devices"), "\(good.stdout)")
        #expect(await healthy.emulator.allDeliveries().count == 4, "one test push per format")
        let broken = try await LocalHub.start(
            devicesYAML: goLiveDevices(
                hub: "tier: basic\ncredentials: [apple]",
                templates: """
                      - {id: iphone, platform: apple, tags: [Politics], template: '{"aps":{"alert":"$(messageParam)"}}'}
                      - {id: old-android, platform: gcm, tags: [Politics], template: '{"data":{"message":"$(messageParam)"}}'}
                    """))
        defer { broken.stop() }
        let check = try await newspush(
            [
                "check", "--hub", "--format", "json", "--config",
                try goLiveConfig(folder, hub: broken, name: "bad.yaml"),
            ],
            environment: hubEnvironment)
        #expect(check.status == 1, "\(check.stdout) \(check.stderr)")
        let lines = try #require(try first.json(check)["checks"] as? [[String: Any]]).map {
            "\($0["severity"] ?? "") \($0["check"] ?? ""): \($0["detail"] ?? "")"
        }.joined(separator: "\n")
        #expect(lines.contains("hub hub fcmv1: the hub has no platform credential for fcmv1"), "\(lines)")
        #expect(lines.contains("ok hub apple: reached 1 device"), "\(lines)")
        #expect(lines.contains("warning hub template: 1 device is still registered on legacy FCM (gcm)"), "\(lines)")
        #expect(lines.contains("warning hub tier: the hub answered without a Location"), "\(lines)")
        // FCM v1 templates that are not whole messages: the hub counts them as nothing.
        let incomplete = try await LocalHub.start(
            devicesYAML: goLiveDevices(
                templates: """
                      - {id: pixel, platform: fcmv1, tags: [Politics], template: '{"notification":{"body":"$(messageParam)"}}'}
                    """))
        defer { incomplete.stop() }
        let zero = try await newspush(
            ["check", "--hub", "--config", try goLiveConfig(folder, hub: incomplete, name: "zero.yaml")],
            environment: hubEnvironment)
        #expect(zero.status == 1, "\(zero.stdout)")
        #expect(zero.stdout.contains("FAIL hub template: no device reached") && zero.stdout.contains("FCM v1"))
        // A wrong key: one line, not one per format.
        let wrongKey = [
            "NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString.replacingOccurrences(of: "AAEC", with: "ZZEC")
        ]
        let refused = try await newspush(
            ["check", "--hub", "--config", try goLiveConfig(folder, hub: healthy, name: "good.yaml")],
            environment: wrongKey)
        #expect(
            refused.status == 1 && refused.stdout.components(separatedBy: "FAIL hub").count == 2, "\(refused.stdout)")
    }
}
