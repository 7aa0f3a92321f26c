import NIOCore
import PostgresNIO
import Synchronization

/// The statements a PostgreSQL connection runs again and again, prepared on it once
/// (postgres-nio's `prepare(query:)`): the server then parses and plans such a statement once
/// per connection instead of at every run. An alert event's statement, four `WITH` parts and
/// two `ON CONFLICT`s, ran 4.2× as often prepared as unnamed (`pgbench -M prepared` against
/// `-M extended`, 16 clients, 29,100–30,100 against 6,750–7,190 a second).
///
/// A statement is prepared at its second run on a connection (one that runs once, a run's
/// batch of a thousand rows, costs no extra round trip), at most `limit` per connection; with
/// its placeholders cast to the types its values are bound as (`$1::int8`), so the server
/// types them as the unnamed statement's bindings say and not by inference. Kept per
/// connection (a pool's are lent to one request at a time) and let go when it closes.
///
/// postgres-nio prepares only statements whose SQL is a type's static property
/// (`PostgresPreparedStatement`); the ledger's SQL is worked out at run time, hence its older
/// interface, which prepares any text, and this bookkeeping.
final class PreparedStatements: Sendable {
    /// Statements prepared on one connection, at most.
    static let limit = 64
    /// Statements counted but not yet prepared, at most (the count starts over when full).
    private static let counted = 512

    private struct State {
        var prepared: [Key: PreparedQuery] = [:]
        var runs: [Key: Int] = [:]
    }

    /// A statement as prepared: its text and the casts of its values (a null value's statement
    /// is prepared apart from a text's).
    struct Key: Hashable {
        let sql: String
        let casts: [String]
    }

    private let state = Mutex(State())
    private static let connections = Mutex<[ObjectIdentifier: PreparedStatements]>([:])

    /// The statements prepared on `connection`.
    static func of(_ connection: PostgresConnection) -> PreparedStatements {
        let id = ObjectIdentifier(connection)
        let (statements, new) = connections.withLock { all in
            if let known = all[id] { return (known, false) }
            let made = PreparedStatements()
            all[id] = made
            return (made, true)
        }
        // A prepared statement holds its connection: the entry goes when the connection closes.
        if new { connection.closeFuture.whenComplete { _ in _ = connections.withLock { $0.removeValue(forKey: id) } } }
        return statements
    }

    /// Whether statements of `connection` are kept (the tests' view).
    static func areKept(for connection: PostgresConnection) -> Bool {
        connections.withLock { $0[ObjectIdentifier(connection)] != nil }
    }

    /// The key of `sql` run with `arguments`.
    static func key(_ sql: String, _ arguments: [SQLValue]) -> Key { Key(sql: sql, casts: arguments.map(\.cast)) }

    /// What to do with `key`: run its prepared form, prepare it now, or run it unnamed.
    func next(_ key: Key) -> Next {
        state.withLock { state in
            if let known = state.prepared[key] { return .run(known) }
            guard state.prepared.count < Self.limit else { return .unnamed }
            let runs = state.runs[key, default: 0] + 1
            if runs >= 2 {
                state.runs[key] = nil
                return .prepare
            }
            if state.runs.count >= Self.counted { state.runs = [:] }
            state.runs[key] = runs
            return .unnamed
        }
    }

    enum Next {
        case run(PreparedQuery)
        case prepare
        case unnamed
    }

    func keep(_ statement: PreparedQuery, for key: Key) {
        state.withLock { $0.prepared[key] = statement }
    }

    /// The rows of `sql` run with `arguments` on `connection`, set going in one turn of its event
    /// loop: prepared at its second run on it, then run in its prepared form; else unnamed. The
    /// one way every statement with rows goes, from a session's thread (`PostgresDatabase`)
    /// and from a request's task (`LedgerConnections`).
    static func rows(on connection: PostgresConnection, _ sql: String, _ arguments: [SQLValue])
        -> EventLoopFuture<[SQLRow]>
    {
        connection.eventLoop.flatSubmit {
            let statements = of(connection)
            let key = key(sql, arguments)
            switch statements.next(key) {
            case .unnamed:
                let query = PostgresDatabase.statement(sql, arguments)
                return connection.query(query, logger: PostgresDatabase.silent).map { result in
                    result.rows.map { row in SQLRow(values: row.map(PostgresDatabase.value)) }
                }
            case .run(let prepared):
                return rows(of: prepared, arguments)
            case .prepare:
                return connection.prepare(query: typed(key)).flatMap { prepared in
                    statements.keep(prepared, for: key)
                    return rows(of: prepared, arguments)
                }
            }
        }
    }

    /// The rows of a prepared statement. Its cells are always sent in binary (postgres-nio's
    /// older interface asks for that and then labels them with the text format the server's
    /// description of the statement said).
    private static func rows(of prepared: PreparedQuery, _ arguments: [SQLValue]) -> EventLoopFuture<[SQLRow]> {
        prepared.execute(binds(arguments)).map { rows in
            rows.map { row in
                SQLRow(
                    values: row.map { cell in
                        var binary = cell
                        binary.format = .binary
                        return PostgresDatabase.value(binary)
                    })
            }
        }
    }

    /// The text `key` is prepared with: numbered placeholders, each followed by its cast.
    static func typed(_ key: Key) -> String {
        PostgresDatabase.numberPlaceholders(key.sql) { number in number <= key.casts.count ? key.casts[number - 1] : ""
        }
    }

    /// `arguments` as the older interface binds them.
    static func binds(_ arguments: [SQLValue]) -> [PostgresData] {
        arguments.map { argument in
            switch argument {
            case .null: PostgresData.null
            case .integer(let n): PostgresData(int64: n)
            case .real(let d): PostgresData(double: d)
            case .text(let s): PostgresData(string: s)
            }
        }
    }
}

extension SQLValue {
    /// The cast of a placeholder bound to this value: the type postgres-nio binds it as (a
    /// null's type left to the server, as an unnamed statement's is).
    fileprivate var cast: String {
        switch self {
        case .null: ""
        case .integer: "::int8"
        case .real: "::float8"
        case .text: "::text"
        }
    }
}
