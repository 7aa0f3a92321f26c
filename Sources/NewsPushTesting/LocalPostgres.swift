import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real PostgreSQL server for the tests (Debian's `postgresql` package): `initdb` in a
/// temporary folder and `postgres` on a free loopback port, as the unprivileged user `nobody`
/// when the tests run as root (the server refuses root). Password authentication
/// (scram-sha-256) with a password made up for this server; the URL names it as
/// `${NEWSPUSH_TEST_PG_PASSWORD}`, set by `environment`.
///
/// A watchdog shell beside the server stops it and removes its folder when the test process
/// ends, however it ends.
public final class LocalPostgres: @unchecked Sendable {
    /// The folder with `initdb`, `postgres` and `psql`, or nil when the package is absent.
    public static let binaries: String? = {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap(Int.init).sorted().reversed().map { "\(root)/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: "\($0)/postgres") }
    }()

    /// Why the PostgreSQL tests cannot run here, if they cannot.
    public static var missing: String? {
        binaries == nil ? "PostgreSQL's server binaries are not installed (Debian's postgresql package)" : nil
    }

    /// The environment variable the URLs name for the password.
    public static let passwordVariable = "NEWSPUSH_TEST_PG_PASSWORD"

    /// The loopback port the server listens on.
    public let port: Int
    /// The database superuser the tests connect as.
    public let user = "newspush"
    /// Made up for this server (never a real secret).
    public let password: String
    private let folder: String
    private let bin: String
    private var server: RunningChild?
    /// Server options for TLS (empty without).
    private var tlsOptions = ""

    /// One server shared by the tests of this process (each test makes its own database).
    public static func shared() async throws -> LocalPostgres {
        try await blocking { try sharedNow() }
    }

    /// A new server of its own (for tests that stop or restart it). `fsync: false` for speed
    /// where a crash of the machine is not what is tested; `tls`: TCP connections over TLS only,
    /// with a self-signed certificate no client trusts.
    public static func start(fsync: Bool = false, tls: Bool = false) async throws -> LocalPostgres {
        try await blocking { try LocalPostgres(fsync: fsync, tls: tls) }
    }

    /// A new empty database; its `state:` URL.
    public func createDatabase() async throws -> String {
        try await Self.blocking { try self.createDatabaseNow() }
    }

    /// Runs `sql` with psql and returns its unaligned output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        try await Self.blocking { try self.psqlNow(sql, database: database) }
    }

    /// Ends every connection to `database` but psql's own (as an administrator would).
    public func terminateConnections(to database: String) async throws -> Int {
        let count = try await psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> "
                + "pg_backend_pid()")
        return Int(count) ?? 0
    }

    /// Stops the server (fast shutdown: connections are ended; `immediate`: as `pg_ctl stop -m
    /// immediate`, every process ended at once and the next start recovers) and starts it again
    /// after `down` seconds.
    public func restart(immediate: Bool = false, down: Double = 0) async throws {
        try await Self.blocking {
            self.stopServer(immediate: immediate)
            Thread.sleep(forTimeInterval: down)
            try self.start(fsync: false)
        }
    }

    /// Runs `work` off the concurrency pool: initdb, the server's start and psql block for
    /// seconds on a busy machine, and on the pool they would starve the tests' HTTP servers.
    private static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await offThePool { Result { try work() } }.get()
    }

    private static func sharedNow() throws -> LocalPostgres {
        let server = try sharedServer.get()
        // In-process ledgers (the core's tests) read the password from this process's
        // environment. Set once: `setenv` may move the environment while another thread's
        // `Process.run` copies it (a crash seen in CI when many tests started servers at once).
        startedLock.withLock {
            if !sharedStarted { setenv(passwordVariable, server.password, 1) }
            sharedStarted = true
        }
        return server
    }

    /// The password's variable for the shared server, once a test started it (what every
    /// newspush process the tests start is given).
    public static var sharedEnvironment: [String: String] {
        startedLock.withLock { sharedStarted } ? (try? sharedServer.get().environment) ?? [:] : [:]
    }

    private static let startedLock = NSLock()
    nonisolated(unsafe) private static var sharedStarted = false

    private static let sharedServer = Result { try LocalPostgres(fsync: false, tls: false) }

    private init(fsync: Bool, tls: Bool) throws {
        guard let bin = Self.binaries else { throw SpawnError(description: Self.missing ?? "") }
        self.bin = bin
        password = "pw-" + UUID().uuidString.prefix(12).lowercased()
        folder = NSTemporaryDirectory() + "newspush-pg-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try password.write(toFile: folder + "/pw", atomically: true, encoding: .utf8)
        try Self.run(["chown", "-R", "nobody", folder], asServer: false)
        try Self.run(
            [
                "\(bin)/initdb", "-D", folder + "/data", "-U", user, "--pwfile=\(folder)/pw", "-A", "scram-sha-256",
                "-E", "UTF8", "--locale=C", "--no-sync",
            ], asServer: true)
        unlink(folder + "/pw")
        port = try Self.freePort()
        if tls { try makeCertificate() }
        try start(fsync: fsync)
    }

    /// The `state:` URL of `database` (password by reference).
    public func url(_ database: String) -> String {
        "postgres://\(user):${\(Self.passwordVariable)}@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// The environment a newspush process needs to reach this server.
    public var environment: [String: String] { [Self.passwordVariable: password] }

    /// The password's variable as a `NAME=value` entry of a child's environment.
    public var environmentEntry: String { "\(Self.passwordVariable)=\(password)" }

    private func createDatabaseNow() throws -> String {
        let name = "ledger_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
        _ = try psqlNow("CREATE DATABASE \(name)")
        return url(name)
    }

    private func psqlNow(_ sql: String, database: String = "postgres") throws -> String {
        try client("psql", ["-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", sql])
    }

    /// `pg_dump` of `database`: every row as SQL text (what a test greps for what must be gone).
    public func dump(_ database: String) async throws -> String {
        try await Self.blocking { try self.client("pg_dump", ["--data-only", "--inserts", database]) }
    }

    /// Runs one of the server's client programs against it; its standard output.
    private func client(_ program: String, _ arguments: [String]) throws -> String {
        let path =
            FileManager.default.isExecutableFile(atPath: "\(bin)/\(program)")
            ? "\(bin)/\(program)" : "/usr/bin/\(program)"
        let finished = try ChildProcess.run(
            path, ["-h", "127.0.0.1", "-p", String(port), "-U", user] + arguments,
            environment: ["PGPASSWORD": password, "PATH": "/usr/bin:/bin"])
        guard finished.status == 0 else {
            throw SpawnError(description: "\(program): \(String(decoding: finished.stderr, as: UTF8.self))")
        }
        return String(decoding: finished.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server and removes its folder.
    public func stop() {
        stopServer()
        try? FileManager.default.removeItem(atPath: folder)
    }

    deinit { stop() }

    private func start(fsync: Bool) throws {
        // The watchdog: stops the server when this test process is gone.
        let script = """
            $5 "$1" -D "$2/data" -p "$3" -k "$2" -c listen_addresses=127.0.0.1 -c fsync=\(fsync ? "on" : "off") \\
              -c max_connections=200 $6 >>"$2/server.log" 2>&1 &
            server=$!
            trap 'kill -INT $server 2>/dev/null; wait $server; exit 0' TERM
            trap 'kill -QUIT $server 2>/dev/null; wait $server; exit 0' USR1
            while kill -0 "$4" 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 0.5; done
            kill -INT $server 2>/dev/null
            wait $server
            rm -rf "$2"
            """
        // As root the server runs as nobody (setpriv execs it in place, so $! is the server).
        let asNobody = getuid() == 0 ? "setpriv --reuid=nobody --regid=nogroup --clear-groups" : ""
        // The watchdog is told TERM when this process ends, so it stops the server before it goes.
        let process = try ChildProcess.start(
            "/bin/sh",
            [
                "-c", script, "watchdog", "\(bin)/postgres", folder, String(port), String(getpid()), asNobody,
                tlsOptions,
            ],
            environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"], output: .discard, errors: .discard,
            deathSignal: "TERM")
        server = process
        for _ in 0..<200 {
            if (try? psqlNow("SELECT 1")) == "1" { return }
            guard process.isRunning else { break }
            usleep(50_000)
        }
        let log = (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? ""
        throw SpawnError(description: "PostgreSQL did not start on port \(port): \(log.suffix(600))")
    }

    /// A self-signed certificate for 127.0.0.1 (no client trusts it): TLS on, for `sslmode`.
    private func makeCertificate() throws {
        let key = folder + "/server.key"
        let certificate = folder + "/server.crt"
        try Self.run(
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                "-keyout", key, "-out", certificate,
            ], asServer: false)
        try Self.run(["chown", "nobody", key, certificate], asServer: false)
        try Self.run(["chmod", "600", key], asServer: false)
        tlsOptions = "-c ssl=on -c ssl_cert_file=\(certificate) -c ssl_key_file=\(key)"
        // TCP connections only over TLS, so a client that did not use it is refused.
        let rules = folder + "/data/pg_hba.conf"
        let text = try String(contentsOfFile: rules, encoding: .utf8)
        let tlsOnly = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.hasPrefix("host ") ? "hostssl" + $0.dropFirst(4) : $0
        }
        try tlsOnly.joined(separator: "\n").write(toFile: rules, atomically: false, encoding: .utf8)
    }

    private func stopServer(immediate: Bool = false) {
        guard let server, server.isRunning else { return }
        server.signal(immediate ? SIGUSR1 : SIGTERM)
        _ = server.waitForExit()
        // The watchdog waits for the server's own end: the port is free once this returns.
        self.server = nil
    }

    private static func run(_ arguments: [String], asServer: Bool) throws {
        let asNobody = asServer && getuid() == 0
        let finished = try ChildProcess.run(
            asNobody ? "/usr/sbin/runuser" : "/usr/bin/env", asNobody ? ["-u", "nobody", "--"] + arguments : arguments,
            environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
        guard finished.status == 0 else {
            throw SpawnError(description: "\(arguments[0]): \(String(decoding: finished.stderr, as: UTF8.self))")
        }
    }

    /// A port nothing listens on now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard let port = bindLoopback(fd) else { throw SpawnError(description: "no free port") }
        return port
    }
}
