import ArgumentParser
import Foundation
import NewsPushTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `newspush-bench desk`: each desk page's time over loopback (an upper bound of its server
/// time) with a large ledger and many held pushes, beside `newspush state show` over the same
/// ledger, in one run of the release binaries.
struct DeskPages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "desk",
        abstract:
            "Time the desk's pages and API over a ledger of many stories and held pushes, beside `newspush state "
            + "show`.")

    @Option(help: "Feeds of the baseline (feeds × stories are in the ledger).") var feeds = 1000
    @Option(help: "Stories in each feed.") var stories = 150
    @Option(help: "Pushes held for review.") var held = 500
    @Option(help: "Requests per page; the median and 95th percentile are reported.") var requests = 50
    @Option(help: "Alerts of the last 30 days with reports (the Reports page), written with sqlite3.")
    var alerts = 1000
    @Option(help: "Events reported of those alerts, counted in buckets as the back-end counts them.")
    var events = 10_000_000

    func run() async throws {
        let (perFeed, heldCount) = (stories, held)
        let server = try await LocalHTTPServer.start { request in
            if request.uri.hasSuffix("/held.xml") {
                let items = (0..<heldCount).map {
                    (guid: "held-\($0)", title: "Held story \($0) waiting for an editor", minutesAgo: Double($0) / 10)
                }
                return CannedResponse(headers: [("ETag", "\"h1\"")], text: rssFeed(title: "Held desk", items: items))
            }
            return LedgerIdleRun.wire(request, stories: perFeed)
        }
        defer { server.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let list = (0..<feeds).map { "  - {url: \"\(server.baseURL)/feed/\($0).xml\", category: World}" }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "http://127.0.0.1:9/"}
            fetch: {concurrency: 64, per_host: 64, timeout: 60s, max_bytes: 50MB}
            policy: {budget: {per_category: 10000, per: 1h}}
            review: {rules: [{category: Politics, mode: review}]}
            feeds:
            \(list.joined(separator: "\n"))
              - {url: "\(server.baseURL)/held.xml", name: Held desk, category: Politics, first_run: send}
            """)
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let binary = here.appendingPathComponent("newspush").path
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]
        _ = try await spawn(binary, ["run", "-q", "--config", config], environment)
        try Self.addEditor(binary, config: config)
        if alerts > 0 { try reported(state: folder.path + "/newspush-state.db") }

        var show: [Double] = []
        for _ in 0..<3 { show.append(try await spawn(binary, ["state", "show", "--config", config], environment).0) }

        let (desk, base) = try await Self.startDesk(binary, config: config)
        defer { desk.stop() }
        let client = DeskClient(base: base.hasSuffix("/") ? String(base.dropLast()) : base)
        try await client.signIn(user: "bench", password: "bench-password")
        let firstPreview = try await client.time("/next")

        print("ledger: \(feeds * perFeed) stories, \(heldCount) held (\(feeds + 1) feeds)")
        print(String(format: "newspush state show: median %.1f ms", show.sorted()[1] * 1000))
        print(String(format: "the first preview (fetching %d feeds, 304s): %.1f ms", feeds + 1, firstPreview * 1000))
        for path in ["/", "/next", "/sent", "/reports", "/publish", "/api/review", "/api/history", "/api/changes"] {
            var times: [Double] = []
            for _ in 0..<requests { times.append(try await client.time(path)) }
            times.sort()
            print(
                String(
                    format: "GET %@ median %6.1f ms, p95 %6.1f ms",
                    path.padding(toLength: 13, withPad: " ", startingAt: 0), times[times.count / 2] * 1000,
                    times[min(times.count - 1, times.count * 95 / 100)] * 1000))
        }
    }
}

extension DeskPages {
    /// `alerts` sent alerts, 40 minutes apart, with reports as the back-end counts them: each
    /// kind's count in 107 buckets (minutes 0–59, then hours to 48), opens falling off with
    /// time, and its total per platform; the counts summing to about `events`.
    func reported(state: String) throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let scale = Double(events) / Double(alerts * 2 * 100)
        let categories = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
        let category =
            "CASE i % 6 "
            + categories.enumerated().map { "WHEN \($0.offset) THEN '\($0.element)'" }
            .joined(separator: " ") + " END"
        let id = "printf('01a00000-0000-7000-8000-%012d', i)"
        let sql = """
            PRAGMA journal_mode = WAL;
            BEGIN;
            CREATE TEMP TABLE n AS WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(alerts - 1))
              SELECT i FROM n;
            CREATE TEMP TABLE b AS WITH RECURSIVE b(m) AS (SELECT 0 UNION ALL SELECT CASE WHEN m < 59 THEN m + 1 ELSE m + 60 END
              FROM b WHERE m < 2820) SELECT m FROM b;
            INSERT INTO outbox (id, story_key, kind, origin, category, format, tags, properties, created_at, fresh_until,
              status, attempts, last_attempt, expires_after, accepted_at)
            SELECT \(id), 'bench:alert-' || i, 'push', 'run', \(category), 'template',
              \(category), '{"title":"Bench alert ' || i || ' of the month"}', \(now) - i * 2400000, \(now),
              'sent', 1, \(now) - i * 2400000, 3600, \(now) - i * 2400000 + 800 FROM n;
            INSERT INTO alert_reports (alert_id, sent_at, audience) SELECT \(id), \(now) - i * 2400000 + 800, 200000 FROM n;
            INSERT INTO alert_counts (alert_id, kind, minute, platform, count)
            SELECT \(id), k.kind, m, '', MAX(1, CAST(\(scale) * 4 / (1 + m / 15.0) AS INTEGER))
            FROM n, b, (SELECT 'received' AS kind UNION ALL SELECT 'opened') AS k;
            INSERT INTO alert_counts (alert_id, kind, minute, platform, count)
            SELECT alert_id, kind, -1, p.platform, SUM(count) / 3 FROM alert_counts,
              (SELECT 'apns' AS platform UNION ALL SELECT 'fcmv1' UNION ALL SELECT 'wns') AS p
            WHERE minute >= 0 GROUP BY alert_id, kind, p.platform;
            COMMIT;
            SELECT COUNT(*), SUM(count) FROM alert_counts WHERE minute = -1;
            """
        let counted = try BenchProcess.runToEnd("/usr/bin/sqlite3", [state], [], input: sql)
        print(
            "reports: \(alerts) alerts; counter rows and events: \(counted.trimmingCharacters(in: .whitespacesAndNewlines))"
        )
    }

    /// `desk add-user bench --role editor`, the password on standard input.
    static func addEditor(_ binary: String, config: String) throws {
        try BenchProcess.runToEnd(
            binary, ["desk", "add-user", "bench", "--role", "editor", "--config", config], ["PATH=/usr/bin:/bin"],
            input: "bench-password\n")
    }

    /// The desk on a free port, and its address from the line it prints.
    static func startDesk(_ binary: String, config: String) async throws -> (BenchProcess, String) {
        let desk = try await BenchProcess.start(
            binary, ["desk", "--listen", "127.0.0.1:0", "--config", config, "--preview-age", "1h"],
            ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"])
        return (desk, "http://127.0.0.1:\(desk.port)")
    }
}

/// A signed-in client of the desk that does not follow redirects.
final class DeskClient: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    let base: String
    private var cookie = ""
    private lazy var session = URLSession(configuration: .ephemeral, delegate: self, delegateQueue: nil)

    init(base: String) { self.base = base }

    func signIn(user: String, password: String) async throws {
        var request = URLRequest(url: URL(string: base + "/login") ?? URL(fileURLWithPath: "/"))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("user=\(user)&password=\(password)".utf8)
        let (_, response) = try await session.data(for: request)
        let header = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Set-Cookie") ?? ""
        cookie = String(header.split(separator: ";").first ?? "")
        guard !cookie.isEmpty else { throw ValidationError("the desk refused the bench user") }
    }

    /// Seconds for one GET of `path`, whose answer must be 200.
    func time(_ path: String) async throws -> Double {
        var request = URLRequest(url: URL(string: base + path) ?? URL(fileURLWithPath: "/"))
        request.setValue(cookie, forHTTPHeaderField: "Cookie")
        let started = DispatchTime.now()
        let (_, response) = try await session.data(for: request)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw ValidationError("GET \(path) answered \((response as? HTTPURLResponse)?.statusCode ?? 0)")
        }
        return seconds
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
