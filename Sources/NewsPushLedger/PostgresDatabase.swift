import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NewsPushModel
import PostgresNIO
import Synchronization

/// The ledger in a PostgreSQL database shared by several hosts: one connection (postgres-nio),
/// used from the command's own thread; each call waits for the server's answer, so a statement
/// is committed (or has failed) before the next line of newspush runs.
///
/// Only this file knows the engine's dialect: `?` placeholders become `$1…`, SQLite's
/// `BEGIN IMMEDIATE` is a plain `BEGIN` (one run at a time holds the advisory lock anyway), and
/// the server's errors are sorted into `DatabaseError` kinds with a message that names the
/// database and never the password.
final class PostgresDatabase: LedgerDatabase {
    let address: PostgresAddress
    private let connection: PostgresConnection
    /// Whether the connection is this database's own (closed with it) or lent by the pool of
    /// `LedgerConnections` for one request.
    private let owned: Bool
    /// Whether a statement failed on the connection: a lent one is then let go by its pool
    /// rather than lent again (it may be lost, or hold a lock or a transaction).
    private(set) var failed = false
    /// Whether the connection was found lost by the first statement, before any answer:
    /// nothing was done on it (a lent one is then tried again on another).
    private(set) var lostBeforeAnyAnswer = false
    private var answered = false
    /// The ledger's statements with numbered placeholders, shared by every connection of the
    /// process (a lent one lives for one request: its own copy would be worked out again each time).
    private static let numbered = Mutex<[String: String]>([:])
    /// postgres-nio logs queries and connection details at debug level: never shown.
    static let silent = Logger(label: "newspush.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    private init(address: PostgresAddress, connection: PostgresConnection, owned: Bool = true) {
        self.address = address
        self.connection = connection
        self.owned = owned
    }

    /// The ledger's database over `connection`, lent by a pool that keeps it.
    static func lent(_ connection: PostgresConnection, address: PostgresAddress) -> PostgresDatabase {
        PostgresDatabase(address: address, connection: connection, owned: false)
    }

    /// Connects to the database `address` names, with the password from the environment.
    static func connect(
        _ address: PostgresAddress, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(DatabaseError) -> PostgresDatabase {
        let password = try PostgresPassword.find(for: address, environment: environment)
        var configuration = PostgresConnection.Configuration(
            host: address.host, port: address.port, username: address.user, password: password,
            database: address.database, tls: try tls(address))
        configuration.options.connectTimeout = .milliseconds(Int64(address.connectTimeout * 1000))
        configuration.options.tlsServerName = address.tls == .verifyFull ? address.host : nil
        do {
            let connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: 1, logger: silent
            ).wait()
            return PostgresDatabase(address: address, connection: connection)
        } catch {
            throw PostgresErrors.sorted(error, address: address, connecting: true)
        }
    }

    /// TLS as `sslmode` says (`PostgresAddress.tlsSettings`).
    private static func tls(_ address: PostgresAddress) throws(DatabaseError) -> PostgresConnection.Configuration.TLS {
        guard let (settings, preferred) = address.tlsSettings else { return .disable }
        do {
            let context = try NIOSSLContext(configuration: settings)
            return preferred ? .prefer(context) : .require(context)
        } catch {
            throw DatabaseError(kind: .cannotOpen, message: "cannot set up TLS: \(error)")
        }
    }

    /// Ends the connection (and with it the advisory lock, if this connection holds it); a lent
    /// one is its pool's to end.
    func close() {
        guard owned, !connection.isClosed else { return }
        _ = try? answer { $0.close() }
    }

    deinit { close() }

    @discardableResult
    func run(_ sql: String, _ arguments: [SQLValue]) throws(DatabaseError) -> Int {
        try execute(sql, arguments).metadata.rows ?? 0
    }

    /// A statement run again on this connection is prepared (`PreparedStatements`).
    func query(_ sql: String, _ arguments: [SQLValue]) throws(DatabaseError) -> [SQLRow] {
        try waitFor { PreparedStatements.rows(on: $0, sql, arguments) }
    }

    func transaction<T>(_ body: () throws -> T) throws -> T {
        try run("BEGIN", [])
        do {
            let value = try body()
            try run("COMMIT", [])
            return value
        } catch {
            _ = try? run("ROLLBACK", [])
            throw error
        }
    }

    /// This transaction's commit returns before its log reaches the disk (a crash may lose it
    /// and nothing else; the server's data stays whole).
    func commitWithoutWaiting() throws(DatabaseError) {
        try run("SET LOCAL synchronous_commit = off", [])
    }

    /// The schema's migration lock, held until the transaction ends.
    func lockForMigration() throws(DatabaseError) {
        _ = try query("SELECT pg_advisory_xact_lock(1853253492, hashtext(current_schema()))", [])
    }

    func tableExists(_ name: String) throws(DatabaseError) -> Bool {
        !(try query(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?",
            [.text(name)]
        ).isEmpty)
    }

    /// The server keeps its own storage whole (checksums, WAL replay): nothing to check here.
    func integrityProblems(quick: Bool) throws(DatabaseError) -> [String] { [] }

    func forgetErased() throws(DatabaseError) {}

    var isConnected: Bool { !connection.isClosed }

    /// Whether this connection's prepared statements are kept (the tests' view).
    var keepsPreparedStatements: Bool { PreparedStatements.areKept(for: connection) }

    var modifiesInWith: Bool { true }

    var commitWithoutWaitingInSelect: String { Self.commitWithoutWaitingInSelect }

    /// What a statement's `SELECT` calls to commit without waiting for the disk.
    static let commitWithoutWaitingInSelect = "set_config('synchronous_commit', 'off', true)"

    func now() throws(DatabaseError) -> Date {
        let milliseconds = try query("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)", [])
        guard let value = milliseconds.first?.int(0) else {
            throw DatabaseError(kind: .other, message: "the server did not say its time")
        }
        return Date(timeIntervalSince1970: Double(value) / 1000)
    }

    /// Takes the ledger's advisory lock on this connection, waiting up to `wait` seconds; false
    /// when another host holds it. Keyed by the schema, so two ledgers in one database do not
    /// share a lock.
    func takeAdvisoryLock(wait: Double) throws(DatabaseError) -> Bool {
        let deadline = Date().addingTimeInterval(wait)
        while true {
            let rows = try query("SELECT pg_try_advisory_lock(1853253491, hashtext(current_schema()))", [])
            if rows.first?.int(0) == 1 { return true }
            guard Date() < deadline else { return false }
            usleep(100_000)
        }
    }

    /// Sends a statement without waiting for its answer: the connection runs its statements in
    /// order, so whatever runs on it next (this request's or the next borrower's) runs after
    /// this one. A statement that fails closes the connection (a pool never lends a closed one).
    func send(_ sql: String, _ arguments: [SQLValue]) {
        let query = Self.statement(sql, arguments)
        let connection = connection
        connection.eventLoop.execute {
            connection.query(query, logger: Self.silent).whenFailure { _ in
                connection.close().whenComplete { _ in }
            }
        }
    }

    /// `sql` with numbered placeholders and `arguments` bound as postgres-nio sends them.
    static func statement(_ sql: String, _ arguments: [SQLValue]) -> PostgresQuery {
        var binds = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            switch argument {
            case .null: binds.appendNull()
            case .integer(let n): binds.append(n)
            case .real(let d): binds.append(d)
            case .text(let s): binds.append(s)
            }
        }
        return PostgresQuery(unsafeSQL: numbered(sql), binds: binds)
    }

    private func execute(_ sql: String, _ arguments: [SQLValue]) throws(DatabaseError) -> PostgresQueryResult {
        let query = Self.statement(sql, arguments)
        return try waitFor { $0.query(query, logger: Self.silent) }
    }

    /// The answer to what `start` sends; an error sorted, and the connection then marked failed.
    private func waitFor<T: Sendable>(_ start: @escaping @Sendable (PostgresConnection) -> EventLoopFuture<T>)
        throws(DatabaseError) -> T
    {
        do {
            guard !connection.isClosed else {
                throw DatabaseError(kind: .connection, message: "the connection to \(address.hostAndPort) was lost")
            }
            let result = try answer(start)
            answered = true
            return result
        } catch {
            var sorted = PostgresErrors.sorted(error, address: address, connecting: false)
            // postgres-nio's older interface says a lost connection in several ways.
            if connection.isClosed && sorted.kind == .other {
                sorted = DatabaseError(kind: .connection, message: sorted.message)
            }
            failed = true
            lostBeforeAnyAnswer = !answered && sorted.kind == .connection
            throw sorted
        }
    }

    /// How long one statement may wait for the server's answer before the connection counts as lost.
    static let answerTimeout: Int64 = 20

    /// The value of what `start` sends on the connection, or a lost connection when the server
    /// has not answered within `answerTimeout` (`PostgresDeadline`): a host that cannot commit
    /// must stop rather than wait for ever. The statement and its timer are set up in one turn
    /// of the connection's event loop (from this thread, each would wake it on its own).
    private func answer<T: Sendable>(_ start: @escaping @Sendable (PostgresConnection) -> EventLoopFuture<T>) throws
        -> T
    {
        let (address, connection) = (address, connection)
        return try connection.eventLoop.flatSubmit {
            PostgresDeadline.first(start(connection), within: Self.answerTimeout) {
                DatabaseError(
                    kind: .connection, message: "no answer from \(address.hostAndPort) within \(Self.answerTimeout) s")
            }
        }.wait()
    }

    /// `sql` with numbered placeholders, worked out once per statement for the process.
    static func numbered(_ sql: String) -> String {
        if let known = numbered.withLock({ $0[sql] }) { return known }
        let text = numberPlaceholders(sql)
        numbered.withLock { $0[sql] = text }
        return text
    }

    /// `?` → `$1`, `$2`, … outside quoted text (the ledger's SQL is written with `?`), each
    /// followed by what `suffix` says for it (a cast).
    static func numberPlaceholders(_ sql: String, suffix: (Int) -> String = { _ in "" }) -> String {
        var out = ""
        var number = 0
        var quoted = false
        for character in sql {
            if character == "'" { quoted.toggle() }
            if character == "?" && !quoted {
                number += 1
                out += "$\(number)" + suffix(number)
            } else {
                out.append(character)
            }
        }
        return out
    }

    /// A cell as the ledger's values: numbers, text, or null (booleans as 0/1).
    static func value(_ cell: PostgresCell) -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8:
            return (try? cell.decode(Int64.self)).map { .integer($0) } ?? .null
        case .float4, .float8:
            return (try? cell.decode(Double.self)).map { .real($0) } ?? .null
        case .numeric:
            let text = (try? cell.decode(Decimal.self)).map { "\($0)" } ?? ""
            return Int64(text).map { .integer($0) } ?? Double(text).map { .real($0) } ?? .null
        case .bool:
            return (try? cell.decode(Bool.self)).map { .integer($0 ? 1 : 0) } ?? .null
        default:
            return (try? cell.decode(String.self)).map { .text($0) } ?? .null
        }
    }
}

/// The password for a PostgreSQL ledger, as libpq finds it: the `${VAR}` the URL names, else
/// `PGPASSWORD`, else the first matching line of `PGPASSFILE` (default `~/.pgpass`).
enum PostgresPassword {
    static func find(for address: PostgresAddress, environment: [String: String]) throws(DatabaseError) -> String? {
        if let name = address.passwordVariable {
            guard let value = environment[name] else {
                throw DatabaseError(
                    kind: .cannotOpen,
                    message: "the environment variable \(name) that the URL names for the password is not set")
            }
            return value
        }
        if let value = environment["PGPASSWORD"] { return value }
        let file =
            environment["PGPASSFILE"] ?? environment["HOME"].map { ($0 as NSString).appendingPathComponent(".pgpass") }
        guard let file, let data = FileManager.default.contents(atPath: file) else { return nil }
        return fromPassFile(String(decoding: data, as: UTF8.self), address: address)
    }

    /// The first `host:port:database:user:password` line that matches (`*` matches anything,
    /// `\:` and `\\` are escapes).
    static func fromPassFile(_ text: String, address: PostgresAddress) -> String? {
        let wanted = [address.host, String(address.port), address.database, address.user]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = split(line)
            guard fields.count == 5 else { continue }
            if zip(fields, wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    private static func split(_ line: Substring) -> [String] {
        var fields = [""]
        var escaped = false
        for character in line where character != "\r" {
            if escaped {
                fields[fields.count - 1].append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" && fields.count < 5 {
                fields.append("")
            } else {
                fields[fields.count - 1].append(character)
            }
        }
        return fields
    }
}

/// postgres-nio's errors sorted into what the ledger acts on, with a message that says what to
/// fix (host, port, database, cause) and never the password.
enum PostgresErrors {
    static func sorted(_ error: any Error, address: PostgresAddress, connecting: Bool)
        -> DatabaseError
    {
        if let error = error as? DatabaseError { return error }
        if let legacy = error as? PostgresError { return sorted(legacy, address: address) }
        guard let error = error as? PSQLError else {
            return DatabaseError(kind: connecting ? .connection : .other, message: cause(error, address: address))
        }
        switch error.code {
        case .server:
            return server(
                state: error.serverInfo?[.sqlState] ?? "", message: error.serverInfo?[.message], address: address)
        case .sslUnsupported:
            return DatabaseError(
                kind: .cannotOpen,
                message: "\(address.hostAndPort) does not offer TLS, and sslmode=\(address.tls.rawValue) requires it")
        case .authMechanismRequiresPassword:
            return DatabaseError(
                kind: .cannotOpen,
                message: "the server asks for a password for user \(address.user) and none was given (${VAR} in the "
                    + "URL, PGPASSWORD or a PGPASSFILE)")
        case .connectionError:
            return DatabaseError(
                kind: .connection,
                message:
                    "cannot connect to \(address.hostAndPort): \(error.underlying.map { cause($0, address: address) } ?? "refused")"
            )
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            return DatabaseError(
                kind: .connection, message: "the connection to \(address.hostAndPort) was lost (server closed it)")
        default:
            return DatabaseError(kind: connecting ? .connection : .other, message: "\(error.code)")
        }
    }

    /// An error of postgres-nio's older interface (its prepared statements) sorted as the
    /// newer one's.
    private static func sorted(_ error: PostgresError, address: PostgresAddress) -> DatabaseError {
        switch error {
        case .server(let server):
            return Self.server(
                state: server.fields[.sqlState] ?? "", message: server.fields[.message], address: address)
        case .connectionClosed:
            return DatabaseError(
                kind: .connection, message: "the connection to \(address.hostAndPort) was lost (server closed it)")
        case .protocol(let message):
            return DatabaseError(kind: .other, message: message)
        }
    }

    /// A server error by its SQLSTATE (PostgreSQL's appendix A).
    private static func server(state: String, message: String?, address: PostgresAddress) -> DatabaseError {
        let message = message ?? "error \(state)"
        switch state {
        case "28P01", "28000":
            return DatabaseError(kind: .cannotOpen, message: "the server refused user \(address.user): \(message)")
        case "3D000":
            return DatabaseError(kind: .cannotOpen, message: message + " (create it, or name another in state:)")
        case "53100": return DatabaseError(kind: .diskFull, message: message)
        case "57P01", "57P02", "57P03", "08000", "08003", "08006":
            return DatabaseError(
                kind: .connection, message: "the connection to \(address.hostAndPort) was lost: \(message)")
        case "40001", "40P01", "55P03": return DatabaseError(kind: .busy, message: message)
        case "25006": return DatabaseError(kind: .readOnly, message: message)
        default:
            return DatabaseError(kind: state.hasPrefix("23") ? .constraint : .other, message: message)
        }
    }

    /// A lower-level cause in a few words (the socket's error, not the request).
    private static func cause(_ error: any Error, address: PostgresAddress) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        if error is NIOConnectionError { return "connection refused" }
        if let channel = error as? ChannelError, case .connectTimeout = channel {
            return "no answer within \(Int(address.connectTimeout)) s"
        }
        return "\(error)"
    }
}

extension PostgresAddress {
    /// TLS as `sslmode` says, for both of the ledger's connections (the sessions' and the index
    /// reader's pool): nil for `disable`; else the settings (`allow`/`prefer`/`require`
    /// unverified, `verify-ca` the chain, `verify-full` the name too) and whether TLS is only
    /// preferred (`allow`, `prefer`: used when the server offers it).
    var tlsSettings: (settings: TLSConfiguration, preferred: Bool)? {
        var settings = TLSConfiguration.makeClientConfiguration()
        switch tls {
        case .disable: return nil
        case .allow, .prefer, .require: settings.certificateVerification = .none
        case .verifyCA: settings.certificateVerification = .noHostnameVerification
        case .verifyFull: settings.certificateVerification = .fullVerification
        }
        return (settings, tls == .allow || tls == .prefer)
    }
}
