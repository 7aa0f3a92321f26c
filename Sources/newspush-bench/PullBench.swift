import ArgumentParser
import Foundation
import NewsPushTesting

/// `newspush-bench changed`: a run over feeds that all changed (no 304) and whose items the
/// ledger already knows, so each feed's stories are asked about: SQLite, PostgreSQL on the same
/// machine, and PostgreSQL a network hop away (a proxy adding a round-trip delay), in one run.
struct ChangedFeedsRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changed",
        abstract:
            "Time `newspush run` over feeds that all changed and whose items the ledger knows: SQLite, PostgreSQL, "
            + "and PostgreSQL behind a delaying proxy."
    )

    @Option(help: "Number of feeds.") var feeds = 1000
    @Option(help: "Stories in each feed.") var stories = 30
    @Option(help: "fetch.concurrency (and per_host: every feed is on one local host).") var concurrency = 64
    @Option(help: "Repetitions; the best and median are reported.") var repeats = 3
    @Option(help: "Milliseconds the proxy adds to each round trip to PostgreSQL.") var roundTripMs = 2.0
    @Option(help: "The newspush binary to time (default: the one beside this bench).") var binary: String?
    @Option(help: "Another newspush binary (an earlier build) timed the same way in the same run.")
    var reference: String?

    func run() async throws {
        let perFeed = stories
        let server = try await LocalHTTPServer.start { Self.wire($0, stories: perFeed) }
        defer { server.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let list = (0..<feeds).map { "  - {url: \"\(server.baseURL)/feed/\($0).xml\", category: World}" }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "http://127.0.0.1:9/"}
            fetch: {concurrency: \(concurrency), per_host: \(concurrency), timeout: 60s, max_bytes: 50MB}
            feeds:
            \(list.joined(separator: "\n"))
            """)
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let postgres = try await LocalPostgres.start(fsync: true)
        defer { postgres.stop() }
        for binary in [binary ?? here.appendingPathComponent("newspush").path] + (reference.map { [$0] } ?? []) {
            try await measure(binary, config: config, postgres: postgres)
        }
    }

    /// One binary's runs: on SQLite, on PostgreSQL here, on PostgreSQL behind the proxy.
    private func measure(_ binary: String, config: String, postgres: LocalPostgres) async throws {
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]
        let folder = URL(fileURLWithPath: config).deletingLastPathComponent()
        try? FileManager.default.removeItem(at: folder.appendingPathComponent("newspush-state.db"))

        func timed(_ arguments: [String], _ environment: [String]) async throws -> String {
            _ = try await spawn(binary, arguments, environment)  // the baseline: every story recorded
            var runs: [(Double, Int)] = []
            for _ in 0..<repeats { runs.append(try await spawn(binary, arguments, environment)) }
            let times = runs.map(\.0).sorted()
            return String(
                format: "best %.3f s, median %.3f s, peak RSS %.1f MB", times[0], times[times.count / 2],
                Double(runs.map(\.1).max() ?? 0) / 1024)
        }
        let base = ["run", "-q", "--config", config]
        print("\(feeds) feeds of \(stories) known stories, all changed, concurrency \(concurrency), \(binary)")
        print("SQLite ledger:                      " + (try await timed(base, environment)))
        let shared = environment + [postgres.environmentEntry]
        let near = try await postgres.createDatabase()
        print("PostgreSQL on this machine:         " + (try await timed(base + ["--state", near], shared)))
        let proxy = try DelayingTCPProxy(upstreamPort: postgres.port, roundTrip: roundTripMs / 1000)
        defer { proxy.stop() }
        let far = try await postgres.createDatabase().replacingOccurrences(
            of: "127.0.0.1:\(postgres.port)/", with: "127.0.0.1:\(proxy.port)/")
        print(
            String(format: "PostgreSQL %.1f ms a round trip away: ", roundTripMs)
                + (try await timed(base + ["--state", far], shared))
                + ", \(proxy.clientChunks / (repeats + 1)) messages to the server per run")
    }

    /// `/feed/N.xml`: `stories` items three minutes apart, in full every time (no validators).
    static func wire(_ request: RecordedRequest, stories: Int) -> CannedResponse {
        let feed = request.uri.split(separator: "/").last.map { String($0.dropLast(4)) } ?? "0"
        let items = (0..<stories).map {
            (guid: "f\(feed)-\($0)", title: "Story \($0) of desk \(feed) on the local wire", minutesAgo: Double($0) * 3)
        }
        return CannedResponse(
            headers: [("Content-Type", "application/rss+xml")], text: rssFeed(title: "Desk \(feed)", items: items))
    }
}
