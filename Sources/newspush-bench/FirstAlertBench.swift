import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushTesting
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// `newspush-bench first-alert` (SPEC §10): how long a story takes from appearing in a feed to
/// the hub's accept, for a cron `run` every minute, the watcher polling, the watcher with WebSub
/// through a real hub (flask-websub), and the publish ping; with the requests each feed gets, the
/// watcher's CPU, and the watcher idle over unchanged feeds. All in one run, side by side.
struct FirstAlert: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "first-alert",
        abstract:
            "Story-to-hub latency: cron every 60 s, the watcher polling, WebSub through a real hub, and the ping."
    )

    @Option(help: "Feeds on the local server.") var feeds = 1000
    @Option(help: "Stories per mode, at random moments in random feeds.") var stories = 30
    @Option(help: "Seconds each mode is measured.") var seconds = 180.0
    @Option(help: "Seconds the server takes to answer each request.") var latency = 0.1
    @Option(help: "Seconds the idle watcher is measured over unchanged feeds (0: skip).") var idle = 120.0
    @Option(
        help:
            "Modes to measure, of cron, poll, websub, ping, and websub-hostile, ping-hostile (the same with 200 bad pings/s and 50 forged distributions/s at the listener)."
    )
    var modes = "cron,poll,websub,ping,websub-hostile,ping-hostile"
    @Option(help: "The WebSub hub script (flask-websub 0.4.1).") var hubScript = "Tests/websub/hub.py"

    func run() async throws {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let binary = here.appendingPathComponent("newspush").path
        let hub = try await startWorldHub()
        defer { hub.stop() }
        let wire = BenchWire(feeds: feeds, latency: latency)
        let server = try await LocalHTTPServer.start { await wire.answer($0) }
        defer { server.stop() }
        wire.serve(at: server.baseURL)
        let websub = try? await BenchWebSubHub.start(script: hubScript)
        defer { websub?.stop() }
        wire.hub = websub?.url
        print("first-alert: \(feeds) feeds answering in \(Int(latency * 1000)) ms, \(stories) stories per mode")
        var rows: [String] = []
        for mode in modes.split(separator: ",").map(String.init) {
            if mode.hasPrefix("websub") && websub == nil {
                rows.append("websub: skipped (python3 with flask-websub 0.4.1 and celery is not installed)")
                continue
            }
            let measured = try await FirstAlertRound(
                mode: mode, binary: binary, hub: hub, wire: wire, websub: websub, stories: stories, seconds: seconds
            ).measure()
            rows.append(measured)
            print(measured)
        }
        if idle > 0 { rows.append(try await idleWatcher(binary: binary, hub: hub, wire: wire)) }
        print("\nfirst-alert summary\n" + rows.joined(separator: "\n"))
    }

    /// The watcher polling unchanged feeds (304s) for `idle` seconds: its CPU as a share of one core.
    private func idleWatcher(binary: String, hub: LocalHub, wire: BenchWire) async throws -> String {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try FirstAlertRound.config(folder, hub: hub, wire: wire, mode: "poll")
        let watcher = try await BenchProcess.start(
            binary, ["watch", "--quiet", "--config", config], FirstAlertRound.env)
        defer { watcher.stop() }
        try await wire.waitUntilEachFetched(since: Date())
        try await Task.sleep(for: .seconds(10))
        let cpu = watcher.cpuSeconds(), requests = wire.totalRequests
        try await Task.sleep(for: .seconds(idle))
        // (the watcher's idle polls every 60 s at most: max_interval 60 s, the worst case)
        let used = watcher.cpuSeconds() - cpu
        let perHour = Double(wire.totalRequests - requests) / Double(feeds) * 3600 / idle
        return String(
            format:
                "idle watcher over %d unchanged feeds: %.2f %% of one core (%.1f CPU s/hour), %.0f requests/feed/hour",
            feeds, used / idle * 100, used / idle * 3600, perHour)
    }
}

/// One mode's measurement: a fresh ledger, the watcher (or cron) started and warmed up, stories
/// published at random moments, each one's first delivery at the emulator timed.
struct FirstAlertRound {
    let mode: String
    let binary: String
    let hub: LocalHub
    let wire: BenchWire
    let websub: BenchWebSubHub?
    let stories: Int
    let seconds: Double

    static let env = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]
    static let pingToken = "bench-ping-token-0123456789"

    /// A config over the wire's feeds: polling every 60 s (15 s at the least, 60 s at most),
    /// WebSub on for `websub` (off otherwise: the feeds advertise the hub to every mode).
    static func config(_ folder: TemporaryFolder, hub: LocalHub, wire: BenchWire, mode: String, port: Int = 0) throws
        -> String
    {
        // The attack comes from other networks (X-Forwarded-For from the trusted loopback), the
        // hub's distributions and the CMS's pings from this machine.
        let feeds = (0..<wire.count).map { "  - {url: \"\(wire.url($0))\", name: f\($0), category: World}" }
        let tokens = (0..<wire.count).map { "f\($0)=\(pingToken)" }.joined(separator: ",")
        return try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "\(hub.endpoint)"}
            policy: {budget: {per_category: 10000, per: 1h}}
            fetch: {concurrency: 64, per_host: 64, timeout: 30s}
            api: {trusted_proxies: [127.0.0.1]}
            watch:
              interval: 60s
              min_interval: 15s
              max_interval: 60s
              listen: "127.0.0.1:\(port)"
              callback_url: "http://127.0.0.1:\(port)/websub/"
              websub: \(mode.hasPrefix("websub") ? "auto" : "off")
              ping_tokens: "\(tokens)"
              hubs: {private: allow, http: allow}
            feeds:
            \(feeds.joined(separator: "\n"))
            """)
    }

    func measure() async throws -> String {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let port = try freeLoopbackPort()
        let config = try Self.config(folder, hub: hub, wire: wire, mode: mode, port: port)
        let started = Date()
        var watcher: BenchProcess?
        if mode == "cron" {
            // Spawned off the concurrency pool: the feed server and the emulator answer on it.
            _ = try await spawn(binary, ["run", "--quiet", "--config", config], Self.env)
        } else {
            watcher = try await BenchProcess.start(binary, ["watch", "--quiet", "--config", config], Self.env)
            try await wire.waitUntilEachFetched(since: started)
            if mode.hasPrefix("websub") { try await waitForSubscriptions(port: port) }
        }
        defer { watcher?.stop() }
        let cpu = watcher?.cpuSeconds() ?? 0, requests = wire.totalRequests, window = Date()
        let early = wire.fetchedTooSoon
        let cron =
            mode == "cron" ? Task { try await cronEveryMinute(config: config, until: window + seconds + 70) } : nil
        let arrivals = BenchArrivals()
        let polling = Task { await arrivals.poll(hub) }
        defer { polling.cancel() }
        let attack =
            mode.hasSuffix("-hostile") ? try HostileListenerTraffic(port: port, folder: folder, wire: wire) : nil
        attack?.start()
        defer { attack?.stop() }
        let appeared = try await publishStories(port: port)
        let accepted = try await waitForDeliveries(
            of: appeared, arrivals: arrivals, timeout: ["cron", "poll"].contains(mode) ? 75 : 30)
        cron?.cancel()
        let elapsed = Date().timeIntervalSince(window)
        let latencies = appeared.compactMap { story in accepted[story.title].map { $0.timeIntervalSince(story.at) } }
        let perHour = Double(wire.totalRequests - requests) / Double(wire.count) * 3600 / elapsed
        let cpuLine =
            watcher.map { String(format: ", watcher CPU %.1f s/hour", ($0.cpuSeconds() - cpu) / elapsed * 3600) } ?? ""
        return "\(mode): \(BenchLatency.summary(latencies)) (\(latencies.count) of \(appeared.count) stories), "
            + String(format: "%.0f requests/feed/hour", perHour) + cpuLine + (attack?.summary ?? "")
            + ", \(wire.fetchedTooSoon - early) fetches of a max-age=300 feed sooner than 300 s"
    }

    /// Stories at random moments of the window, in random feeds; for websub the hub is told and
    /// for ping the watcher is, at once, as a CMS would.
    private func publishStories(port: Int) async throws -> [(title: String, at: Date)] {
        let moments = (0..<stories).map { _ in Double.random(in: 2...(seconds - 5)) }.sorted()
        let start = Date()
        var appeared: [(title: String, at: Date)] = []
        for (index, moment) in moments.enumerated() {
            let wait = moment - Date().timeIntervalSince(start)
            if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
            let feed = wire.storyFeed()
            let title = BenchHeadlines.make(mode: mode, index: index)
            let at = wire.publish(title, in: feed)
            appeared.append((title, at))
            switch mode.split(separator: "-").first.map(String.init) ?? mode {
            case "websub":
                if let websub { Task { _ = try? await websub.publish(wire.url(feed)) } }
            case "ping":
                Task {
                    _ = try? await BenchHTTP.post(
                        "http://127.0.0.1:\(port)/ping/f\(feed)", headers: ["Authorization": "Bearer \(Self.pingToken)"]
                    )
                }
            default: break
            }
        }
        return appeared
    }

    /// `newspush run` at the top of every minute of the window, as cron would.
    private func cronEveryMinute(config: String, until end: Date) async throws {
        var next = Date().addingTimeInterval(60)
        while next < end {
            try await Task.sleep(for: .seconds(max(0, next.timeIntervalSinceNow)))
            _ = try? await spawn(binary, ["run", "--quiet", "--config", config], Self.env)
            next = next.addingTimeInterval(60)
        }
    }

    /// When each story's first delivery reached the emulator: `arrivals` polls the emulator
    /// every 20 ms from the window's start (beside the stories' publication); this waits until
    /// every story arrived or `timeout` passed since the last one appeared.
    private func waitForDeliveries(of stories: [(title: String, at: Date)], arrivals: BenchArrivals, timeout: Double)
        async throws -> [String: Date]
    {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if arrivals.firstArrivals(of: stories.map(\.title)).count == stories.count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return arrivals.firstArrivals(of: stories.map(\.title))
    }

    private func waitForSubscriptions(port: Int) async throws {
        for _ in 0..<600 {
            let metrics = try? await BenchHTTP.get("http://127.0.0.1:\(port)/metrics")
            let line = metrics?.split(separator: "\n").first { $0.hasPrefix("newspush_websub_subscriptions_active ") }
            if let value = line.flatMap({ Double($0.split(separator: " ").last ?? "") }), Int(value) >= wire.count {
                return
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        throw ValidationError("the watcher's WebSub subscriptions were not all verified in 5 minutes")
    }
}

/// Every delivery at the emulator with the moment the bench saw it (polled every 20 ms).
final class BenchArrivals: Sendable {
    private let seen = Mutex<[(payload: String, at: Date)]>([])

    /// Polls until cancelled.
    func poll(_ hub: LocalHub) async {
        var count = 0
        while !Task.isCancelled {
            let deliveries = await hub.emulator.allDeliveries()
            let now = Date()
            if deliveries.count > count {
                let new = deliveries[count...].map { (payload: $0.payload, at: now) }
                seen.withLock { $0 += new }
                count = deliveries.count
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The first arrival of each title that arrived.
    func firstArrivals(of titles: [String]) -> [String: Date] {
        seen.withLock { seen in
            var first: [String: Date] = [:]
            for title in titles {
                if let arrival = seen.first(where: { $0.payload.contains(title) }) { first[title] = arrival.at }
            }
            return first
        }
    }
}

/// The hostile side of a round: 200 bad pings a second (wrong tokens, and one in ten a Basic
/// guess at a sender) and 50 forged distributions a second (real callback paths, read from the
/// ledger, signed with a wrong secret), each from one of 1,000 other networks, while the
/// stories flow. Counts what the listener answered.
final class HostileListenerTraffic: @unchecked Sendable {
    private let port: Int
    private let paths: [String]
    private let stopped = Atomic<Bool>(false)
    private let answers = Mutex<[Int: Int]>([:])
    private var threads: [Thread] = []

    init(port: Int, folder: TemporaryFolder, wire: BenchWire) throws {
        self.port = port
        let ledger = try Ledger.open(configured: folder.file("newspush-state.db"), access: .read)
        let feeds = Dictionary(uniqueKeysWithValues: (0..<wire.count).map { (wire.url($0), $0) })
        paths = try ledger.subscriptions(feeds: Array(feeds.keys)).values.compactMap { subscription in
            feeds[subscription.feed].map { "/websub/f\($0)/\(subscription.token)" }
        }
    }

    /// Starts the attack on threads of its own (five of pings, two of distributions).
    func start() {
        for n in 0..<5 { spawn(perSecond: 40) { self.badPing(n: $0 * 5 + n) } }
        for n in 0..<2 { spawn(perSecond: 25) { self.forgedDistribution(n: $0 * 2 + n) } }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// `, listener answered … to the attack`.
    var summary: String {
        let counts = answers.withLock { $0 }.sorted { $0.key < $1.key }.map { "\($0.value)×\($0.key)" }
        return ", attack answered " + counts.joined(separator: " ")
    }

    private func spawn(perSecond: Double, _ request: @escaping @Sendable (Int) -> Void) {
        let thread = Thread { [self] in
            var n = 0
            let start = Date()
            while !stopped.load(ordering: .relaxed) {
                request(n)
                n += 1
                let due = start.addingTimeInterval(Double(n) / perSecond)
                if due > Date() { Thread.sleep(until: due) }
            }
        }
        threads.append(thread)
        thread.start()
    }

    private static func network(_ n: Int) -> String { "198.18.\(n % 1000 / 250).\(n % 250 + 1)" }

    private func badPing(n: Int) {
        let feed = "f\(n % 100)"
        let credential =
            n % 10 == 0
            ? "Basic " + Data("cms:guess-\(n)".utf8).base64EncodedString() : "Bearer wrong-token-\(n)-0123456789"
        post("/ping/\(feed)", headers: [("Authorization", credential)], body: Data(), from: Self.network(n))
    }

    private func forgedDistribution(n: Int) {
        guard !paths.isEmpty else { return }
        let body = Data(
            ("<rss version=\"2.0\"><channel><title>forged \(n)</title>" + String(repeating: " ", count: 900)
                + "</channel></rss>").utf8)
        post(
            paths[n % paths.count],
            headers: [
                ("Content-Type", "application/rss+xml"),
                ("X-Hub-Signature", "sha256=" + String(repeating: "ab", count: 32)),
            ],
            body: body, from: Self.network(n + 500))
    }

    private func post(_ path: String, headers: [(String, String)], body: Data, from address: String) {
        let answer = DocumentFetch.post(
            "http://127.0.0.1:\(port)\(path)", headers: headers + [("X-Forwarded-For", address)], body: body,
            userAgent: "hostile", timeout: 5)
        let status = (try? answer.get().status) ?? 0
        answers.withLock { $0[status, default: 0] += 1 }
    }
}

/// The feeds of the bench: each answers after `latency` seconds, with an ETag (a 304 when
/// unchanged), its stories, and the WebSub hub in its `Link` header and document.
final class BenchWire: Sendable {
    let count: Int
    let latency: Double
    private let state = Mutex<
        (stories: [Int: [(title: String, at: Date)]], fetched: [Int: Date], requests: Int, early: Int)
    >(([:], [:], 0, 0))
    /// Every tenth feed says `Cache-Control: max-age=300`; no story appears in those.
    static let cachedEvery = 10
    static let maxAge = 300.0
    private let base = Mutex("")
    private let hubURL = Mutex<String?>(nil)

    init(feeds: Int, latency: Double) {
        count = feeds
        self.latency = latency
    }

    var hub: String? {
        get { hubURL.withLock { $0 } }
        set { hubURL.withLock { $0 = newValue } }
    }

    func serve(at url: String) { base.withLock { $0 = url } }

    func url(_ feed: Int) -> String { base.withLock { $0 } + "/f/\(feed).xml" }

    var totalRequests: Int { state.withLock { $0.requests } }

    /// Fetches by newspush of a `max-age=300` feed sooner than 300 s after the one before.
    var fetchedTooSoon: Int { state.withLock { $0.early } }

    /// A feed stories may appear in (not one of the cached ones).
    func storyFeed() -> Int {
        var feed = Int.random(in: 0..<count)
        while feed % Self.cachedEvery == 0 { feed = Int.random(in: 0..<count) }
        return feed
    }

    /// Adds a story to `feed` now; when it appeared.
    func publish(_ title: String, in feed: Int) -> Date {
        let now = Date()
        state.withLock { $0.stories[feed, default: []].insert((title, now), at: 0) }
        return now
    }

    func waitUntilEachFetched(since start: Date) async throws {
        for _ in 0..<3000 {
            if state.withLock({ state in state.fetched.count == count && state.fetched.values.allSatisfy { $0 >= start }
            }) {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ValidationError("not every feed was fetched in 5 minutes")
    }

    func answer(_ request: RecordedRequest) async -> CannedResponse {
        let path = request.uri.split(separator: "?").first.map(String.init) ?? request.uri
        guard path.hasPrefix("/f/"), let feed = Int(path.dropFirst(3).dropLast(4)), feed < count else {
            return CannedResponse(status: 404, text: "no such feed")
        }
        let agent = request.headers.first { $0.name.lowercased() == "user-agent" }?.value ?? ""
        let items = state.withLock { state in
            state.requests += 1
            guard agent.hasPrefix("newspush") else { return Array((state.stories[feed] ?? []).prefix(20)) }
            let now = Date()
            if feed % Self.cachedEvery == 0, let last = state.fetched[feed],
                now.timeIntervalSince(last) < Self.maxAge - 1
            {
                state.early += 1
            }
            state.fetched[feed] = now
            return Array((state.stories[feed] ?? []).prefix(20))
        }
        let etag = "\"\(items.count)-\(items.first?.title.hashValue ?? 0)\""
        let me = url(feed)
        let links = hub.map { [("Link", "<\($0)>; rel=\"hub\", <\(me)>; rel=\"self\"")] } ?? []
        let inm = request.headers.first { $0.name.lowercased() == "if-none-match" }?.value
        let cache = feed % Self.cachedEvery == 0 ? [("Cache-Control", "max-age=\(Int(Self.maxAge))")] : []
        if inm == etag {
            return CannedResponse(status: 304, headers: [("ETag", etag)] + links + cache, delay: latency)
        }
        let entries = items.map { item in
            "<item><title>\(item.title)</title><link>https://news.example.org/\(abs(item.title.hashValue))</link>"
                + "<guid>\(abs(item.title.hashValue))</guid><pubDate>\(BenchHeadlines.rfc822(item.at))</pubDate></item>"
        }
        let hubLinks =
            hub.map { "<atom:link rel=\"hub\" href=\"\($0)\"/><atom:link rel=\"self\" href=\"\(me)\"/>" } ?? ""
        let body =
            "<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel><title>Feed \(feed)</title>"
            + hubLinks + entries.joined() + "</channel></rss>"
        return CannedResponse(
            headers: [("ETag", etag), ("Content-Type", "application/rss+xml")] + links + cache, body: Data(body.utf8),
            delay: latency)
    }
}

/// Headlines that no two stories share words enough to be taken for one story.
enum BenchHeadlines {
    static let words = """
        harbour glacier senate tariff satellite marathon vaccine volcano merger election drought pipeline \
        orchestra lottery bridge reactor embassy festival quarry monsoon asteroid verdict strike summit \
        refinery cyclone museum referendum telescope stadium ferry blackout auction wildfire treaty rover
        """.split(separator: " ").map(String.init)

    static func make(mode: String, index: Int) -> String {
        let picked = words.shuffled().prefix(5).joined(separator: " ")
        return "\(mode.capitalized) story \(index) \(UUID().uuidString.prefix(6)): \(picked)"
    }

    static func rfc822(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

/// p50, p95 and p99 of a set of seconds.
enum BenchLatency {
    static func summary(_ values: [Double]) -> String {
        guard !values.isEmpty else { return "no story reached the hub" }
        let sorted = values.sorted()
        func at(_ p: Double) -> Double {
            sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
        return String(format: "p50 %.2f s, p95 %.2f s, p99 %.2f s", at(0.5), at(0.95), at(0.99))
    }
}

/// flask-websub's hub for the bench (the tests' `Tests/websub/hub.py`), started by the tests'
/// kit (`ChildProcess`).
struct BenchWebSubHub: Sendable {
    let child: RunningChild
    let url: String

    static func start(script: String) async throws -> BenchWebSubHub {
        guard FileManager.default.fileExists(atPath: script) else { throw ValidationError("no \(script)") }
        let database = NSTemporaryDirectory() + "first-alert-hub-\(UUID().uuidString).db"
        let child = try ChildProcess.start(
            "/usr/bin/env", ["python3", script, database, "86400"],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"], errors: .discard)
        let line = await child.stdout?.firstLine() ?? ""
        guard let start = line.range(of: "http://") else {
            child.stop()
            throw ValidationError("the WebSub hub did not start: \(line)")
        }
        return BenchWebSubHub(child: child, url: String(line[start.lowerBound...]).trimmingCharacters(in: .whitespaces))
    }

    func publish(_ topic: String) async throws -> Int {
        let encoded = topic.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? topic
        return try await BenchHTTP.post(
            url, headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: "hub.mode=publish&hub.topic=\(encoded)")
    }

    func stop() { child.stop() }
}

/// Small HTTP calls of the bench (URLSession: the answers are 2xx, no challenge to hang on).
enum BenchHTTP {
    static func post(_ url: String, headers: [String: String], body: String = "") async throws -> Int {
        guard let address = URL(string: url) else { throw ValidationError("not a URL: \(url)") }
        var request = URLRequest(url: address)
        request.httpMethod = "POST"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Data(body.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    static func get(_ url: String) async throws -> String {
        guard let address = URL(string: url) else { throw ValidationError("not a URL: \(url)") }
        let (data, _) = try await URLSession.shared.data(from: address)
        return String(decoding: data, as: UTF8.self)
    }
}
