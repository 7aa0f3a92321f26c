import Foundation

/// The statements the ledger runs, whatever the engine: SQLite for one host, PostgreSQL for a
/// ledger shared by several. The SQL in the ledger reads the same in both (plain types,
/// `ON CONFLICT` upserts, no engine-specific functions); placeholders are `?`. What differs
/// between the engines is behind this protocol and nowhere else.
protocol LedgerDatabase: AnyObject {
    /// Runs a statement that returns no rows; returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ arguments: [SQLValue]) throws(DatabaseError) -> Int
    /// Runs a query and returns every row.
    func query(_ sql: String, _ arguments: [SQLValue]) throws(DatabaseError) -> [SQLRow]
    /// Runs `body` in one transaction that takes the write lock at once; rolled back when
    /// `body` throws.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Inside a transaction: its commit need not wait for the disk (PostgreSQL's
    /// `synchronous_commit = off` for this transaction alone; SQLite decides per connection).
    func commitWithoutWaiting() throws(DatabaseError)
    /// Inside a transaction: waits until no other process creates or upgrades the ledger's
    /// tables (PostgreSQL's transaction-level advisory lock; SQLite's write lock already does).
    func lockForMigration() throws(DatabaseError)
    /// Whether the database holds a table of this name (a file that is not a ledger has none).
    func tableExists(_ name: String) throws(DatabaseError) -> Bool
    /// The engine's own check of its storage: nothing when healthy. `quick`: the structure of
    /// every page, not whether indexes match their tables (several times faster).
    func integrityProblems(quick: Bool) throws(DatabaseError) -> [String]
    /// After an erasure, outside any transaction: leaves no copy of erased rows in the
    /// engine's own files where it can (SQLite's write-ahead log is emptied into the file,
    /// whose deleted content `secure_delete` has zeroed); PostgreSQL keeps none readable.
    func forgetErased() throws(DatabaseError)
    /// Whether the connection is still open (PostgreSQL: the server has not closed it, as a
    /// restart does); a file is always open.
    var isConnected: Bool { get }
    /// Whether a statement's `WITH` may insert and update (PostgreSQL's data-modifying
    /// statements; SQLite's `WITH` only reads).
    var modifiesInWith: Bool { get }
    /// An expression for a statement's select list that makes the statement's own transaction
    /// commit without waiting for the disk: `commitWithoutWaiting` without a transaction's round
    /// trips (PostgreSQL's `set_config`; SQLite decides per connection).
    var commitWithoutWaitingInSelect: String { get }
    /// The database's own clock: the server's for PostgreSQL (every host that shares the
    /// ledger reads the same one), this machine's for a file.
    func now() throws(DatabaseError) -> Date
    /// For queries that each return one text column of distinct values in ascending byte
    /// order: how many values came from exactly the queries of each mask (bit `i`: query `i`),
    /// for the masks that occur. At most 16 queries.
    func membershipCounts(_ queries: [(sql: String, arguments: [SQLValue])]) throws(DatabaseError) -> [Int: Int]
}

extension LedgerDatabase {
    /// Runs `statements` in order (inside the caller's transaction).
    func run(_ statements: [SQLStatement]) throws(DatabaseError) {
        for statement in statements { try run(statement.sql, statement.arguments) }
    }

    /// `membershipCounts` as one statement: the values of every query with their bit, summed
    /// per value, counted per sum (PostgreSQL; SQLite merges the queries' streams instead).
    func membershipCounts(_ queries: [(sql: String, arguments: [SQLValue])]) throws(DatabaseError) -> [Int: Int] {
        guard !queries.isEmpty else { return [:] }
        let union = queries.indices.map { "SELECT value, \(1 << $0) AS bit FROM (\(queries[$0].sql)) AS q\($0)(value)" }
        let rows = try query(
            """
            SELECT mask, COUNT(*) FROM (
              SELECT value, SUM(bit) AS mask FROM (\(union.joined(separator: " UNION ALL "))) AS bits GROUP BY value
            ) AS masks GROUP BY mask
            """, queries.flatMap(\.arguments))
        var counts: [Int: Int] = [:]
        for row in rows { counts[row.int(0) ?? 0, default: 0] += row.int(1) ?? 0 }
        return counts
    }
}

/// A statement and the values bound to its placeholders.
typealias SQLStatement = (sql: String, arguments: [SQLValue])

/// A value bound to, or read from, a statement.
enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    init(_ text: String?) { self = text.map { .text($0) } ?? .null }
    init(_ number: Int?) { self = number.map { .integer(Int64($0)) } ?? .null }
    /// Dates are stored as whole milliseconds since 1970 (portable, and ordered as numbers).
    init(_ date: Date?) { self = date.map { .integer(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? .null }
}

/// One result row.
struct SQLRow {
    let values: [SQLValue]

    func text(_ i: Int) -> String? {
        switch values[i] {
        case .text(let s): return s
        case .integer(let n): return String(n)
        case .real(let d): return String(d)
        case .null: return nil
        }
    }

    func int(_ i: Int) -> Int? {
        switch values[i] {
        case .integer(let n): return Int(n)
        case .real(let d): return Int(d)
        case .text(let s): return Int(s)
        case .null: return nil
        }
    }

    func date(_ i: Int) -> Date? {
        int(i).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }
}

/// What the database engine said went wrong, sorted into what the ledger acts on; the
/// engine's own words are kept for the message.
struct DatabaseError: Error, Sendable, CustomStringConvertible {
    enum Kind: Sendable, Equatable {
        case diskFull, corrupt, busy, readOnly, cannotOpen, io, constraint
        /// The connection to a database server was lost or refused.
        case connection
        case other
    }

    let kind: Kind
    let message: String

    var description: String { message }
}
