import ArgumentParser
import FeedParsing
import Foundation
import Logging
import NewsClassifier
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NewsPushSessions
import NewsPushTesting
import NotificationHubs
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Benchmarks (not tests: a timing never fails anything). Each prints its figures.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "newspush-bench",
        abstract: "Benchmarks for newspush.",
        subcommands: [
            HubPushes.self, FetchFeeds.self, ParseFeeds.self, DumpFeeds.self, ClassifyItems.self, PlanItems.self,
            LedgerIdleRun.self, JSONStoreIdle.self, DeskPages.self, ChangedFeedsRun.self, ApiRegistrations.self,
            SurgeRegistrations.self, FirstAlert.self, AlertEvents.self,
        ])
}

/// `newspush-bench hub`: N pushes through the whole run pipeline to the local emulator.
struct HubPushes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract:
            "Push N items through a full `newspush run` to the in-process hub emulator, and time the bare client "
            + "beside it."
    )

    @Option(help: "Pushes per measurement.")
    var pushes = 1000

    @Option(help: "hub.concurrency for the run.")
    var concurrency = 8

    @Option(help: "Repetitions; the best and median are reported.")
    var repeats = 3

    @Flag(help: "Also journal into a PostgreSQL ledger (a local server started for the run), beside SQLite.")
    var postgres = false

    func run() async throws {
        let server = postgres ? try await LocalPostgres.start(fsync: true) : nil
        defer { server?.stop() }
        if let server { setenv(LocalPostgres.passwordVariable, server.password, 1) }
        let hub = try await startWorldHub()
        defer { hub.stop() }
        var pipelineTimes: [Double] = []
        var postgresTimes: [Double] = []
        var sequentialTimes: [Double] = []
        for round in 0..<repeats * (postgres ? 2 : 1) {
            let ledger = round >= repeats ? try await server?.createDatabase() : nil
            let (elapsed, session) = try await timedRun(round: round, ledger: ledger, server: server, hub: hub)
            if ledger != nil {
                postgresTimes.append(elapsed)
            } else {
                pipelineTimes.append(elapsed)
                sequentialTimes.append(try await bareClient(session))
            }
        }
        func summary(_ times: [Double]) -> String {
            let sorted = times.sorted()
            return String(
                format: "best %.3f s, median %.3f s (%.0f pushes/s at best)", sorted[0], sorted[sorted.count / 2],
                Double(pushes) / sorted[0])
        }
        print(
            "newspush run, \(pushes) pushes, hub.concurrency \(concurrency), state journalled: "
                + "\(summary(pipelineTimes))"
        )
        if postgres {
            print(
                "newspush run, \(pushes) pushes, hub.concurrency \(concurrency), PostgreSQL ledger: "
                    + "\(summary(postgresTimes))")
        }
        print("bare client, \(pushes) sequential sends, no state:           \(summary(sequentialTimes))")
        print("deliveries logged by the emulator: \(await hub.emulator.allDeliveries().count)")
    }
}

extension HubPushes {
    /// One round: a feed of `pushes` new stories, and the seconds a full run takes to push them
    /// (journalled into `ledger`, else a SQLite file).
    func timedRun(round: Int, ledger: String?, server: LocalPostgres?, hub: LocalHub) async throws -> (
        Double, RunSession
    ) {
        let items = (0..<pushes).map {
            (guid: "r\(round)-\($0)", title: "Story \($0) of round \(round)", minutesAgo: Double($0 % 120))
        }
        let feeds = try await LocalHTTPServer.serving([
            "/world.xml": CannedResponse(text: rssFeed(title: "World", items: items))
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let configPath = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", concurrency: \(concurrency)}
            policy: {first_run: send, budget: {per_category: \(pushes), per: 1h}}
            \(ledger.map { "state: \"\($0)\"" } ?? "")
            feeds:
              - {url: "\(feeds.baseURL)/world.xml", category: World}
            """)
        var environment = ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString]
        if let server { environment[LocalPostgres.passwordVariable] = server.password }
        let config = try ConfigLoader(environment: environment).load(path: configPath)
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let session = RunSession(context: SessionContext(config: config, logger: logger))
        let (elapsed, sent) = await offThePool { () -> (Double, Int) in
            var result: RunResult?
            let elapsed = seconds { result = try? session.run(RunRequest()) }
            return (elapsed, result?.report.summary.pushesSent ?? 0)
        }
        guard sent == pushes else { throw ValidationError("only \(sent) of \(pushes) pushes were sent") }
        return (elapsed, session)
    }

    /// The bare client, one request after another on one kept-alive connection.
    func bareClient(_ session: RunSession) async throws -> Double {
        let client = try session.context.hubClient()
        let pushes = self.pushes
        return await offThePool { () -> Double in
            seconds {
                for i in 0..<pushes {
                    guard
                        let request = try? client.templateRequest(
                            properties: ["messageParam": "bare \(i)"], tags: "World")
                    else { continue }
                    _ = client.send(request)
                }
            }
        }
    }
}

/// `newspush-bench fetch`: a full dry run of the real `newspush` binary over N feeds on a local
/// server that answers each after a delay, then again with every feed answering 304.
struct FetchFeeds: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Time `newspush run --dry-run` over N slow local feeds (200 and all-304), with its peak RSS.")

    @Option(help: "Number of feeds.") var feeds = 1000
    @Option(help: "Seconds each answer is delayed.") var delay = 0.1
    @Option(help: "fetch.concurrency (and fetch.per_host: every feed is on one local host).") var concurrency = 100
    @Option(help: "Repetitions; the best and median are reported.") var repeats = 3
    @Option(help: "Items per feed (each feed's own stories).") var items = 8
    @Option(help: "The newspush binary to run (default: the one beside this tool), to measure two builds alike.")
    var binary: String?

    func run() async throws {
        // After the first real run every feed lists one more item, dated now (a new ETag): the
        // next real run has a new story per feed for the plan and pushes to the emulator.
        let generation = Mutex(1)
        let server = try await feedServer { generation.withLock { $0 } }
        defer { server.stop() }
        let hub = try await startWorldHub()
        defer { hub.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let list = (0..<feeds).map { "  - {url: \"\(server.baseURL)/feed/\($0).xml\", category: World}" }.joined(
            separator: "\n")
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)"}
            fetch: {concurrency: \(concurrency), per_host: \(concurrency), timeout: 20s}
            feeds:
            \(list)
            """)
        let binary =
            self.binary
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
                "newspush"
            ).path
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]

        var fresh: [(Double, Int)] = []
        for _ in 0..<repeats {
            fresh.append(
                try await spawn(
                    binary, ["run", "--dry-run", "-q", "--config", config, "--format", "json"], environment))
        }
        // A real run (first run: a baseline, nothing pushed) records every item and stores the ETags.
        let baseline = try await spawn(binary, ["run", "-q", "--config", config], environment)
        generation.withLock { $0 = 2 }
        let pushing = try await spawn(binary, ["run", "-q", "--config", config], environment)
        let delivered = await hub.emulator.allDeliveries().count
        var notModified: [(Double, Int)] = []
        for _ in 0..<repeats {
            notModified.append(try await spawn(binary, ["run", "--dry-run", "-q", "--config", config], environment))
        }
        let describe = Self.describe
        let floor = Double(feeds) * delay / Double(concurrency)
        print(
            "\(feeds) feeds of \(items) items answering 200 after \(Int(delay * 1000)) ms, dry run, concurrency \(concurrency): "
                + "\(describe(fresh)) (fetch floor \(String(format: "%.1f", floor)) s)"
        )
        print("first real run (records \(feeds * items) stories, sends nothing):        \(describe([baseline]))")
        print(
            "real run, one new item per feed, pushed to the emulator:          \(describe([pushing])), \(delivered) delivered"
        )
        print(
            "\(feeds) feeds answering 304 after \(Int(delay * 1000)) ms, dry run:                  "
                + "\(describe(notModified))"
        )
    }
}

extension FetchFeeds {
    /// The feeds, each answering after `delay` with its items and an ETag of the generation
    /// (304 when the client has it); from generation 2 each lists one more story, dated now.
    /// Every feed's document of both generations is written before the server starts and then
    /// served as it is, as a feed's server or CDN does: writing it for every request (a date
    /// formatter per item) took half of this machine's two cores from the run being measured.
    func feedServer(generation: @escaping @Sendable () -> Int) async throws -> LocalHTTPServer {
        let (delay, now) = (self.delay, Date())
        var documents: [String: String] = [:]
        for feed in 0..<feeds {
            for current in 1...2 {
                documents["\(feed) \(current)"] = Self.document(
                    feed: "\(feed)", items: items, generation: current, now: now)
            }
        }
        let written = documents
        return try await LocalHTTPServer.start { request in
            try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            let current = generation()
            if request.header("If-None-Match") == "\"v\(current)\"" { return CannedResponse(status: 304) }
            let feed = String(request.uri.split(separator: "/").last?.prefix { $0 != "." } ?? "")
            guard let document = written["\(feed) \(current)"] else { return CannedResponse(status: 404) }
            return CannedResponse(
                headers: [("ETag", "\"v\(current)\""), ("Content-Type", "application/rss+xml")], text: document)
        }
    }

    /// Feed `feed`'s document in generation `generation`.
    static func document(feed: String, items count: Int, generation: Int, now: Date) -> String {
        var items = (0..<count).map {
            (
                guid: "\(feed)-g\($0)", title: "Story \($0) of feed \(feed) on the local desk",
                published: now.addingTimeInterval(Double(-420 * ($0 + 1)))
            )
        }
        if generation > 1 {
            items.insert(
                (guid: "\(feed)-new", title: "Breaking story of feed \(feed) on the local desk", published: now), at: 0)
        }
        return rssFeed(title: "Desk \(feed)", dated: items)
    }

    /// Best and median time and the peak RSS of `runs`.
    static func describe(_ runs: [(Double, Int)]) -> String {
        let times = runs.map(\.0).sorted()
        let rss = runs.map(\.1).max() ?? 0
        return String(
            format: "best %.3f s, median %.3f s, peak RSS %.1f MB", times[0], times[times.count / 2],
            Double(rss) / 1024)
    }
}

/// `newspush-bench parse`: parse a folder of feeds N times with the feed parser and, in the same
/// run, with a bare libxml2 SAX pass over the same bytes.
struct ParseFeeds: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parse",
        abstract: "Parse every .xml file of a folder N times; MB/s of FeedParser beside a bare libxml2 SAX pass.")

    @Argument(help: "A folder of feed files (e.g. ../shared/corpus/realworld).") var folder: String
    @Option(help: "Passes over the folder.") var passes = 5
    @Option(help: "Only files of at least this many bytes.") var minBytes = 10_000
    @Option(help: "Only files of at most this many bytes.") var maxBytes = 3_000_000
    @Option(help: "Also time one synthetic feed with a single text node of this many MB (0: skip).") var hugeNodeMB = 50
    @Option(help: "List this many files where FeedParser takes longest beyond the bare pass.") var worst = 0
    @Flag(help: "Time FeedParser only (for profilers: no bare pass, no ratio).") var feedOnly = false

    func run() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".xml") }.sorted()
        let named = names.compactMap { name in
            FileManager.default.contents(atPath: (folder as NSString).appendingPathComponent(name)).map { (name, $0) }
        }
        .filter { $0.1.count >= minBytes && $0.1.count <= maxBytes }
        let files = named.map(\.1)
        let megabytes = Double(files.reduce(0) { $0 + $1.count }) / 1_048_576
        var items = 0, elements = 0
        // Each file is parsed both ways back to back, and each file's best time of all passes
        // counts: the two then see the same machine (this one's speed changes from minute to
        // minute with its neighbours' load), and the ratio stays steady.
        var feedTimes = [Double](repeating: .infinity, count: files.count), saxTimes = feedTimes
        for _ in 0..<passes {
            for (index, file) in files.enumerated() {
                feedTimes[index] = min(
                    feedTimes[index],
                    seconds {
                        items += (try? FeedParser.parse(file, url: "https://example.com/feed.xml"))?.items.count ?? 0
                    })
                if !feedOnly { saxTimes[index] = min(saxTimes[index], seconds { elements += BareSAXPass.run(file) }) }
            }
        }
        if worst > 0, !feedOnly { printWorst(named.map(\.0), files, feedTimes, saxTimes) }
        let feed = megabytes / feedTimes.reduce(0, +), sax = megabytes / saxTimes.reduce(0, +)
        print(
            String(
                format:
                    "%d files, %.1f MB (%d–%d bytes each), each file's best of %d passes, parsed both ways back to "
                    + "back:",
                files.count, megabytes, minBytes, maxBytes, passes))
        print(
            String(
                format: "  FeedParser (pre-pass, SAX, items, HTML to text, dates): %.1f MB/s, %.2f ms per 100 KB", feed,
                100.0 / 1024 / feed * 1000))
        if feedOnly {
            print("  (bare pass skipped: --feed-only)")
        } else {
            print(String(format: "  bare libxml2 SAX pass over the same bytes:             %.1f MB/s", sax))
            print(String(format: "  ratio: %.3f of the bare pass; %d items per pass", feed / sax, items / passes))
        }
        if hugeNodeMB > 0 { timeHugeNodes() }
    }

    /// The files where FeedParser spends most beyond the bare pass.
    private func printWorst(_ names: [String], _ files: [Data], _ feedTimes: [Double], _ saxTimes: [Double]) {
        print("files where FeedParser spends most beyond the bare pass:")
        let rows = files.indices.map { (names[$0], files[$0].count, feedTimes[$0], saxTimes[$0]) }.sorted {
            ($0.2 - $0.3) > ($1.2 - $1.3)
        }
        for row in rows.prefix(worst) {
            print(
                "  \(row.0), \(row.1) bytes: "
                    + String(
                        format: "FeedParser %.2f ms, bare %.2f ms, ratio %.2f", row.2 * 1000, row.3 * 1000,
                        row.3 / row.2))
        }
    }

    /// One feed whose single text node is a fifth of `hugeNodeMB`, then all of it: linear?
    private func timeHugeNodes() {
        for size in [hugeNodeMB / 5, hugeNodeMB] where size > 0 {
            var document = Data(
                "<rss version=\"2.0\"><channel><title>Big</title><item><title>One item</title><description>".utf8)
            let line = Data("A long article body, with words &amp; entities, repeated to fill one text node. ".utf8)
            while document.count < size * 1_048_576 { document.append(line) }
            document.append(Data("</description></item></channel></rss>".utf8))
            let elapsed = seconds { _ = try? FeedParser.parse(document, url: nil) }
            print(
                String(
                    format: "  one %d MB text node: %.2f s (%.1f MB/s)", size, elapsed,
                    Double(document.count) / 1_048_576 / elapsed))
        }
    }
}

/// `newspush-bench dump`: every field the parser reads from each file, one JSON line per file
/// (sorted keys), so a change to the parser can be compared with the one before it
/// (`diff` of two dumps).
struct DumpFeeds: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump", abstract: "Print everything the parser reads from feed files, one JSON line per file.")

    @Argument(help: "Feed files.") var files: [String]
    @Option(help: "Resolve relative links against this URL.") var base: String?

    func run() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            let line: String
            do {
                let feed = try FeedParser.parse(data, url: base)
                line = String(decoding: try encoder.encode(feed), as: UTF8.self)
            } catch {
                line = "{\"error\":\"\(error)\"}"
            }
            print("\((file as NSString).lastPathComponent)\t\(line)")
        }
    }
}

/// `newspush-bench classify`: the shipped text model's load time and items classified per
/// second on one core (this thread), over the items of a JSON Lines file.
struct ClassifyItems: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "classify",
        abstract: "Time loading the bundled text model and classifying every item of a JSON Lines file on one thread.")

    @Argument(help: "Items with title and summary (e.g. ../shared/classify/train.jsonl).") var file: String
    @Option(help: "Passes over the items; the best is reported.") var passes = 5

    @Option(help: "Items the full encoder classifies per pass (it is a hundred times slower).") var encoderItems = 1000
    @Flag(help: "The full encoder on the portable loops, not oneDNN or OpenBLAS.") var portable = false
    @Flag(help: "The full encoder on OpenBLAS even where oneDNN is installed.") var openblas = false

    func run() throws {
        if portable { SentenceEncoder.usePortableLoops() }
        if openblas { SentenceEncoder.passOverOneDNN() }
        var model: TextModel?
        var combined: TextClassifier?
        var full: TextClassifier?
        let loads = try (0..<10).map { _ in try seconds { model = try TextModel.bundled() } }
        let combinedLoads = try (0..<10).map { _ in
            try seconds { combined = try TextClassifier.bundled(.table).classifier }
        }
        let fullLoads = try (0..<5).map { _ in try seconds { full = try TextClassifier.bundled(.full).classifier } }
        guard let model, let combined, combined.encoder != nil else {
            throw ValidationError("the distilled encoder's files are not in the bundle")
        }
        guard let full, full.encoder?.encoder is SentenceEncoder else {
            throw ValidationError("the full encoder's files are not in the bundle")
        }
        let examples = try ClassifierTraining.load(path: file)
        var counts = [Int](repeating: 0, count: NewsCategory.allCases.count)
        func best(_ items: ArraySlice<ClassifierTraining.Example>, _ classify: (String, String) -> NewsCategory)
            -> Double
        {
            fastest(
                (0..<passes).map { _ in
                    seconds {
                        for example in items { counts[classify(example.title, example.summary).index] += 1 }
                    }
                })
        }
        let subset = examples.prefix(encoderItems)
        let cores = "\(ProcessInfo.processInfo.activeProcessorCount) cores"
        let rows = [
            (
                "bag of words", loads, "one thread",
                Double(examples.count) / best(examples[...]) { model.classify(title: $0, summary: $1).category }
            ),
            (
                "bag of words + distilled encoder", combinedLoads, "one thread",
                Double(examples.count) / best(examples[...]) { combined.classify(title: $0, summary: $1).category }
            ),
            (
                "bag of words + full encoder (\(SentenceEncoder.backend)), one item at a time", fullLoads, "one thread",
                Double(subset.count) / best(subset) { full.classify(title: $0, summary: $1).category }
            ),
            (
                "bag of words + full encoder, a run's items together", fullLoads, cores,
                Double(subset.count)
                    / fastest(
                        (0..<passes).map { _ in
                            seconds { _ = full.classify(subset.map { ($0.title, $0.summary) }) }
                        })
            ),
        ]
        Self.printRows(rows)
    }

    /// Each classifier's load times and rate.
    private static func printRows(_ rows: [(String, [Double], String, Double)]) {
        for (name, times, how, rate) in rows {
            let sorted = times.sorted()
            print(
                String(
                    format:
                        "%@: load first %.1f ms, median %.1f ms; %.0f items/s on %@ (%.1f µs per item); 100 "
                        + "undecided items: %.1f ms + load",
                    name, times[0] * 1000, sorted[times.count / 2] * 1000, rate, how, 1e6 / rate, 100 / rate * 1000))
        }
    }
}

/// Wall-clock seconds `body` takes.
/// The best of several timings (0 when there are none).
func fastest(_ times: [Double]) -> Double { times.min() ?? 0 }

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now()
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}

/// Runs a command, returning wall seconds and peak RSS in KB (from wait4's rusage).
func spawn(_ path: String, _ arguments: [String], _ environment: [String]) async throws -> (Double, Int) {
    let measured = try await measuredRun(path, arguments, environment: environment)
    guard measured.status == 0 || measured.status == 2 else {
        throw ValidationError("\(path) \(arguments.joined(separator: " ")) exited \(measured.status)")
    }
    return (measured.seconds, measured.peakKilobytes)
}

/// The in-process hub emulator with one phone registered for World with the seed app's template.
func startWorldHub() async throws -> LocalHub {
    try await LocalHub.start(
        devicesYAML: """
            hub: breaking-news
            devices:
              - {id: phone-1, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
            """)
}
