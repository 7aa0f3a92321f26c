import Foundation
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What a run of the built `newspush` binary printed and returned.
struct CommandResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    /// Seconds from the process's start to its exit, timed on the thread that waited for it (a
    /// test task can wait long to resume on a busy machine; this cannot).
    var seconds: Double = 0
}

/// Runs the built binary with arguments and environment, off the concurrency pool.
func newspush(
    _ arguments: [String], environment: [String: String] = [:], in folder: String? = nil,
    input: String? = nil, binary name: String = "newspush"
) async throws -> CommandResult {
    try await newspushRaw(try binaryURL(name).path, arguments, environment: environment, in: folder, input: input)
}

/// Runs any executable the same way (a tool that wraps the binary, such as `script`).
func newspushRaw(
    _ path: String, _ arguments: [String], environment: [String: String] = [:], in folder: String? = nil,
    input: String? = nil
) async throws -> CommandResult {
    await offThePool {
        var env = ["PATH": "/usr/bin:/bin", "NO_COLOR": "1"]
        env.merge(LocalPostgres.sharedEnvironment) { $1 }
        env.merge(environment) { $1 }
        let started = Date()
        // Not Foundation's Process: its run() crashes a test process holding many descriptors
        // (ChildProcess says why).
        do {
            let finished = try ChildProcess.run(
                path, arguments, environment: env, directory: folder, input: input.map { Data($0.utf8) })
            return CommandResult(
                status: finished.status, stdout: String(decoding: finished.stdout, as: UTF8.self),
                stderr: String(decoding: finished.stderr, as: UTF8.self), seconds: Date().timeIntervalSince(started))
        } catch {
            return CommandResult(status: -1, stdout: "", stderr: "\(error)")
        }
    }
}

/// The package's folder (this file's, two levels up).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// An executable of the package (`newspush`, `newspush-hub`) next to this test bundle in the build folder.
func binaryURL(_ name: String = "newspush") throws -> URL {
    var candidates: [URL] = []
    if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
    candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
    candidates.append(packageRoot.appendingPathComponent(".build/debug"))
    for folder in candidates {
        let url = folder.appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
            return url
        }
    }
    throw CLITestError.binaryNotFound(candidates.map(\.path))
}

enum CLITestError: Error { case binaryNotFound([String]) }

let hubEnvironment = ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString]

/// Starts `newspush ARGS` without waiting for it (its output discarded), with the hub's key,
/// the tests' PostgreSQL password and `environment`: for tests that kill it or race it.
func startNewspush(_ arguments: [String], environment: [String: String] = [:]) throws -> RunningChild {
    var env = hubEnvironment.merging(LocalPostgres.sharedEnvironment) { $1 }
    env["NO_COLOR"] = "1"
    return try ChildProcess.start(
        try binaryURL().path, arguments, environment: env.merging(environment) { $1 }, output: .discard,
        errors: .discard)
}

@Suite("newspush command line")
struct CLITests {
    /// A newsroom of one World feed on a local server and a local hub; returns the config path.
    func newsroom(folder: TemporaryFolder, feeds: LocalHTTPServer, hub: LocalHTTPServer, firstRun: String = "send")
        throws -> String
    {
        try folder.write(
            "feeds.yaml",
            """
            hub:
              name: breaking-news
              connection_string: ${NEWSPUSH_HUB_CONNECTION_STRING}
              endpoint: \(hub.baseURL)/
            policy: {first_run: \(firstRun)}
            feeds:
              - {url: "\(feeds.baseURL)/world.xml", name: World Desk, category: World}
            """)
    }

    func servers() async throws -> (LocalHTTPServer, LocalHTTPServer) {
        let feeds = try await LocalHTTPServer.serving([
            "/world.xml": CannedResponse(
                text: rssFeed(title: "World", items: [("a1", "Flood barrier closes", 3), ("a2", "Talks resume", 20)]))
        ])
        let hub = try await LocalHTTPServer.start { _ in
            CannedResponse(
                status: 201,
                headers: [
                    (
                        "Location",
                        "https://contoso-news.servicebus.windows.net/breaking-news/messages/NH-1?api-version=2020-06"
                    )
                ])
        }
        return (feeds, hub)
    }

    @Test func versionAndHelp() async throws {
        let version = try await newspush(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0.1.0")
        let help = try await newspush(["--help"])
        #expect(help.status == 0)
        for command in ["run", "preview", "parse", "check", "hub"] { #expect(help.stdout.contains(command)) }
        let runHelp = try await newspush(["run", "--help"])
        for flag in ["--dry-run", "--state", "--format", "--show-requests", "--feed", "--send-initial", "--config"] {
            #expect(runHelp.stdout.contains(flag), "run --help lacks \(flag)")
        }
    }

    @Test func usageErrorsExit64() async throws {
        #expect(try await newspush(["run", "--no-such-flag"]).status == 64)
        #expect(try await newspush(["frobnicate"]).status == 64)
    }

    @Test func hubTokenReproducesVectorV1() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            feeds: []
            """)
        let result = try await newspush(
            ["hub", "token", "--config", config, "--expiry", "1700000000"], environment: hubEnvironment)
        #expect(result.status == 0)
        #expect(
            result.stdout
                == "SharedAccessSignature sr=https%3a%2f%2fcontoso-news.servicebus.windows.net%2fbreaking-news&sig="
                + "4bSt6dDEW84kmiFi2wOpNGo14Ej0mMs8D%2FvmmxrF%2B8Y%3D&se=1700000000&skn="
                + "DefaultFullSharedAccessSignature\n"
        )
    }

    @Test func configErrorsExit78WithEveryProblem() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: news, connection_string: "${NOT_SET_ANYWHERE}"}
            fetch: {timeout: forever}
            feeds:
              - {url: "https://example.org/a.xml", category: Sport}
            """)
        let result = try await newspush(["run", "--config", config])
        #expect(result.status == 78)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("configuration error (3 problems)"))
        #expect(
            result.stderr.contains(
                "\(config):1: hub.connection_string: environment variable NOT_SET_ANYWHERE is not set"))
        #expect(result.stderr.contains("\(config):2: fetch.timeout:"))
        #expect(result.stderr.contains("\(config):4: feeds[0].category: unknown category 'Sport'"))
        let check = try await newspush(["check", "--config", config])
        #expect(check.status == 78)
        let missing = try await newspush(["preview", "--config", folder.file("nope.yaml")])
        #expect(missing.status == 78)
    }

    @Test func runThenRunAgainPushesEachStoryOnce() async throws {
        let (feeds, hub) = try await servers()
        defer {
            feeds.stop()
            hub.stop()
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try newsroom(folder: folder, feeds: feeds, hub: hub)
        let first = try await newspush(["run", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        #expect(report["dry_run"] as? Bool == false)
        let summary = try #require(report["summary"] as? [String: Any])
        #expect(summary["pushes_sent"] as? Int == 2)
        #expect(summary["feeds_ok"] as? Int == 1)
        #expect(summary["pushes_pending"] as? Int == 0)
        #expect(summary["pending_until"] is NSNull)
        let pushes = try #require(report["pushes"] as? [[String: Any]])
        #expect(pushes.allSatisfy { $0["status"] as? String == "sent" && $0["notification_id"] as? String == "NH-1" })
        #expect(await hub.requests().count == 2)
        #expect(FileManager.default.fileExists(atPath: folder.file("newspush-state.db")))

        let second = try await newspush(["run", "--config", config, "--report", "full"], environment: hubEnvironment)
        #expect(second.status == 0)
        #expect(second.stdout.contains("2 items already seen"))
        #expect(await hub.requests().count == 2)
        #expect(!second.stdout.contains(testKey) && !second.stderr.contains(testKey))
    }

    @Test func previewPrintsThePlanAndWritesNothing() async throws {
        let (feeds, hub) = try await servers()
        defer {
            feeds.stop()
            hub.stop()
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try newsroom(folder: folder, feeds: feeds, hub: hub)
        let preview = try await newspush(
            ["preview", "--config", config, "--show-requests"], environment: hubEnvironment)
        #expect(preview.status == 0, "stderr: \(preview.stderr)")
        #expect(preview.stdout.contains("would push [World] Breaking World News : Flood barrier closes"))
        #expect(preview.stdout.contains("would push [World] Breaking World News : Talks resume"))
        #expect(preview.stdout.contains("POST \(hub.baseURL)/breaking-news/messages/?api-version=2020-06"))
        #expect(preview.stdout.contains("ServiceBusNotification-Tags: World"))
        #expect(preview.stdout.contains("sig=<redacted>"))
        #expect(!preview.stdout.contains(testKey))
        #expect(await hub.requests().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: folder.file("newspush-state.db")))
        let dryRun = try await newspush(
            ["run", "--dry-run", "--config", config, "--format", "json"], environment: hubEnvironment)
        #expect(dryRun.status == 0)
        #expect(dryRun.stdout.contains("\"would-send\""))
        #expect(await hub.requests().isEmpty)
    }

    @Test func baselineFirstRunSaysSo() async throws {
        let (feeds, hub) = try await servers()
        defer {
            feeds.stop()
            hub.stop()
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try newsroom(folder: folder, feeds: feeds, hub: hub, firstRun: "baseline")
        let result = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(
            result.stdout.contains(
                "baseline: World Desk read for the first time: 2 items recorded as already known, none pushed"))
        let full = try await newspush(["preview", "--config", config], environment: hubEnvironment)
        #expect(full.stdout.contains("2 items already seen"), "the baseline is known: \(full.stdout)")
        #expect(await hub.requests().isEmpty)
    }

    @Test func lockedStateExits75() async throws {
        let (feeds, hub) = try await servers()
        defer {
            feeds.stop()
            hub.stop()
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try newsroom(folder: folder, feeds: feeds, hub: hub)
        let fd = open(folder.file("newspush-state.db.lock"), O_RDWR | O_CREAT, 0o644)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        defer { close(fd) }
        let result = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(result.status == 75)
        #expect(result.stderr.contains("another newspush run holds the lock"))
        #expect(await hub.requests().isEmpty)
    }

    /// A JSON state of an earlier version that cannot be migrated stops the run, untouched.
    @Test(arguments: [
        "{not json", "", "{\"version\": 99, \"items\": {}, \"feeds\": {}}",
        "{\"version\": 1, \"items\": {\"k\": {\"status\": \"bogus\"}}, \"feeds\": {}}",
    ])
    func unusableStateExits1AndIsLeftUntouched(content: String) async throws {
        let (feeds, hub) = try await servers()
        defer {
            feeds.stop()
            hub.stop()
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try newsroom(folder: folder, feeds: feeds, hub: hub)
        let statePath = try folder.write("newspush-state.json", content)
        let result = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(result.status == 1)
        #expect(result.stderr.contains(statePath))
        #expect(result.stderr.contains("nothing was sent") || result.stderr.contains("Nothing was sent"))
        #expect(try String(contentsOfFile: statePath, encoding: .utf8) == content)
        #expect(await hub.requests().isEmpty)
    }

    /// A ledger that is empty, not a database, not a ledger, or of a newer schema stops the run
    /// before anything is sent, and is left byte for byte as it was.
    @Test(arguments: ["", "garbage"])
    func unusableLedgerExits1AndIsLeftUntouched(kind: String) async throws {
        try await unusableLedger(kind)
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3"),
            "the sqlite3 tool prepares these ledgers"),
        arguments: ["sqlite-other", "newer"])
    func anotherDatabaseOrANewerLedgerExits1AndIsLeftUntouched(kind: String) async throws {
        try await unusableLedger(kind)
    }

    func unusableLedger(_ kind: String) async throws {
        let (feeds, hub) = try await servers()
        defer {
            feeds.stop()
            hub.stop()
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try newsroom(folder: folder, feeds: feeds, hub: hub)
        let ledger = folder.file("newspush-state.db")
        switch kind {
        case "sqlite-other", "newer":
            // A real database: another program's, or a ledger from a newer newspush.
            let make = try await newspush(["state", "migrate", "--state", ledger])
            #expect(make.status == 0, "\(make.stderr)")
            let sql =
                kind == "newer" ? "UPDATE meta SET value = '99' WHERE name = 'schema_version';" : "DROP TABLE meta;"
            _ = try ChildProcess.run("/usr/bin/sqlite3", [ledger, sql], environment: [:])
        default:
            try folder.write("newspush-state.db", kind)
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: ledger))
        let result = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(result.status == 1)
        #expect(result.stderr.contains(ledger))
        #expect(result.stderr.contains("nothing was sent") || result.stderr.contains("Nothing was sent"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: ledger)) == before)
        #expect(await hub.requests().isEmpty)
        let check = try await newspush(["state", "check", "--state", ledger])
        #expect(check.status == 1)
    }

    @Test func failedFeedExits2() async throws {
        let (feeds, hub) = try await servers()
        defer {
            feeds.stop()
            hub.stop()
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.baseURL)/"}
            policy: {first_run: send}
            feeds:
              - {url: "\(feeds.baseURL)/world.xml", category: World}
              - {url: "\(feeds.baseURL)/missing.xml", category: Sports}
            """)
        let result = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(result.status == 2)
        #expect(result.stdout.contains("missing.xml: HTTP 404"))
        #expect(await hub.requests().count == 2)
    }

    @Test func checkFetchReportsEveryFeed() async throws {
        let (feeds, hub) = try await servers()
        defer {
            feeds.stop()
            hub.stop()
        }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            feeds:
              - {url: "\(feeds.baseURL)/world.xml", name: World Desk, category: World}
              - {url: "\(feeds.baseURL)/missing.xml", name: Missing, category: Sports}
            """)
        let plain = try await newspush(["check", "--config", config], environment: hubEnvironment)
        #expect(plain.status == 0)
        #expect(plain.stdout.contains(": ok (2 feeds"))
        let fetched = try await newspush(["check", "--fetch", "--config", config], environment: hubEnvironment)
        #expect(fetched.status == 2)
        #expect(fetched.stdout.contains("ok   feed World Desk: rss2.0, 2 items"))
        #expect(fetched.stdout.contains("FAIL feed Missing: \(feeds.baseURL)/missing.xml: HTTP 404"))
    }

    @Test func parsePrintsSpecJSON() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let feed = try folder.write("a.xml", rssFeed(title: "Desk", items: [("x1", "Hello &amp; welcome", 1)]))
        let bad = try folder.write("b.html", "<html><body>not a feed</body></html>")
        let result = try await newspush(["parse", feed, bad, "--format", "jsonl"])
        #expect(result.status == 2)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(first["format"] as? String == "rss2.0")
        let item = try #require((first["items"] as? [[String: Any]])?.first)
        #expect(item["title"] as? String == "Hello & welcome")
        #expect(item["id"] as? String == "x1")
        #expect(item.keys.contains("updated"))
        let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect((second["error"] as? String)?.contains("HTML page") == true)
    }

    @Test func theExamplesPreviewOffline() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let result = try await newspush(
            [
                "preview", "--config", root.appendingPathComponent("Examples/feeds.yaml").path,
                "--state", folder.file("state.db"),
            ],
            environment: hubEnvironment.merging(["NEWSPUSH_HUB_ENDPOINT": "http://127.0.0.1:9/"]) { $1 })
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(
            result.stdout.contains("would push [World] Breaking World News : Harbour city opens its new flood barrier"))
        #expect(
            result.stdout.contains("would push [Technology || Science] Tech: Open-source compiler reaches version 2.0"))
        #expect(result.stdout.contains("same-story"))
    }
}

@Suite("classify command")
struct ClassifyCLITests {
    @Test func classifiesTextAndJSONLines() async throws {
        let one = try await newspush(["classify", "Striker scores twice as United win the cup final"])
        #expect(one.status == 0)
        #expect(one.stdout.hasPrefix("{\"category\": \"Sports\", \"confidence\": "))
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let input = try folder.write(
            "items.jsonl",
            """
            {"title": "Central bank raises interest rates again", "extra": 1}
            {"title": "Anything at all", "feed_category": "Science"}
            {"title": "Match report", "categories": ["Politique"]}
            """)
        let lines = try await newspush(["classify", "--input", input, "--format", "jsonl"])
        #expect(lines.status == 0, "\(lines.stderr)")
        let results = lines.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(results.map { $0["category"] as? String } == ["Business", "Science", "Politics"])
        #expect(results[1]["confidence"] as? Double == 1)
        let bad = try await newspush(["classify", "--input", try folder.write("bad.jsonl", "{not json}\n")])
        #expect(bad.status == 2)
        #expect(bad.stdout.contains("bad.jsonl:1: not a JSON object with a title"))
    }
}

extension ClassifyCLITests {
    /// A file of several chunks (mostly items with their feed's category, so the debug build's
    /// encoder has little to do), from a file and from stdin: one answer per line, in order, as
    /// JSON Lines and as one JSON array, an error object in place of each line that is no item.
    @Test func aLargeInputIsAnsweredLineForLine() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let lines = (0..<1300).map { index in
            index == 700
                ? "no json here"
                : index % 100 != 1
                    ? #"{"title": "Anything \#(index)", "feed_category": "Science"}"#
                    : #"{"title": "Striker scores twice in final \#(index)"}"#
        }
        let text = lines.joined(separator: "\n") + "\n"
        let input = try folder.write("items.jsonl", text)
        for (arguments, stdin) in [(["--input", input], nil), (["--input", "-"], text)] as [([String], String?)] {
            let result = try await newspush(["classify", "--format", "jsonl"] + arguments, input: stdin)
            #expect(result.status == 2, "\(arguments): one bad line")
            let answers = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(answers.count == lines.count, "\(arguments)")
            let categories = answers.map {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["category"] as? String
            }
            #expect(categories[0] == "Science" && categories[1] == "Sports" && categories[1201] == "Sports")
            #expect(categories[700] == nil && answers[700].contains(":701: not a JSON object"), "\(answers[700])")
        }
        let array = try await newspush(["classify", "--input", input, "--format", "json"])
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(array.stdout.utf8)) as? [[String: Any]])
        #expect(parsed.count == lines.count)
    }
}
