import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// Cron, systemd and a terminal (the operator's and the editor's view), through the binary.
@Suite("Operators and editors at the command line")
struct OperatorCLITests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World, Sports], template: '{"aps":{"alert":"$(messageParam)"}}'}
        """

    func newsroom(_ folder: TemporaryFolder, hub: LocalHub, feeds: [String], extra: String = "") throws -> String {
        try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", retries: 0}
            policy: {first_run: send}
            \(extra)
            feeds:
            \(feeds.map { "  - {url: \"\($0)\", category: World}" }.joined(separator: "\n"))
            """)
    }

    func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    @Test func aCronRunIsSilentWhenNothingHappensAndBriefWhenSomethingDoes() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([
                ("c1", "Dam opens its gates after heavy rain", 3), ("c2", "Ferry service resumes on the coast", 8),
            ])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try newsroom(folder, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])

            let busy = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(busy.status == 0)
            #expect(busy.stderr.isEmpty, "stderr: \(busy.stderr)")
            let lines = busy.stdout.split(separator: "\n")
            #expect(lines.count == 3, "one line per push and a summary: \(busy.stdout)")
            #expect(lines.filter { $0.hasPrefix("pushed [World] Breaking World News : ") }.count == 2)
            #expect(
                lines.last?.hasPrefix("1 feed ok, 0 failed; 2 new items; sent 2 pushes, 0 failed, 0 pending") == true)

            let quiet = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(quiet.status == 0)
            #expect(
                quiet.stdout.isEmpty && quiet.stderr.isEmpty,
                "a quiet run prints nothing: \(quiet.stdout) \(quiet.stderr)")

            // The full report is still there, and so is the JSON (the feed answers 304 by now).
            let full = try await newspush(["run", "--config", config, "--report", "full"], environment: hubEnvironment)
            #expect(full.stdout.hasPrefix("Run at "))
            #expect(full.stdout.contains("1 feed ok, 0 failed; 0 new items; sent 0 pushes"))
            let report = try #require(
                try json(
                    try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
                        .stdout)
                    as? [String: Any])
            #expect((report["feeds"] as? [[String: Any]])?.first?["status"] as? String == "not-modified")
        }
    }

    @Test func eachFailureIsPrintedOnceAndQuietPrintsOnlyFailures() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("f1", "Bridge closed after a lorry strike", 3)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try newsroom(
                folder, hub: hub, feeds: ["\(feeds.baseURL)/world.xml", "\(feeds.baseURL)/missing.xml"])
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 2)
            #expect(run.stdout.contains("pushed [World] Breaking World News : Bridge closed after a lorry strike"))
            let all = run.stdout + run.stderr
            #expect(all.components(separatedBy: "missing.xml: HTTP 404").count == 2, "printed once: \(all)")
            #expect(run.stderr.isEmpty)
            // -q: the failure only.
            await desk.set([("f2", "Second story of the day on the desk", 1)])
            let quiet = try await newspush(["run", "--config", config, "-q"], environment: hubEnvironment)
            #expect(quiet.status == 2)
            #expect(quiet.stdout.split(separator: "\n").count == 1)
            #expect(quiet.stdout.hasPrefix("FEED FAILED"))
            #expect(!quiet.stdout.contains("pushed"))
        }
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool"),
            "promtool (Debian's prometheus package) parses the metrics file"))
    func theMetricsFileParsesAsPrometheusText() async throws {
        let promtool = "/usr/bin/promtool"
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("m1", "Metrics story for the dashboard", 3)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try newsroom(folder, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])
            let metrics = folder.file("newspush.prom")
            let run = try await newspush(
                ["run", "--config", config, "--metrics-file", metrics], environment: hubEnvironment)
            #expect(run.status == 0)
            let text = try String(contentsOfFile: metrics, encoding: .utf8)
            let check = await offThePool { () -> (Int32, String) in
                let checked = try? ChildProcess.run(
                    promtool, ["check", "metrics"], environment: ["PATH": "/usr/bin:/bin"], input: Data(text.utf8))
                return (
                    checked?.status ?? -1,
                    (checked.map { String(decoding: $0.stdout + $0.stderr, as: UTF8.self) }) ?? "not started"
                )
            }
            #expect(check.0 == 0, "promtool: \(check.1)\n\(text)")
            #expect(text.contains(#"newspush_pushes{category="World",status="sent"} 1"#))
            #expect(text.contains(#"newspush_feeds{status="ok"} 1"#))
            #expect(text.contains(#"newspush_run_outcome{outcome="complete"} 1"#))
            let success = try #require(
                text.split(separator: "\n").first { $0.hasPrefix("newspush_last_success_timestamp_seconds ") })
            // A failing run keeps the last success of the one before.
            let broken = try folder.write("broken.yaml", "hub: {name: x}\nfeeds: []\n")
            let failed = try await newspush(
                ["run", "--config", broken, "--metrics-file", metrics], environment: hubEnvironment)
            #expect(failed.status == 78)
            let after = try String(contentsOfFile: metrics, encoding: .utf8)
            #expect(after.contains(#"newspush_run_outcome{outcome="error"} 1"#))
            #expect(after.contains(String(success)))
        }
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"),
            "script (util-linux) gives the binary a terminal"))
    func colourAndProgressOnlyOnATerminalAndNeverWithNO_COLOR() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("t1", "Terminal story for the progress line", 3)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try newsroom(folder, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])
            let binary = try binaryURL().path
            func onTerminal(_ command: String, noColor: Bool) async throws -> String {
                var environment = hubEnvironment
                environment["TERM"] = "xterm"
                environment["NO_COLOR"] = noColor ? "1" : ""  // empty: colour stays on (no-color.org)
                let result = try await newspushRaw(
                    "/usr/bin/script", ["-qec", command, "/dev/null"], environment: environment)
                return result.stdout
            }
            let tty = try await onTerminal(
                "\(binary) run --config \(config) --dry-run --report changes", noColor: false)
            #expect(tty.contains("fetching feeds 1/1"), "a progress line on a terminal: \(tty)")
            let piped = try await newspush(
                ["run", "--config", config, "--dry-run", "--report", "changes"], environment: hubEnvironment)
            #expect(
                !piped.stderr.contains("fetching") && !piped.stdout.contains("\u{1B}"),
                "no progress and no escapes in a pipe")
            let json = try await onTerminal("\(binary) run --config \(config) --dry-run --format json", noColor: false)
            #expect(!json.contains("fetching feeds"), "never with --format json")
            let coloured = try await onTerminal("\(binary) run --config /nonexistent.yaml", noColor: false)
            #expect(coloured.contains("\u{1B}[31merror:"))
            let plain = try await onTerminal("\(binary) run --config /nonexistent.yaml", noColor: true)
            #expect(plain.contains("error: no config file at /nonexistent.yaml") && !plain.contains("\u{1B}["))
        }
    }

    @Test func everyJSONOutputIsOneDocument() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("j1", "JSON story for the scripts", 3)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try newsroom(folder, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])
            let commands: [[String]] = [
                ["preview", "--config", config, "--format", "json", "--show-requests"],
                ["run", "--config", config, "--format", "json", "--show-requests"],
                ["check", "--config", config, "--format", "json"],
                [
                    "publish", "--config", config, "--category", "Sports", "--title", "Late winner in the derby",
                    "--yes",
                    "--format", "json",
                ],
                [
                    "publish", "--config", config, "--category", "Sports", "--title", "Another result", "--dry-run",
                    "--format", "json",
                ],
                ["hub", "test-send", "--config", config, "--category", "World", "--title", "Test", "--format", "json"],
                ["state", "check", "--config", config, "--format", "json"],
                ["state", "show", "--config", config, "--format", "json"],
                ["state", "export", "--config", config],
                ["parse", "\(feeds.baseURL)/world.xml", "--format", "json"],
                ["classify", "Parliament votes on the budget", "--format", "json"],
            ]
            // Requests inside the report: stdout stays one document, the signature redacted.
            let preview = try #require(
                try json(try await newspush(commands[0], environment: hubEnvironment).stdout) as? [String: Any])
            let requests = try #require(preview["requests"] as? [[String: Any]])
            #expect(
                (requests.first?["headers"] as? [String: String])?["Authorization"]?.contains("sig=<redacted>") == true)
            #expect(!String(describing: preview).contains(testKey))
            for arguments in commands {
                let result = try await newspush(arguments, environment: hubEnvironment)
                #expect(result.status == 0, "\(arguments.prefix(2)): \(result.stderr)")
                #expect(
                    (try? json(result.stdout)) != nil,
                    "\(arguments.prefix(2)) did not print one JSON document: \(result.stdout.prefix(300))")
            }
        }
    }

    @Test func editorsSeeWhyItemsWaitOrRepeat() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let general = """
            <rss version="2.0"><channel><title>General desk</title>
            <item><title>Zzqx vrbl plonk</title><link>https://news.example.org/odd</link><guid>odd</guid>
            <pubDate>\(rfc822(minutesAgo: 2))</pubDate></item>
            </channel></rss>
            """
        let feeds = try await LocalHTTPServer.serving([
            "/general.xml": CannedResponse(text: general),
            "/wire.xml": CannedResponse(
                text: rssFeed(
                    title: "Wire",
                    items: [
                        (
                            "w",
                            "Parliament passes the emergency budget after all-night "
                                + "session", 3
                        )
                    ])),
            "/paper.xml": CannedResponse(
                text: rssFeed(
                    title: "Paper", items: [("p", "Parliament passes emergency budget after all-night session", 2)])),
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)"}
            policy: {first_run: send, min_confidence: 0.99}
            feeds:
              - {url: "\(feeds.baseURL)/general.xml"}
              - {url: "\(feeds.baseURL)/wire.xml", category: World}
              - {url: "\(feeds.baseURL)/paper.xml", category: World}
            """)
        let preview = try await newspush(["preview", "--config", config], environment: hubEnvironment)
        #expect(preview.status == 0)
        let block = try #require(preview.stdout.components(separatedBy: "\nUnclassified\n").last)
        #expect(block.contains("Zzqx vrbl plonk"))
        #expect(block.contains("best guess") && block.contains("below policy.min_confidence 0.99"))
        #expect(
            preview.stdout.contains(
                "same story as \"Parliament passes the emergency budget after all-night session\" "
                    + "[guid:127.0.0.1/w] from this run"
            ))

        // Quiet hours from an hour before the session clock to an hour after: the reason says when
        // they end.
        let now = wholeSecondsNow()
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC") ?? .current
        func clock(_ date: Date) -> String {
            String(format: "%02d:%02d", utc.component(.hour, from: date), utc.component(.minute, from: date))
        }
        let (from, to) = (clock(now.addingTimeInterval(-3600)), clock(now.addingTimeInterval(3600)))
        try String(contentsOfFile: config, encoding: .utf8)
            .replacingOccurrences(
                of: "min_confidence: 0.99}",
                with: "min_confidence: 0.99, quiet_hours: {from: \"\(from)\", to: \"\(to)\", timezone: UTC}}"
            )
            .write(toFile: config, atomically: true, encoding: .utf8)
        let quiet = try await newspush(
            ["preview", "--config", config],
            environment: hubEnvironment.merging(testClock(now), uniquingKeysWith: { $1 }))
        #expect(quiet.stdout.contains("quiet hours until \(to) UTC"), "\(quiet.stdout)")
    }

    @Test func parseReadsStandardInputAndClassifyKeepsItsLines() async throws {
        let parsed = try await newspush(
            ["parse", "-"], input: rssFeed(title: "Stdin", items: [("s", "From standard input", 1)]))
        #expect(parsed.status == 0)
        #expect(parsed.stdout.contains("\"title\" : \"From standard input\""))
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let input = try folder.write(
            "items.jsonl",
            """
            {"title": "Parliament votes on the budget"}
            not json at all

            {"summary": "no title here"}
            {"title": "Cup final goes to penalties", "feed_category": "Sports"}

            """)
        let classified = try await newspush(["classify", "--input", input, "--format", "jsonl"])
        #expect(classified.status == 2)
        let lines = classified.stdout.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        #expect(lines.count == 5, "one output line per input line: \(classified.stdout)")
        #expect(lines[1].contains("\"error\"") && lines[1].contains("\"line\":2"))
        #expect(lines[2].contains("empty line") && lines[3].contains("\"error\""))
        #expect(lines[4].contains("\"category\": \"Sports\""))
        #expect(try await newspush(["classify", ""]).status == 64)
    }

    @Test func configurationMistakesAreExplained() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let missing = try await newspush(["check"], in: folder.path)
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("no config file at \(folder.path)/feeds.yaml"))
        #expect(missing.stderr.contains("--config"))

        let yaml = try folder.write(
            "syntax.yaml",
            "hub:\n  name: news\nfeeds:\n  - {url: \"http://a.example/rss\", name: [unclosed\n  - {url: "
                + "\"http://b.example/rss\"}\n"
        )
        let syntax = try await newspush(["check", "--config", yaml])
        #expect(syntax.status == 78)
        #expect(syntax.stderr.contains("\(yaml):4:"), "points at the line where the problem starts: \(syntax.stderr)")

        let bad = try folder.write(
            "bad.yaml",
            """
            hub: {name: news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            feeds:
              - {url: "http://", name: Desk}
              - {url: "https://b.example/rss", name: Desk}
            """)
        let problems = try await newspush(["check", "--config", bad], environment: hubEnvironment)
        #expect(problems.status == 78)
        #expect(problems.stderr.contains("bad.yaml:3: feeds[0].url: 'http://' is not a usable URL"))
        #expect(problems.stderr.contains("bad.yaml:4: feeds[1].name: the name 'Desk' is already used at line 3"))

        let empty = try folder.write(
            "empty.yaml",
            "hub: {name: news, connection_string: \"${NEWSPUSH_HUB_CONNECTION_STRING}\"}\nstate: "
                + "nowhere/ledger.db\nfeeds: []\n"
        )
        let check = try await newspush(["check", "--config", empty], environment: hubEnvironment)
        #expect(check.status == 78)
        #expect(check.stdout.contains("FAIL feeds: the feed list is empty"))
        #expect(check.stdout.contains("ok   hub credentials: tokens for hub 'news'"))
        #expect(check.stdout.contains("FAIL ledger folder: \(folder.path)/nowhere does not exist"))

        let good = try folder.write(
            "good.yaml",
            "hub: {name: news, connection_string: \"${NEWSPUSH_HUB_CONNECTION_STRING}\"}\nfeeds:\n  - {url: "
                + "\"https://a.example/rss\", name: Alpha}\n  - {url: \"https://b.example/rss\", name: Beta}\n"
        )
        let unknown = try await newspush(["preview", "--config", good, "--feed", "Gamma"], environment: hubEnvironment)
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("no feed named 'Gamma' in the config; feeds: Alpha, Beta"))
    }

    @Test func theEmulatorOnABusyPortSaysSoInOneLine() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let devices = try folder.write("devices.yaml", Self.devices)
            let busy = try await newspush(
                ["--port", "\(hub.port)", "--devices", devices], environment: hubEnvironment, binary: "newspush-hub")
            #expect(busy.status == 1)
            #expect(
                busy.stderr
                    == "newspush-hub: port \(hub.port) on 127.0.0.1 is already in use; give another with --port (0 "
                    + "picks a free one)\n"
            )
        }
    }

    @Test func completionsCompleteConfigFileNames() async throws {
        for (shell, option) in [("bash", "--config"), ("zsh", "--config"), ("fish", "'config='")] {
            let script = try await newspush(["--generate-completion-script", shell])
            #expect(script.status == 0)
            #expect(script.stdout.contains(option), "\(shell) completes the config option")
        }
        let bash = try await newspush(["--generate-completion-script", "bash"])
        #expect(bash.stdout.contains("yaml"), "--config completes .yaml files")
    }
}
