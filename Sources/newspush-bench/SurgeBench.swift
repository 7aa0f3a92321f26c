import ArgumentParser
import Foundation
import NewsPushSessions
import NewsPushTesting

#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `newspush-bench surge`: the app opens after a breaking alert. An index of `index`
/// installations; `starts` app starts from `clients` clients, 95 % of them registering again
/// with nothing changed and 5 % new (each a hub write), against the emulator throttling
/// installation writes above `throttle` a second (429, Retry-After 1). Beside it, in the same
/// run, the reference: as many registrations that each change something (each a hub write,
/// what every app start cost before), against the emulator unthrottled. SQLite with one
/// instance, PostgreSQL with one and with two; the API's memory over 100,000 and 1,000,000
/// installations.
struct SurgeRegistrations: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "surge",
        abstract: "App starts after an alert (95 % unchanged) through `newspush api` against a throttling hub.")

    @Option(help: "Installations in the index.") var index = 1_000_000
    @Option(help: "App starts in the surge.") var starts = 200_000
    @Option(help: "Share of the starts that change something (a hub write).") var changed = 0.05
    @Option(help: "Registrations of the reference (each a hub write).") var reference = 50_000
    @Option(help: "Concurrent clients.") var clients = 64
    @Option(help: "Installation writes a second the emulator takes before it answers 429.") var throttle = 500
    @Option(help: "Skip PostgreSQL.") var skipPostgres = false

    func run() async throws {
        let binary = BenchProcess.binaries.appendingPathComponent("newspush").path
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let hub = try await BenchProcess.emptyHub(in: folder)
        defer { hub.stop() }
        print("\(starts) app starts (\(Int(changed * 100)) % changed), \(clients) clients, index of \(index)")
        let sqlite = Engine.sqlite(folder.path + "/surge-state.db")
        try await measure(
            binary, hub: hub, engine: Engine.sqlite(folder.path + "/surge-small.db"), folder: folder, instances: 1,
            size: index / 10, memoryOnly: true)
        try await measure(binary, hub: hub, engine: sqlite, folder: folder, instances: 1, size: index)
        guard !skipPostgres else { return }
        let postgres = try await LocalPostgres.start(fsync: true)
        defer { postgres.stop() }
        for instances in [1, 2] {
            let engine = Engine.postgres(postgres, try await postgres.createDatabase())
            try await measure(binary, hub: hub, engine: engine, folder: folder, instances: instances, size: index)
        }
    }

    /// CPU seconds of every `postgres` process on the machine (the test server's).
    static func postgresCPU() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init) ?? []
        return pids.reduce(0) { total, pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                stat.contains("(postgres)")
            else { return total }
            let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else {
                return total
            }
            return total + (user + system) / ticks
        }
    }

    /// A ledger to measure on.
    enum Engine {
        case sqlite(String)
        case postgres(LocalPostgres, String)

        var state: String {
            switch self {
            case .sqlite(let path): return path
            case .postgres(_, let url): return url
            }
        }
        var name: String {
            if case .sqlite = self { return "SQLite" }
            return "PostgreSQL"
        }
        var environment: [String] {
            guard case .postgres(let server, _) = self else { return [] }
            return [server.environmentEntry]
        }
    }

    /// One engine: the index loaded, the surge, the reference; figures printed.
    private func measure(
        _ binary: String, hub: BenchProcess, engine: Engine, folder: TemporaryFolder, instances: Int, size: Int,
        memoryOnly: Bool = false
    ) async throws {
        let config = try folder.write(
            "surge-\(engine.name)-\(instances)-\(size).yaml",
            ApiRegistrations.config(hubPort: hub.port, state: engine.state).replacingOccurrences(
                of: "api: {", with: "api: {hub_writes: 32, "))
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"] + engine.environment
        var apis: [BenchProcess] = []
        for _ in 0..<instances {
            apis.append(
                try await BenchProcess.start(
                    binary, ["api", "--listen", "127.0.0.1:0", "--config", config], environment))
        }
        defer { for api in apis { api.stop() } }
        let ports = apis.map(\.port)
        try await IndexLoader(engine: engine, size: size, port: ports[0]).load(folder: folder)
        print("\(engine.name), \(instances) instance\(instances == 1 ? "" : "s"), index of \(size):")
        try Emulator.throttle(hub.port, perSecond: throttle)
        let before = try Emulator.installationRequests(hub.port)
        let cpu = (apis.map { $0.cpuSeconds() }.reduce(0, +), hub.cpuSeconds(), Self.postgresCPU())
        let surge = SurgeLoad.run(
            ports: ports, clients: clients, count: memoryOnly ? 20_000 : starts, changed: changed, index: size)
        let requests = try Emulator.installationRequests(hub.port) - before
        let spent = (
            apis.map { $0.cpuSeconds() }.reduce(0, +) - cpu.0, hub.cpuSeconds() - cpu.1, Self.postgresCPU() - cpu.2
        )
        try Emulator.clearFaults(hub.port)
        let memory = apis.map { Double($0.residentKilobytes()) / 1024 }
        if memoryOnly {
            print(String(format: "  resident memory of newspush api after 20,000 starts: %.1f MB", memory[0]))
            return
        }
        print("  unchanged: " + surge.unchanged.line.replacingOccurrences(of: "registrations/s", with: "refreshes/s"))
        print("  changed:   " + surge.changed.line + ", \(surge.busy) answered 503 with Retry-After")
        print(
            "  hub: \(requests) installation requests for \(surge.changedCount) changed starts (the 429s' retries "
                + "included); 5xx without Retry-After: \(surge.bare5xx)")
        let per = 1000 / Double(starts)
        print(
            String(
                format: "  CPU per 1,000 starts: newspush api %.2f s, emulator %.2f s, PostgreSQL server %.2f s",
                spent.0 * per, spent.1 * per, spent.2 * per))
        let writes = ReferenceLoad.run(ports: ports, clients: clients, count: reference, offset: 50_000_000)
        print("  reference, every start a hub write (no throttling): " + writes.line)
        print(
            String(
                format: "  unchanged refreshes %.1f× the reference%@; resident memory %@ MB",
                surge.unchanged.rate / writes.rate,
                instances > 1
                    ? String(format: ", %.0f refreshes/s per instance", surge.unchanged.rate / Double(instances)) : "",
                memory.map { String(format: "%.1f", $0) }.joined(separator: ", ")))
    }
}

/// Loads `size` installations (`s-N`, FCM token `surge-N`, topic World) straight into the
/// ledger, with the template set the API writes (read off one it registered).
struct IndexLoader {
    let engine: SurgeRegistrations.Engine
    let size: Int
    let port: Int

    func load(folder: TemporaryFolder) async throws {
        var probe = KeptAlive(port: port)
        let body = #"{"platform":"fcmv1","pushChannel":"surge-probe","topics":["World"]}"#
        _ = probe.exchange(
            Array(
                ("PUT /api/installations/probe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8))
        probe.close()
        let digest = try await query("SELECT template_digest FROM installations WHERE id = 'probe'")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let rows = folder.path + "/installations-\(size).csv"
        let tags = folder.path + "/tags-\(size).csv"
        var installations = Data()
        var tagRows = Data()
        installations.reserveCapacity(size * 140)
        for n in 0..<size {
            let handle = DeviceRules.digest("surge-\(n)")
            installations.append(contentsOf: "s-\(n),,fcmv1,World,,\(handle),\(now),\(now),\(digest)\n".utf8)
            tagRows.append(contentsOf: "World,s-\(n)\n".utf8)
        }
        try installations.write(to: URL(fileURLWithPath: rows))
        try tagRows.write(to: URL(fileURLWithPath: tags))
        chmod(folder.path, 0o755)
        chmod(rows, 0o644)
        chmod(tags, 0o644)
        let started = Date()
        switch engine {
        case .sqlite(let path):
            _ = try BenchProcess.runToEnd(
                "/usr/bin/sqlite3", [path], [],
                input: """
                    PRAGMA journal_mode = WAL;
                    CREATE TEMP TABLE i (id, owner, platform, tags, language, handle_digest, created_at, refreshed_at, template_digest);
                    CREATE TEMP TABLE t (tag, installation_id);
                    .mode csv
                    .import \(rows) i
                    .import \(tags) t
                    BEGIN;
                    INSERT INTO installations SELECT id, NULLIF(owner, ''), platform, tags, NULLIF(language, ''),
                      handle_digest, CAST(created_at AS INTEGER), CAST(refreshed_at AS INTEGER), template_digest FROM i;
                    INSERT INTO installation_tags SELECT tag, installation_id FROM t;
                    COMMIT;
                    """)
        case .postgres(let server, let url):
            let database = Self.database(url)
            try await server.psql(
                "COPY installations (id, owner, platform, tags, language, handle_digest, created_at, refreshed_at, "
                    + "template_digest) FROM '\(rows)' WITH (FORMAT csv)", database: database)
            try await server.psql("COPY installation_tags FROM '\(tags)' WITH (FORMAT csv)", database: database)
            try await server.psql("ANALYZE", database: database)
        }
        print(String(format: "  index of %d loaded in %.1f s", size, Date().timeIntervalSince(started)))
    }

    /// The database a `state:` URL names.
    static func database(_ url: String) -> String {
        String((url.split(separator: "/").last ?? "").prefix { $0 != "?" })
    }

    private func query(_ sql: String) async throws -> String {
        switch engine {
        case .sqlite(let path):
            return try BenchProcess.runToEnd("/usr/bin/sqlite3", [path, sql], []).trimmingCharacters(
                in: .whitespacesAndNewlines)
        case .postgres(let server, let url):
            return try await server.psql(sql, database: Self.database(url))
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}

/// The emulator's control API, from the bench.
enum Emulator {
    static func throttle(_ port: Int, perSecond: Int) throws {
        _ = try control(
            port, "POST /_emulator/faults",
            #"{"status":429,"retry_after":"1","count":1000000000,"format":"installation","per_second":\#(perSecond)}"#)
    }

    static func clearFaults(_ port: Int) throws { _ = try control(port, "DELETE /_emulator/faults", "") }

    static func installationRequests(_ port: Int) throws -> Int {
        let body = try control(port, "GET /_emulator/requests", "")
        let counts = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Int]
        return counts?["installation"] ?? 0
    }

    private static func control(_ port: Int, _ head: String, _ body: String) throws -> String {
        let url = URL(string: "http://127.0.0.1:\(port)" + (head.split(separator: " ").last.map(String.init) ?? ""))
        var request = URLRequest(url: try url.orThrow())
        request.httpMethod = String(head.split(separator: " ").first ?? "GET")
        if !body.isEmpty { request.httpBody = Data(body.utf8) }
        let result = Mutexed<String>("")
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, _, _ in
            result.set(String(decoding: data ?? Data(), as: UTF8.self))
            done.signal()
        }.resume()
        done.wait()
        return result.get()
    }
}

/// A value one thread sets and another reads.
final class Mutexed<T>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ value: T) { self.value = value }
    func set(_ new: T) {
        lock.lock()
        value = new
        lock.unlock()
    }
    func get() -> T {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
    func modify(_ change: (inout T) -> Void) {
        lock.lock()
        change(&value)
        lock.unlock()
    }
}

extension Optional {
    func orThrow() throws -> Wrapped {
        guard let self else { throw ValidationError("no value") }
        return self
    }
}

/// The surge's clients: an unchanged start registers `s-K` (a random installation of the
/// index, its handle and topic) as it is; a changed one a new installation (`c-n`).
enum SurgeLoad {
    struct Result {
        var unchanged: Timing
        var changed: Timing
        var changedCount: Int
        var busy: Int
        var bare5xx: Int
    }

    /// `clients` clients send the unchanged starts, a quarter as many more the changed ones,
    /// all at once: a phone whose change waits for its turn at a throttling hub does not hold
    /// back the other phones' starts (as one client sending both kinds in turn would). Each kind
    /// is timed from the start to its last answer.
    static func run(ports: [Int], clients: Int, count: Int, changed: Double, index: Int) -> Result {
        let changedCount = Int((Double(count) * changed).rounded())
        let counters = (unchanged: LoadClients.Counter(), changed: LoadClients.Counter())
        let collected = Mutexed<[(Bool, Double, Int, Bool)]>([])
        let ends = Mutexed<(unchanged: Date, changed: Date)>((.distantPast, .distantPast))
        let started = Date()
        let group = DispatchGroup()
        let changers = max(1, clients / 4)
        for client in 0..<(clients + changers) {
            let isChanger = client >= clients
            let thread = Thread {
                var connection = KeptAlive(port: ports[client % ports.count])
                var mine: [(Bool, Double, Int, Bool)] = []
                var random = SystemRandomNumberGenerator()
                let counter = isChanger ? counters.changed : counters.unchanged
                while let n = counter.take(below: isChanger ? changedCount : count - changedCount) {
                    let k = Int.random(in: 0..<index, using: &random)
                    let request =
                        isChanger
                        ? Self.put("c-\(n)", handle: "changed-\(n)") : Self.put("s-\(k)", handle: "surge-\(k)")
                    let begin = DispatchTime.now().uptimeNanoseconds
                    let answer = connection.answer(Array(request.utf8))
                    let seconds = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9
                    mine.append((isChanger, seconds, answer.status, answer.retryAfter))
                }
                connection.close()
                collected.modify { $0 += mine }
                ends.modify { if isChanger { $0.changed = Date() } else { $0.unchanged = Date() } }
                group.leave()
            }
            group.enter()
            thread.start()
        }
        group.wait()
        let all = collected.get()
        let (unchangedEnd, changedEnd) = ends.get()
        func timing(_ rows: [(Bool, Double, Int, Bool)], until end: Date) -> Timing {
            Timing(
                count: rows.count, seconds: end.timeIntervalSince(started), latencies: rows.map(\.1),
                failures: rows.filter { $0.2 != 200 }.count)
        }
        let changedOnes = all.filter { $0.0 }
        return Result(
            unchanged: timing(all.filter { !$0.0 }, until: unchangedEnd),
            changed: timing(changedOnes, until: changedEnd),
            changedCount: changedOnes.count, busy: all.filter { $0.2 == 503 && $0.3 }.count,
            bare5xx: all.filter { $0.2 >= 500 && !$0.3 }.count)
    }

    static func put(_ id: String, handle: String) -> String {
        let body = #"{"platform":"fcmv1","pushChannel":"\#(handle)","topics":["World"]}"#
        return "PUT /api/installations/\(id) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }
}

/// The reference: `count` new installations, each a hub write.
enum ReferenceLoad {
    static func run(ports: [Int], clients: Int, count: Int, offset: Int) -> Timing {
        (try? LoadClients.run(ports: ports, clients: clients, count: count) { n in
            SurgeLoad.put("r-\(n + offset)", handle: "reference-\(n + offset)")
        }) ?? Timing(count: 0, seconds: 1, latencies: [], failures: 0)
    }
}
