import ArgumentParser
import Foundation
import NewsPushTesting
import NotificationHubs

#if canImport(Glibc)
    import Glibc
#endif

/// `newspush-bench api`: installations registered per second through `newspush api` by 64
/// clients, beside the same `PUT`s sent straight to the hub emulator, in one run; SQLite and
/// PostgreSQL; the API's resident memory after 1,000 and after 100,000 registrations; and
/// `devices count` over an index of 1,000,000 installations.
struct ApiRegistrations: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract:
            "Registrations per second through `newspush api` beside PUTs straight to the emulator; memory; "
            + "`devices count` over a large index.")

    @Option(help: "Registrations per measurement.") var registrations = 20000
    @Option(
        help: "Rounds of (straight to the emulator, through the API on SQLite), interleaved; the median ratio counts.")
    var rounds = 3
    @Option(help: "Concurrent clients (each on its own kept-alive connection).") var clients = 64
    @Option(help: "Registrations before the second memory reading (0: skip).") var memory = 100_000
    @Option(help: "Installations in the index `devices count` reads (0: skip).") var index = 1_000_000
    @Option(help: "Live secure pushes the GET measurement fetches from (0: skip).") var secure = 10_000
    @Option(help: "Installations in the index beside them.") var secureInstallations = 100_000
    @Option(help: "Readers of each kind (Basic, token) in the secure-push fetch surge (0: skip).")
    var surgeReaders = 10_000
    /// The emulator (its CPU time is reported beside the API's).
    private var hubProcess: BenchProcess? { Self.hub }
    nonisolated(unsafe) private static var hub: BenchProcess?

    func run() async throws {
        let newspush = BenchProcess.binaries.appendingPathComponent("newspush").path
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let hub = try await BenchProcess.emptyHub(in: folder)
        defer { hub.stop() }
        Self.hub = hub
        print("\(registrations) registrations per measurement, \(clients) clients, emulator on :\(hub.port)")
        let direct = try await sqliteRounds(newspush, folder: folder, hub: hub)
        let postgres = try await LocalPostgres.start(fsync: true)
        defer { postgres.stop() }
        let pgConfig = try folder.write(
            "pg.yaml", Self.config(hubPort: hub.port, state: try await postgres.createDatabase()))
        let shared = try await throughApi(
            newspush, config: pgConfig, offset: 10_000_000, count: registrations,
            environment: [postgres.environmentEntry])
        print(
            "through newspush api, PostgreSQL, one instance: " + shared.timing.line
                + String(format: " (%.2f× direct)", shared.timing.rate / direct.rate))
        let two = try await throughInstances(
            newspush, config: pgConfig, offset: 30_000_000, count: registrations,
            environment: [postgres.environmentEntry])
        print(
            "through newspush api, PostgreSQL, two instances: " + two.line
                + String(format: " (%.2f× direct)", two.rate / direct.rate))
        if memory > 0 { try await residentMemory(newspush, folder: folder, hubPort: hub.port) }
        if index > 0 { try countOverALargeIndex(newspush, folder: folder, hubPort: hub.port) }
        if secure > 0 { try await secureFetches(newspush, folder: folder, hubPort: hub.port) }
        if surgeReaders > 0 {
            try await secureSurge(newspush, folder: folder, hubPort: hub.port, readers: surgeReaders)
        }
    }

    /// The rounds of PUTs straight to the emulator beside the same through the API on SQLite;
    /// the median round's direct timing (the PostgreSQL figures' reference).
    private func sqliteRounds(_ newspush: String, folder: TemporaryFolder, hub: BenchProcess) async throws -> Timing {
        // The machine's speed drifts between measurements (other tenants of its host): each
        // round measures both side by side, and the median round's ratio is the figure.
        var ratios: [(ratio: Double, direct: Timing, api: Timing)] = []
        for round in 0..<max(1, rounds) {
            let cpu = hub.cpuSeconds()
            let direct = try directPuts(hubPort: hub.port, offset: round * registrations)
            print("round \(round + 1): straight to the emulator:     " + direct.line)
            print(
                String(
                    format: "  CPU per 1,000 registrations: emulator %.2f s",
                    (hub.cpuSeconds() - cpu) * 1000 / Double(registrations)))
            let config = try folder.write(
                "round-\(round).yaml", Self.config(hubPort: hub.port, state: "newspush-state-\(round).db"))
            let sqlite = try await throughApi(
                newspush, config: config, offset: round * registrations, count: registrations)
            print(
                "round \(round + 1): through newspush api, SQLite: " + sqlite.timing.line
                    + String(format: " (%.2f× direct)", sqlite.timing.rate / direct.rate))
            ratios.append((sqlite.timing.rate / direct.rate, direct, sqlite.timing))
        }
        let median = ratios.sorted { $0.ratio < $1.ratio }[ratios.count / 2]
        print(
            String(
                format: "median round: SQLite %.0f registrations/s, direct %.0f/s: %.2f× direct (rounds: %@)",
                median.api.rate, median.direct.rate, median.ratio,
                ratios.map { String(format: "%.2f", $0.ratio) }.joined(separator: ", ")))
        return median.direct
    }

    static func config(hubPort: Int, state: String) -> String {
        """
        hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
            endpoint: "http://127.0.0.1:\(hubPort)/", timeout: 60s}
        state: "\(state)"
        api: {handle_shapes: loose, rate: {per_address: 100000000/min, per_user: 100000000/min, new_anonymous_per_network: 100000000/day}}
        feeds: []
        """
    }

    /// What an installation's PUT to the hub carries (as `newspush api` writes it).
    static func hubBody(_ n: Int) -> String {
        #"{"installationId":"d-\#(n)","platform":"fcmv1","pushChannel":"direct-token-\#(n)","tags":["World"],"#
            + #""templates":{"newspush":{"body":"{\"message\":{\"notification\":{\"body\":\"$(messageParam)\"}}}"}}}"#
    }

    private func directPuts(hubPort: Int, offset: Int) throws -> Timing {
        let connection = try HubConnectionString(parsing: testConnectionString)
        let token = SharedAccessSignature.token(
            resourceURI: SharedAccessSignature.hubResourceURI(host: connection.host, hub: "breaking-news"),
            keyName: connection.keyName, key: connection.key, expiry: Int(Date().timeIntervalSince1970) + 3600)
        return try LoadClients.run(port: hubPort, clients: clients, count: registrations) { i in
            let n = i + offset
            let body = Self.hubBody(n)
            return "PUT /breaking-news/installations/d-\(n)?api-version=2020-06 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: \(token)\r\nx-ms-version: 2020-06\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
    }

    /// Starts `newspush api` on `config`, sends `count` anonymous registrations, stops it.
    private func throughApi(
        _ binary: String, config: String, offset: Int, count: Int, environment: [String] = []
    ) async throws -> (timing: Timing, process: BenchProcess?) {
        let api = try await BenchProcess.start(
            binary, ["api", "--listen", "127.0.0.1:0", "--config", config],
            ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"] + environment)
        defer { api.stop() }
        let before = (api.cpuSeconds(), hubProcess?.cpuSeconds() ?? 0)
        let timing = try register(port: api.port, offset: offset, count: count)
        let per = 1000 / Double(count)
        print(
            String(
                format: "  CPU per 1,000 registrations: newspush api %.2f s, emulator %.2f s",
                (api.cpuSeconds() - before.0) * per, ((hubProcess?.cpuSeconds() ?? 0) - before.1) * per))
        return (timing, nil)
    }

    /// Two instances on one ledger, the clients split between them (a balancer's share).
    private func throughInstances(_ binary: String, config: String, offset: Int, count: Int, environment: [String])
        async throws -> Timing
    {
        var instances: [BenchProcess] = []
        for _ in 0..<2 {
            instances.append(
                try await BenchProcess.start(
                    binary, ["api", "--listen", "127.0.0.1:0", "--config", config],
                    ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"] + environment))
        }
        defer { for instance in instances { instance.stop() } }
        return try register(ports: instances.map(\.port), offset: offset, count: count)
    }

    private func register(port: Int, offset: Int, count: Int) throws -> Timing {
        try register(ports: [port], offset: offset, count: count)
    }

    private func register(ports: [Int], offset: Int, count: Int) throws -> Timing {
        try LoadClients.run(ports: ports, clients: clients, count: count) { n in
            let body = #"{"platform":"fcmv1","pushChannel":"api-token-\#(n + offset)","topics":["World","Sports"]}"#
            return "PUT /api/installations/i-\(n + offset) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
    }

    /// The API's resident memory after 1,000 registrations and after `memory`.
    private func residentMemory(_ binary: String, folder: TemporaryFolder, hubPort: Int) async throws {
        let config = try folder.write("memory.yaml", Self.config(hubPort: hubPort, state: "memory-state.db"))
        let api = try await BenchProcess.start(
            binary, ["api", "--listen", "127.0.0.1:0", "--config", config],
            ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"])
        defer { api.stop() }
        _ = try register(port: api.port, offset: 20_000_000, count: 1000)
        let after1k = api.residentKilobytes()
        _ = try register(port: api.port, offset: 20_001_000, count: memory - 1000)
        let after = api.residentKilobytes()
        print(
            String(
                format:
                    "resident memory of newspush api: %.1f MB after 1,000 registrations, %.1f MB after %d (+%.1f MB)",
                Double(after1k) / 1024, Double(after) / 1024, memory, Double(after - after1k) / 1024))
    }

    /// `devices count` (every topic) and `devices count --topic World` over `index` installations
    /// written straight into a SQLite ledger (sqlite3), three topics each.
    private func countOverALargeIndex(_ binary: String, folder: TemporaryFolder, hubPort: Int) throws {
        let config = try folder.write("index.yaml", Self.config(hubPort: hubPort, state: "index-state.db"))
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]
        _ = try BenchProcess.runToEnd(binary, ["devices", "prune", "--config", config], environment)  // creates it
        let state = folder.path + "/index-state.db"
        let topics = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
        let sql = """
            PRAGMA journal_mode = WAL;
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(index - 1))
            INSERT INTO installations (id, owner, platform, tags, language, handle_digest, created_at, refreshed_at)
            SELECT 'x-' || i, CASE WHEN i % 4 = 0 THEN 'user' || i ELSE NULL END,
              CASE i % 3 WHEN 0 THEN 'apns' WHEN 1 THEN 'fcmv1' ELSE 'wns' END, '', NULL, 'digest-' || i,
              1700000000000, 1700000000000 FROM n;
            \((0..<3).map { k in
                "INSERT INTO installation_tags (tag, installation_id) SELECT CASE (i + \(k * 2)) % 6 "
                    + topics.enumerated().map { "WHEN \($0.offset) THEN '\($0.element)'" }.joined(separator: " ")
                    + " END, 'x-' || i FROM (WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(index - 1)) SELECT i FROM n);"
            }.joined(separator: "\n"))
            COMMIT;
            """
        let started = Date()
        _ = try BenchProcess.runToEnd("/usr/bin/sqlite3", [state], [], input: sql)
        print(String(format: "index of %d installations written in %.1f s", index, Date().timeIntervalSince(started)))
        for arguments in [
            ["devices", "count", "--topic", "World"], ["devices", "count"],
            ["devices", "count", "--tags", "World && (Politics || !Sports)"],
        ] {
            var times: [Double] = []
            for _ in 0..<3 {
                let begin = Date()
                _ = try BenchProcess.runToEnd(binary, arguments + ["--config", config], environment)
                times.append(Date().timeIntervalSince(begin))
            }
            print(
                String(
                    format: "newspush %@ over %d installations: best %.3f s", arguments.joined(separator: " "), index,
                    times.min() ?? 0))
        }
    }
}

extension ApiRegistrations {
    /// `GET /api/notifications/{id}` by signed-in readers (16 Basic users, 64 clients) with
    /// `secureInstallations` installations of 25,000 users (four each at 100,000) and `secure`
    /// live secure pushes in a SQLite ledger (written with sqlite3), the pushes addressed to the
    /// 16 users.
    func secureFetches(_ binary: String, folder: TemporaryFolder, hubPort: Int) async throws {
        let config = try folder.write("secure.yaml", Self.config(hubPort: hubPort, state: "secure-state.db"))
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]
        _ = try BenchProcess.runToEnd(binary, ["devices", "prune", "--config", config], environment)
        let users = 16
        for user in 0..<users {
            _ = try BenchProcess.runToEnd(
                binary, ["api", "add-user", "reader\(user)", "--config", config], environment,
                input: "reader-password-\(user)\n")
        }
        let future = Int64(Date().addingTimeInterval(86400).timeIntervalSince1970 * 1000)
        let sql = """
            PRAGMA journal_mode = WAL;
            BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(secureInstallations - 1))
            INSERT INTO installations (id, owner, platform, tags, language, handle_digest, created_at, refreshed_at)
            SELECT 's-' || i, 'reader' || (i % 25000), 'fcmv1', 'World' || char(10) || 'username:reader' || (i % 25000),
              NULL, 'sd-' || i, 1700000000000, 1700000000000 FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(secure))
            INSERT INTO secure_pushes (id, tags, texts, sender, created_at, expires_at)
            SELECT i * 7919, 'username:reader' || (i % \(users)), '{"default":"Secret story ' || i || '"}', NULL,
              1700000000000, \(future) FROM n;
            COMMIT;
            """
        _ = try BenchProcess.runToEnd("/usr/bin/sqlite3", [folder.path + "/secure-state.db"], [], input: sql)
        let api = try await BenchProcess.start(
            binary, ["api", "--listen", "127.0.0.1:0", "--config", config],
            ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"])
        defer { api.stop() }
        let credentials = (0..<users).map {
            Data("reader\($0):reader-password-\($0)".utf8).base64EncodedString()
        }
        let perUser = secure / users
        let request: @Sendable (Int) -> String = { n in
            let user = n % users
            let id = ((n / users) % perUser * users + user) * 7919
            return "GET /api/notifications/\(id == 0 ? users * 7919 : id) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Basic \(credentials[user])\r\n\r\n"
        }
        // Each credential's bcrypt check happens once; then the fetches are timed.
        _ = try LoadClients.run(port: api.port, clients: 2, count: users, request: request)
        let timing = try LoadClients.run(port: api.port, clients: clients, count: 20000, request: request)
        print(
            "GET /api/notifications/{id}, \(secure) live secure pushes, \(secureInstallations) installations: "
                + timing.line.replacingOccurrences(of: "registrations/s", with: "fetches/s"))
    }
}

/// Throughput and latency of one measurement.
struct Timing {
    var count: Int
    var seconds: Double
    var latencies: [Double]
    var failures: Int
    /// What was counted, and the answer expected of each.
    var unit = "registrations"
    var expected = 200

    var rate: Double { Double(count) / seconds }

    /// The 99th percentile of the latencies, in seconds.
    var p99: Double {
        let sorted = latencies.sorted()
        return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
    }

    var line: String {
        let sorted = latencies.sorted()
        let p50 = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        return String(
            format: "%.0f %@/s (%d in %.2f s), p50 %.1f ms, p99 %.1f ms%@", rate, unit, count, seconds, p50 * 1000,
            p99 * 1000, failures > 0 ? ", \(failures) not \(expected)" : "")
    }
}

/// `clients` threads, each with one kept-alive connection, sending requests `0..<count` between
/// them (a request's text made by `request`), each timed from its first byte out to its answer's
/// last byte in.
enum LoadClients {
    static func run(port: Int, clients: Int, count: Int, request: @escaping @Sendable (Int) -> String) throws -> Timing
    {
        try run(ports: [port], clients: clients, count: count, request: request)
    }

    /// As `run(port:…)`, client `i` talking to `ports[i % ports.count]`.
    static func run(
        ports: [Int], clients: Int, count: Int, expecting expected: Int = 200,
        request: @escaping @Sendable (Int) -> String
    ) throws -> Timing {
        let next = Counter()
        let results = ResultBox()
        let started = Date()
        let threads = (0..<clients).map { client in
            Thread {
                var connection = KeptAlive(port: ports[client % ports.count])
                var latencies: [Double] = []
                var failures = 0
                while let n = next.take(below: count) {
                    let begin = DispatchTime.now().uptimeNanoseconds
                    let status = connection.exchange(Array(request(n).utf8))
                    latencies.append(Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9)
                    if status != expected { failures += 1 }
                }
                connection.close()
                results.add(latencies, failures)
            }
        }
        for thread in threads { thread.start() }
        results.wait(for: clients)
        let (latencies, failures) = results.all
        return Timing(
            count: count, seconds: Date().timeIntervalSince(started), latencies: latencies, failures: failures,
            expected: expected)
    }

    final class Counter: @unchecked Sendable {
        private var value = 0
        private let lock = NSLock()
        func take(below limit: Int) -> Int? {
            lock.lock()
            defer { lock.unlock() }
            guard value < limit else { return nil }
            value += 1
            return value - 1
        }
    }

    final class ResultBox: @unchecked Sendable {
        private var latencies: [Double] = []
        private var failures = 0
        private var done = 0
        private let condition = NSCondition()
        func add(_ more: [Double], _ failed: Int) {
            condition.lock()
            latencies += more
            failures += failed
            done += 1
            condition.broadcast()
            condition.unlock()
        }
        func wait(for count: Int) {
            condition.lock()
            while done < count { condition.wait() }
            condition.unlock()
        }
        var all: ([Double], Int) {
            condition.lock()
            defer { condition.unlock() }
            return (latencies, failures)
        }
    }
}

/// One HTTP/1.1 connection kept open between requests (reopened when the server closes it).
struct KeptAlive {
    let port: Int
    private var fd: Int32 = -1

    init(port: Int) { self.port = port }

    mutating func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Sends `bytes` and reads one answer; its status (0: no answer).
    mutating func exchange(_ bytes: [UInt8]) -> Int { answer(bytes).status }

    /// Sends `bytes` and reads one answer: its status (0: no answer) and whether it said
    /// `Retry-After`.
    mutating func answer(_ bytes: [UInt8]) -> (status: Int, retryAfter: Bool) {
        for _ in 0..<2 {
            if fd < 0 { fd = Self.connect(port) }
            guard fd >= 0 else { return (0, false) }
            if let answer = attempt(bytes) { return answer }
            close()
        }
        return (0, false)
    }

    private func attempt(_ bytes: [UInt8]) -> (status: Int, retryAfter: Bool)? {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return nil }
            sent += n
        }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return nil }
            data += buffer[0..<n]
            guard let end = Self.headerEnd(data) else { continue }
            let head = String(decoding: data[0..<end], as: UTF8.self)
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            if data.count >= end + 4 + length {
                return (
                    Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0,
                    head.lowercased().contains("\r\nretry-after:")
                )
            }
        }
    }

    private static func headerEnd(_ data: [UInt8]) -> Int? {
        guard data.count >= 4 else { return nil }
        for i in 0...(data.count - 4) where data[i] == 13 && data[i + 1] == 10 && data[i + 2] == 13 && data[i + 3] == 10
        {
            return i
        }
        return nil
    }

    private static func connect(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            return -1
        }
        return fd
    }
}

/// A child of the bench (the emulator, `newspush api`, a watcher), started by the tests' kit
/// (`ChildProcess`: `posix_spawn`, and it dies with the bench), and the port of its first line.
final class BenchProcess {
    let child: RunningChild
    let port: Int

    private init(child: RunningChild, port: Int) {
        self.child = child
        self.port = port
    }

    /// The folder of the bench's binary, where the release build puts `newspush` and `newspush-hub`.
    static var binaries: URL { URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent() }

    /// The hub emulator of the bench's build with no device of its own (the phones register
    /// through `newspush api`), its devices file in `folder`.
    static func emptyHub(in folder: TemporaryFolder) async throws -> BenchProcess {
        let devices = try folder.write("devices.yaml", "hub: breaking-news\ndevices: []\n")
        return try await start(
            binaries.appendingPathComponent("newspush-hub").path, ["--port", "0", "--devices", devices],
            ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"])
    }

    /// `environment`: `NAME=value` entries, beside a `PATH`.
    static func start(_ path: String, _ arguments: [String], _ environment: [String]) async throws -> BenchProcess {
        let child = try ChildProcess.start(
            path, arguments, environment: variables(["PATH=/usr/bin:/bin"] + environment), errors: .discard)
        guard let port = await child.stdout?.listeningPort().port else {
            child.stop()
            throw ValidationError("\(path) did not start")
        }
        return BenchProcess(child: child, port: port)
    }

    private static func variables(_ entries: [String]) -> [String: String] {
        Dictionary(
            entries.map {
                let parts = $0.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), String(parts.count > 1 ? parts[1] : ""))
            }, uniquingKeysWith: { $1 })
    }

    /// The process's CPU time (user and system), in seconds.
    func cpuSeconds() -> Double {
        let stat = (try? String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8)) ?? ""
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// VmRSS of the process, in kB.
    func residentKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Asks it to stop (SIGTERM) and waits for its end.
    func stop() {
        guard child.isRunning else { return }
        child.terminate()
        _ = child.waitForExit()
    }

    /// Runs a command to its end; its standard output.
    @discardableResult
    static func runToEnd(_ path: String, _ arguments: [String], _ environment: [String], input: String? = nil) throws
        -> String
    {
        let finished = try ChildProcess.run(
            path, arguments, environment: variables(environment), input: input.map { Data($0.utf8) })
        guard finished.status == 0 else {
            throw ValidationError("\(path) \(arguments.joined(separator: " ")) exited \(finished.status)")
        }
        return String(decoding: finished.stdout, as: UTF8.self)
    }
}
