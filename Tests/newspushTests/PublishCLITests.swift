import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("publish, hub test-send and the emulator binary")
struct PublishCLITests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone-world, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: phone-alice, platform: fcmv1, tags: [World, "user:alice"],
                template: '{"message":{"notification":{"body":"$(messageParam)"}}}'}
        """

    func config(_ folder: TemporaryFolder, hub: LocalHub, feedURL: String? = nil) throws -> String {
        let feeds = feedURL.map { "  - {url: \"\($0)\", category: World}" } ?? ""
        return try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)"}
            policy: {first_run: send}
            feeds:
            \(feeds.isEmpty ? "  []" : feeds)
            """.replacingOccurrences(of: "feeds:\n  []", with: "feeds: []"))
    }

    @Test func publishSendsOnceAndTheScheduledRunDoesNotRepeatIt() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let feeds = try await LocalHTTPServer.serving([
                "/world.xml": CannedResponse(text: rssFeed(title: "World", items: [("scoop", "Scoop of the day", 2)]))
            ])
            defer { feeds.stop() }
            let config = try config(folder, hub: hub, feedURL: "\(feeds.baseURL)/world.xml")
            let args = [
                "publish", "--config", config, "--category", "World", "--title", "Scoop of the day", "--url",
                "https://news.example.org/scoop?utm_source=app",
            ]

            let published = try await newspush(args + ["--yes"], environment: hubEnvironment)
            #expect(published.status == 0, "stderr: \(published.stderr)")
            #expect(published.stdout.contains("push to [World] (template): Breaking World News : Scoop of the day"))
            #expect(published.stdout.contains("sent (201), notification id NH-"))
            #expect(await hub.emulator.allDeliveries().count == 2)

            let again = try await newspush(args + ["--yes"], environment: hubEnvironment)
            #expect(again.status == 1)
            #expect(again.stderr.contains("already pushed"))
            #expect(await hub.emulator.allDeliveries().count == 2)

            // The feed carries the same article (with a guid): the run recognises it by link.
            let run = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
            #expect(run.status == 0, "stderr: \(run.stderr)")
            #expect(run.stdout.contains("\"decision\" : \"seen\""))
            #expect(await hub.emulator.allDeliveries().count == 2)
        }
    }

    @Test func publishAsksForConfirmation() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub)
            let args = ["publish", "--config", config, "--category", "World", "--message", "Polls have closed"]
            let declined = try await newspush(args, environment: hubEnvironment, input: "n\n")
            #expect(declined.status == 1)
            #expect(declined.stderr.contains("Send it? [y/N]"))
            #expect(declined.stderr.contains("nothing sent"))
            let noInput = try await newspush(args, environment: hubEnvironment, input: "")
            #expect(noInput.status == 1)
            #expect(await hub.emulator.allDeliveries().isEmpty)
            let accepted = try await newspush(args, environment: hubEnvironment, input: "y\n")
            #expect(accepted.status == 0)
            let payloads = await hub.emulator.allDeliveries().map(\.payload)
            #expect(payloads.contains(#"{"aps":{"alert":"Polls have closed"}}"#))
        }
    }

    @Test func dryRunAndTagTrials() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub)
            let base = [
                "publish", "--config", config, "--category", "World", "--title", "Trial story", "--url",
                "https://news.example.org/t",
            ]
            let dry = try await newspush(base + ["--dry-run"], environment: hubEnvironment)
            #expect(dry.status == 0)
            #expect(dry.stdout.contains("sig=<redacted>"))
            #expect(dry.stdout.contains("dry run: nothing sent"))
            #expect(await hub.emulator.allDeliveries().isEmpty)

            let trial = try await newspush(base + ["--tags", "user:alice", "--yes"], environment: hubEnvironment)
            #expect(trial.status == 0, "stderr: \(trial.stderr)")
            #expect(await hub.emulator.allDeliveries().map(\.device) == ["phone-alice"])
            // A trial is not the story's push: the real one still goes out.
            let real = try await newspush(base + ["--yes"], environment: hubEnvironment)
            #expect(real.status == 0, "stderr: \(real.stderr)")
            #expect(await hub.emulator.allDeliveries().count == 3)

            let badTags = try await newspush(
                base + ["--tags", "$InstallationId:{x}", "--yes"], environment: hubEnvironment)
            #expect(badTags.status == 64)
            // Deep nesting used to overflow the stack (exit 139): now a usage error like any bad expression.
            let deep = try await newspush(
                base + ["--tags", String(repeating: "!", count: 100_000) + "World", "--yes"],
                environment: hubEnvironment)
            #expect(deep.status == 64, "\(deep.stderr.prefix(300))")
            #expect(deep.stderr.count < 1000, "the error does not repeat the whole expression")
            let both = try await newspush(
                ["publish", "--config", config, "--category", "World", "--title", "a", "--message", "b"],
                environment: hubEnvironment)
            #expect(both.status == 64)
        }
    }

    @Test func aRepeatIsRecognisedByItsHeadlineAndOnlyForcedOnPurpose() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub)
            let first = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title",
                    "Parliament passes the emergency budget after all-night session", "--yes",
                ], environment: hubEnvironment)
            #expect(first.status == 0, "\(first.stderr)")
            // Another desk's wording of the same story, with a link of its own.
            let copy = [
                "publish", "--config", config, "--category", "World", "--title",
                "Parliament passes emergency budget after all-night session",
                "--url", "https://other.example.org/budget",
            ]
            let dry = try await newspush(copy + ["--dry-run"], environment: hubEnvironment)
            #expect(dry.status == 1)
            #expect(dry.stdout.contains("dry run: the real command would refuse"))
            #expect(dry.stderr.contains("near-identical headline was pushed in a publish"), "\(dry.stderr)")
            let refused = try await newspush(copy + ["--yes"], environment: hubEnvironment)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("--force"))
            #expect(await hub.emulator.allDeliveries().count == 2)
            let forced = try await newspush(copy + ["--yes", "--force"], environment: hubEnvironment)
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(await hub.emulator.allDeliveries().count == 4)
            let show = try await newspush(["state", "show", "--config", config], environment: hubEnvironment)
            #expect(show.stdout.contains("[outbox: repeat sent"), "\(show.stdout)")
            // Blank text is a usage error.
            let blank = try await newspush(
                ["publish", "--config", config, "--category", "World", "--title", "   ", "--yes"],
                environment: hubEnvironment)
            #expect(blank.status == 64)
            let emptyMessage = try await newspush(
                ["publish", "--config", config, "--category", "World", "--message", "", "--yes"],
                environment: hubEnvironment)
            #expect(emptyMessage.status == 64)
        }
    }

    @Test func theLockIsTakenBeforeThePromptAndCanBeWaitedFor() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub)
            let fd = open(folder.file("newspush-state.db.lock"), O_RDWR | O_CREAT, 0o644)
            #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
            let args = ["publish", "--config", config, "--category", "World", "--message", "Polls have closed"]
            let locked = try await newspush(args, environment: hubEnvironment, input: "y\n")
            #expect(locked.status == 75)
            #expect(!locked.stderr.contains("Send it?"), "nobody is asked to confirm a push that cannot go out")
            #expect(locked.stderr.contains("--wait"))
            let started = Date()
            let waited = try await newspush(args + ["--yes", "--wait", "1s"], environment: hubEnvironment)
            #expect(waited.status == 75)
            #expect(Date().timeIntervalSince(started) >= 1)
            // The running job finishes half a second in: a publish waiting for it goes out. (Released
            // from a thread of its own: a task on a busy machine's pool may wake long after.)
            Thread {
                usleep(500_000)
                flock(fd, LOCK_UN)
                close(fd)
            }.start()
            let after = try await newspush(args + ["--yes", "--wait", "10s"], environment: hubEnvironment)
            #expect(after.status == 0, "\(after.stderr)")
            #expect(await hub.emulator.allDeliveries().count == 2)
        }
    }

    @Test func hubTestSendPrintsPerDeviceOutcomes() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub)
            let result = try await newspush(
                ["hub", "test-send", "--config", config, "--category", "World", "--title", "Test alert"],
                environment: hubEnvironment)
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(result.stdout.contains("2 succeeded, 0 failed"))
            #expect(result.stdout.contains("apple phone-world: The Notification was successfully sent"))
            #expect(result.stdout.contains("fcmv1 phone-alice:"))
            // On the record as a test, never as a story's push.
            let export = try await newspush(["state", "export", "--config", config], environment: hubEnvironment)
            #expect(
                export.stdout.contains(#""kind":"test""#) || export.stdout.contains(#""kind" : "test""#),
                "\(export.stdout)"
            )
        }
    }

    @Test func emulatorBinaryServesTheREADMEDemo() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let process = try ChildProcess.start(
            try binaryURL("newspush-hub").path,
            [
                "--port", "0", "--devices", root.appendingPathComponent("Examples/devices.yaml").path,
                "--log", folder.file("deliveries.jsonl"),
            ], environment: hubEnvironment, errors: .discard)
        defer { process.stop() }
        let (listening, firstLine) = try await process.stdout.orFail().listeningPort()
        #expect(firstLine.hasPrefix("newspush-hub listening on http://127.0.0.1:"))
        let port = try #require(listening)
        let config = try String(contentsOf: root.appendingPathComponent("Examples/feeds.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "url: feeds/", with: "url: \(root.path)/Examples/feeds/")
        let configPath = try folder.write("feeds.yaml", config)
        let run = try await newspush(
            ["run", "--config", configPath],
            environment: hubEnvironment.merging(["NEWSPUSH_HUB_ENDPOINT": "http://127.0.0.1:\(port)/"]) { $1 })
        #expect(run.status == 0, "stderr: \(run.stderr)")
        // Five section-feed stories and the wire's sports story, which the text model files under Sports.
        #expect(run.stdout.contains("sent 6 pushes, 0 failed"))
        let log = try String(contentsOfFile: folder.file("deliveries.jsonl"), encoding: .utf8)
        let lines = log.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == 16)
        let required: Set<String> = ["device", "platform", "tags", "payload", "notification_id"]
        #expect(
            lines.allSatisfy {
                required.isSubset(of: $0.keys)
                    && Set($0.keys).subtracting(required).isSubset(of: ["collapse_id", "headers"])
            })
        // The recommended Apple registration shows its collapse id and priority (Technology is minor).
        let tech = try #require(lines.first { $0["device"] as? String == "iphone-tech" })
        #expect((tech["collapse_id"] as? String)?.hasPrefix("np-") == true)
        #expect((tech["headers"] as? [String: String])?["apns-priority"] == "5")
        #expect(
            lines.contains {
                $0["device"] as? String == "iphone-fr"
                    && ($0["payload"] as? String)?.contains("Dernière minute (Monde)") == true
            })
        #expect(
            lines.contains {
                $0["device"] as? String == "iphone-world-politics"
                    && $0["payload"] as? String
                        == #"{"aps":{"alert":"Breaking World News : Harbour city opens its new flood barrier ahead of "#
                        + #"storm season"}}"#
            })
        #expect(
            !lines.contains { $0["device"] as? String == "ipad-native" },
            "native registrations do not get template sends")
    }
}
