import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NewsPushSessions
import NewsPushTesting

/// `newspush-bench ledger`: an idle run (every feed answers 304) of the release `newspush` binary
/// over a ledger of many stories, beside the JSON state store it replaced, in one run.
struct LedgerIdleRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract:
            "Time an idle `newspush run` (all feeds 304) over a large ledger, beside the JSON store's load and save "
            + "of the same stories."
    )

    @Option(help: "Number of feeds.") var feeds = 1000
    @Option(help: "Stories in each feed (feeds × stories are in the ledger).") var stories = 150
    @Option(help: "fetch.concurrency (and per_host: every feed is on one local host).") var concurrency = 64
    @Option(help: "Repetitions; the best and median are reported.") var repeats = 3
    @Flag(help: "Also the same runs over a PostgreSQL ledger (a local server started for the run, fsync on).")
    var postgres = false

    func run() async throws {
        let perFeed = stories
        let server = try await LocalHTTPServer.start { Self.wire($0, stories: perFeed) }
        defer { server.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let list = (0..<feeds).map { "  - {url: \"\(server.baseURL)/feed/\($0).xml\", category: World}" }.joined(
            separator: "\n")
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "http://127.0.0.1:9/"}
            fetch: {concurrency: \(concurrency), per_host: \(concurrency), timeout: 60s, max_bytes: 50MB}
            feeds:
            \(list)
            """)
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let binary = here.appendingPathComponent("newspush").path
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]

        // The first run reads every feed in full and records its stories as a baseline.
        let baseline = try await spawn(binary, ["run", "-q", "--config", config], environment)
        let ledger = folder.file("newspush-state.db")
        let size = (try? FileManager.default.attributesOfItem(atPath: ledger)[.size] as? Int) ?? 0
        var idle: [(Double, Int)] = []
        for _ in 0..<repeats { idle.append(try await spawn(binary, ["run", "-q", "--config", config], environment)) }
        if postgres { try await postgresRuns(binary, config: config, environment: environment) }

        // The JSON store with the same stories and feeds, loaded and saved as every run did.
        let json = folder.file("state.json")
        try Self.legacyState(feeds: feeds, stories: perFeed, baseURL: server.baseURL).save(path: json)
        let jsonSize = (try? FileManager.default.attributesOfItem(atPath: json)[.size] as? Int) ?? 0
        var store: [(Double, Int)] = []
        for _ in 0..<repeats {
            store.append(
                try await spawn(here.appendingPathComponent("newspush-bench").path, ["json-idle", json], environment))
        }

        let describe = FetchFeeds.describe
        print(
            String(
                format: "first run (baseline of %d stories from %d feeds): %.3f s; ledger %.1f MB", feeds * perFeed,
                feeds, baseline.0, Double(size) / 1_048_576))
        print("idle newspush run, \(feeds) feeds all 304, \(feeds * perFeed) stories in the ledger: \(describe(idle))")
        print(
            String(
                format: "JSON store of the same stories (%.1f MB), load + save only (no fetching): ",
                Double(jsonSize) / 1_048_576) + describe(store))
    }

    /// The same first and idle runs over a PostgreSQL ledger (a local server, fsync on).
    private func postgresRuns(_ binary: String, config: String, environment: [String]) async throws {
        let server = try await LocalPostgres.start(fsync: true)
        defer { server.stop() }
        let state = try await server.createDatabase()
        let shared = environment + [server.environmentEntry]
        let arguments = ["run", "-q", "--config", config, "--state", state]
        let first = try await spawn(binary, arguments, shared)
        var runs: [(Double, Int)] = []
        for _ in 0..<repeats { runs.append(try await spawn(binary, arguments, shared)) }
        let times = runs.map(\.0).sorted()
        print(
            String(
                format: "PostgreSQL ledger: first run %.3f s; idle run best %.3f s, median %.3f s, peak RSS %.1f MB",
                first.0, times[0], times[times.count / 2], Double(runs.map(\.1).max() ?? 0) / 1024))
    }

    /// `/feed/N.xml` of the local wire: `stories` items three minutes apart, then 304 to a
    /// request that has them (ETag "v1").
    static func wire(_ request: RecordedRequest, stories: Int) -> CannedResponse {
        if request.header("If-None-Match") == "\"v1\"" {
            return CannedResponse(status: 304, headers: [("ETag", "\"v1\"")])
        }
        let feed = request.uri.split(separator: "/").last.map { String($0.dropLast(4)) } ?? "0"
        let items = (0..<stories).map {
            (guid: "f\(feed)-\($0)", title: "Story \($0) of desk \(feed) on the local wire", minutesAgo: Double($0) * 3)
        }
        return CannedResponse(
            headers: [("ETag", "\"v1\""), ("Content-Type", "application/rss+xml")],
            text: rssFeed(title: "Desk \(feed)", items: items))
    }

    /// A JSON state as the old store kept it: every story of every feed, seen.
    static func legacyState(feeds: Int, stories: Int, baseURL: String) -> LegacyJSONState {
        var state = LegacyJSONState()
        let now = Date()
        for feed in 0..<feeds {
            let url = "\(baseURL)/feed/\(feed).xml"
            state.feeds[url] = LegacyJSONState.Feed(
                validators: ConditionalGetValidators(etag: "\"v1\""), lastFetched: now)
            for i in 0..<stories {
                state.stories["guid:127.0.0.1/f\(feed)-\(i)"] = LegacyJSONState.Story(
                    status: "seen", feed: url, title: "Story \(i) of desk \(feed) on the local wire",
                    link: "https://news.example.org/f\(feed)-\(i)",
                    category: "World", firstSeen: now, lastSeen: now,
                    published: now.addingTimeInterval(-Double(i) * 180))
            }
        }
        return state
    }
}

/// `newspush-bench json-idle FILE` (used by `ledger`): what the JSON store did in every run,
/// feeds answering 304 included: load the whole file, refresh every story, write it back whole.
struct JSONStoreIdle: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "json-idle", shouldDisplay: false)

    @Argument var path: String

    func run() throws {
        var state = try LegacyJSONState.load(path: path)
        let now = Date()
        for key in state.stories.keys { state.stories[key]?.lastSeen = now }
        try state.save(path: path)
    }
}
