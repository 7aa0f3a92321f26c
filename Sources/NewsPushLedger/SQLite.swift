internal import CSQLite
import Foundation
import NewsPushModel
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// The only file that talks to SQLite's C API. Everything else sees the `LedgerDatabase` seam,
// `SQLValue` and `SQLRow`, and writes SQL that PostgreSQL reads as well.

/// The kind of a failed SQLite call, from its primary result code and the operating system's
/// error behind an I/O failure (ENOSPC when the disk is full: SQLite reports growing its
/// shared-memory file on a full disk as an I/O error).
private func databaseError(code: Int32, message: String, systemErrno: Int32) -> DatabaseError {
    let kind: DatabaseError.Kind
    if systemErrno == ENOSPC || systemErrno == EDQUOT {
        kind = .diskFull
    } else if systemErrno == EROFS {
        kind = .readOnly
    } else {
        switch code & 0xFF {
        case SQLITE_FULL: kind = .diskFull
        case SQLITE_CORRUPT, SQLITE_NOTADB: kind = .corrupt
        case SQLITE_BUSY, SQLITE_LOCKED: kind = .busy
        case SQLITE_READONLY: kind = .readOnly
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH: kind = .cannotOpen
        case SQLITE_IOERR: kind = .io
        case SQLITE_CONSTRAINT: kind = .constraint
        default: kind = .other
        }
    }
    return DatabaseError(kind: kind, message: message)
}

/// One SQLite connection, owned by one object: statements are prepared once and cached, every
/// return code goes through `check`, and everything is finalized and closed in `deinit`.
/// Not `Sendable`: one run uses it from one thread.
final class SQLiteDatabase {
    enum Mode {
        /// Reading beside a writer: shares the write-ahead log (its `-wal` and `-shm` files
        /// must be there).
        case readOnly
        /// Reading a file nobody is writing (no `-wal` file): no lock, no `-shm` or `-wal`
        /// created, so it works on a read-only mount, a folder the user cannot write and a full
        /// disk.
        case readOnlyImmutable
        case readWrite
        case create
    }

    let path: String
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    /// Opens `path` (`:memory:` for a private in-memory database).
    init(path: String, mode: Mode) throws(DatabaseError) {
        self.path = path
        var db: OpaquePointer?
        var name = path
        let flags: Int32
        switch mode {
        case .readOnly:
            flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
            name = Self.uri(path, query: "mode=ro")
        case .readOnlyImmutable:
            flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
            name = Self.uri(path, query: "immutable=1")
        case .readWrite: flags = SQLITE_OPEN_READWRITE
        case .create: flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        }
        let code = sqlite3_open_v2(name, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            if let db { sqlite3_close_v2(db) }
            throw databaseError(code: code, message: message, systemErrno: 0)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        // Another process (a dry run reading while a run writes) may hold a lock for a moment.
        sqlite3_busy_timeout(db, 5000)
        // SQLite's own scratch files (sorts, statement journals) in memory, not in TMPDIR: a full
        // temporary folder must not stop a run whose ledger's disk has room.
        sqlite3_exec(db, "PRAGMA temp_store = MEMORY", nil, nil, nil)
        // Deleted rows are overwritten with zeros, not left in free space: a forgotten reader
        // (SPEC §9, "Forgetting erases") is gone from the file itself.
        sqlite3_exec(db, "PRAGMA secure_delete = ON", nil, nil, nil)
    }

    /// `path` as a `file:` URI with `query` (`?`, `#` and `%` in the path escaped).
    static func uri(_ path: String, query: String) -> String {
        var escaped = ""
        for character in path {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3f"
            case "#": escaped += "%23"
            default: escaped.append(character)
            }
        }
        return "file:\(escaped)?\(query)"
    }

    /// Whether a transaction is open (SQLite rolls one back by itself after some errors: a full
    /// disk, an I/O error).
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements without parameters (schema, pragmas).
    func execute(_ sql: String) throws(DatabaseError) {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        if code != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(message)
            throw databaseError(code: code, message: text, systemErrno: sqlite3_system_errno(handle))
        }
    }

    /// Runs a statement that returns no rows; returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ arguments: [SQLValue] = []) throws(DatabaseError) -> Int {
        let statement = try prepared(sql, arguments)
        defer { sqlite3_reset(statement) }
        var code = sqlite3_step(statement)
        while code == SQLITE_ROW { code = sqlite3_step(statement) }
        try check(code, done: true)
        return Int(sqlite3_changes(handle))
    }

    /// Runs a query and returns every row.
    func query(_ sql: String, _ arguments: [SQLValue] = []) throws(DatabaseError) -> [SQLRow] {
        let statement = try prepared(sql, arguments)
        defer { sqlite3_reset(statement) }
        var rows: [SQLRow] = []
        let columns = sqlite3_column_count(statement)
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                try check(code, done: true)
                break
            }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columns))
            for column in 0..<columns {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_NULL: values.append(.null)
                default:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if let text = sqlite3_column_text(statement, column) {
                        values.append(
                            .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)))
                    } else {
                        values.append(.text(""))
                    }
                }
            }
            rows.append(SQLRow(values: values))
        }
        return rows
    }

    /// `LedgerDatabase.membershipCounts` by merging the queries' ordered streams, one step of
    /// each at a time. Written here because SQLite's own `GROUP BY` over their union sorts
    /// every value first: over a million installations' tags that sorter was nine tenths of
    /// `devices count --tags` (docs/benchmarks.md), while each query alone reads an index in
    /// order.
    func membershipCounts(_ queries: [(sql: String, arguments: [SQLValue])]) throws(DatabaseError) -> [Int: Int] {
        precondition(queries.count <= 16, "at most 16 queries")
        // Each stream its own statement: the cache is keyed by text, and these run at once.
        var streams: [OpaquePointer] = []
        for (index, query) in queries.enumerated() {
            streams.append(try prepared("\(query.sql) /* stream \(index) */", query.arguments))
        }
        defer { for statement in streams { sqlite3_reset(statement) } }
        var live = try streams.map { statement throws(DatabaseError) in try step(statement) }
        var counts: [Int: Int] = [:]
        while true {
            let mask = Self.leastMask(streams, live)
            if mask == 0 { return counts }
            counts[mask, default: 0] += 1
            for index in live.indices where mask & (1 << index) != 0 { live[index] = try step(streams[index]) }
        }
    }

    /// The streams whose current row holds the text that sorts first, as a mask (bit `i`:
    /// stream `i`); 0 when every stream has ended. One comparison per live stream.
    private static func leastMask(_ streams: [OpaquePointer], _ live: [Bool]) -> Int {
        var least = -1, mask = 0
        for index in streams.indices where live[index] {
            let order = least < 0 ? -1 : compare(streams[index], streams[least])
            if order < 0 {
                (least, mask) = (index, 1 << index)
            } else if order == 0 {
                mask |= 1 << index
            }
        }
        return mask
    }

    /// Steps `statement`: whether it has a row.
    private func step(_ statement: OpaquePointer) throws(DatabaseError) -> Bool {
        let code = sqlite3_step(statement)
        if code == SQLITE_ROW { return true }
        try check(code, done: true)
        return false
    }

    /// How the text of `first`'s current row sorts against `second`'s (negative: before; 0: the
    /// same), by SQLite's BINARY collation: bytes, then the shorter first.
    private static func compare(_ first: OpaquePointer, _ second: OpaquePointer) -> Int {
        let a = sqlite3_column_blob(first, 0), b = sqlite3_column_blob(second, 0)
        let aCount = Int(sqlite3_column_bytes(first, 0)), bCount = Int(sqlite3_column_bytes(second, 0))
        let shared = min(aCount, bCount)
        if shared > 0, let a, let b, case let order = memcmp(a, b, shared), order != 0 { return Int(order) }
        return aCount - bCount
    }

    /// Runs `body` in one transaction that takes the write lock at once (`BEGIN IMMEDIATE`), so a
    /// reader never upgrades into a deadlock. Rolled back when `body` throws.
    ///
    /// Connections of one process to one file take turns in the process first: SQLite's own
    /// wait for a busy lock sleeps in steps of milliseconds, which made sixteen threads writing
    /// the installation index (`newspush api`) wait far longer than their transactions took.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        let turn = Self.writers(path)
        turn.lock()
        defer { turn.unlock() }
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The prepared statement for `sql`, reset and bound to `arguments`.
    private func prepared(_ sql: String, _ arguments: [SQLValue]) throws(DatabaseError) -> OpaquePointer {
        let statement: OpaquePointer
        if let cached = statements[sql] {
            statement = cached
            sqlite3_reset(cached)
            sqlite3_clear_bindings(cached)
        } else {
            var made: OpaquePointer?
            let code = sqlite3_prepare_v2(handle, sql, -1, &made, nil)
            guard code == SQLITE_OK, let made else { throw error(code) }
            statements[sql] = made
            statement = made
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch argument {
            case .null: code = sqlite3_bind_null(statement, index)
            case .integer(let n): code = sqlite3_bind_int64(statement, index, n)
            case .real(let d): code = sqlite3_bind_double(statement, index, d)
            case .text(let s):
                code = s.withCString { np_sqlite3_bind_text_transient(statement, index, $0, Int32(s.utf8.count)) }
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
        return statement
    }

    private func check(_ code: Int32, done: Bool) throws(DatabaseError) {
        if code == SQLITE_OK || (done && code == SQLITE_DONE) { return }
        throw error(code)
    }

    private func error(_ code: Int32) -> DatabaseError {
        databaseError(
            code: code, message: String(cString: sqlite3_errmsg(handle)), systemErrno: sqlite3_system_errno(handle))
    }

    /// The lock the process's writers to `path` take turns by.
    private static func writers(_ path: String) -> NSLock {
        writerLocks.withLock { locks in
            if let lock = locks[path] { return lock }
            let lock = NSLock()
            locks[path] = lock
            return lock
        }
    }

    private static let writerLocks = Mutex<[String: NSLock]>([:])

    /// The library's version, for `state check`.
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}

extension SQLiteDatabase: LedgerDatabase {
    /// The connection's `synchronous` level decides (the app back-end's index: `NORMAL`).
    func commitWithoutWaiting() throws(DatabaseError) {}

    /// `BEGIN IMMEDIATE` holds the write lock: nothing else migrates meanwhile.
    func lockForMigration() throws(DatabaseError) {}

    func tableExists(_ name: String) throws(DatabaseError) -> Bool {
        !(try query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(name)])).isEmpty
    }

    var isConnected: Bool { true }

    var modifiesInWith: Bool { false }

    var commitWithoutWaitingInSelect: String { "1" }

    func now() throws(DatabaseError) -> Date { Date() }

    func forgetErased() throws(DatabaseError) {
        _ = try query("PRAGMA wal_checkpoint(TRUNCATE)", [])
    }

    func integrityProblems(quick: Bool) throws(DatabaseError) -> [String] {
        let result = try query(quick ? "PRAGMA quick_check" : "PRAGMA integrity_check", []).compactMap { $0.text(0) }
        return result == ["ok"] ? [] : result
    }
}
