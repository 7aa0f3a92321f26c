import Foundation
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// Where a configured `state:` path puts the ledger, and the JSON state file of earlier
/// versions it replaces: `x.json` (or `x.db` with `x.json` beside it) becomes `x.db`.
public struct LedgerLocation: Sendable, Equatable {
    /// The SQLite file.
    public var databasePath: String
    /// The JSON state file of earlier versions it replaces.
    public var legacyJSONPath: String

    /// Where `state:` (a path) puts the ledger.
    public init(configured path: String) {
        if PostgresAddress.isPostgres(path) {
            databasePath = PostgresAddress.redacting(path)
            legacyJSONPath = ""
            return
        }
        let stem =
            path.hasSuffix(".json") || path.hasSuffix(".db")
            ? String(path[..<(path.lastIndex(of: ".") ?? path.endIndex)]) : path
        databasePath = path.hasSuffix(".json") ? stem + ".db" : path
        legacyJSONPath = stem + ".json"
    }
}

/// How a command uses the ledger: a run or publish writes (under the run lock); a dry run and
/// `state show` only read, and never create or change a file.
public enum LedgerAccess: Sendable {
    case read
    case write
}

/// The delivery ledger (SPEC §6): stories, feeds, the outbox of pushes and tombstones, in a
/// SQLite database written in transactions (WAL, synchronous writes). A run reads and writes
/// only what it touches.
public final class Ledger {
    /// The schema version this newspush reads and writes.
    public static let schemaVersion = LedgerSchema.version
    /// The database file (what messages name).
    public let path: String
    /// No ledger existed before this run (and no JSON state was migrated): a first run.
    public let isNew: Bool
    /// The JSON state file that was migrated into this ledger when it was opened, if any.
    public let migratedFrom: String?
    let db: any LedgerDatabase
    private let writable: Bool
    /// The run lock this ledger was opened under (told when the ledger turns out damaged).
    private weak var lock: LedgerLock?
    /// Set when several threads share this ledger's one connection (`openIndex`): reads and
    /// transactions take turns on it, and the writes that wait are committed together.
    private var shared: GroupCommit?
    /// The group commit of a connection shared by threads (the tests look at its queue).
    var sharedCommit: GroupCommit? { shared }

    private init(path: String, db: any LedgerDatabase, isNew: Bool, migratedFrom: String?, writable: Bool) {
        self.path = path
        self.db = db
        self.isNew = isNew
        self.migratedFrom = migratedFrom
        self.writable = writable
    }

    // MARK: Opening

    /// The ledger over `database`, a connection lent by `LedgerConnections` for one request (the
    /// schema was checked when the back-end started).
    static func lent(_ database: PostgresDatabase) -> Ledger {
        Ledger(path: database.address.description, db: database, isNew: false, migratedFrom: nil, writable: true)
    }

    /// Opens the ledger for `configured` (the config's `state:` path). Writing creates it when
    /// missing and migrates a JSON state file of earlier versions (kept as `<name>.json.migrated`);
    /// reading never changes a file (a missing or JSON ledger is read into memory).
    ///
    /// A ledger opened to write is first checked for damage in pages a command may not read
    /// (`PRAGMA quick_check`, before anything is written), unless `lock` vouches that nothing
    /// has written the file since the last command found it whole: a damaged ledger stops the
    /// command, untouched.
    public static func open(configured: String, access: LedgerAccess, lock: LedgerLock? = nil)
        throws(LedgerError) -> Ledger
    {
        try open(configured: configured, access: access, lock: lock, verify: true)
    }

    /// `open`; `verify: false` skips the check of the file's pages (a process that checked it
    /// once and opens more connections).
    public static func open(configured: String, access: LedgerAccess, lock: LedgerLock?, verify: Bool)
        throws(LedgerError) -> Ledger
    {
        if case .postgres(let address) = try address(configured) {
            return try openPostgres(address, access: access, lock: lock)
        }
        let ledger = try openFile(configured: configured, access: access, lock: lock, verify: verify)
        if access == .write {
            ledger.lock = lock
            lock?.vouch()
        }
        return ledger
    }

    /// Where `state:` puts the ledger; a PostgreSQL URL that cannot be used is unreadable.
    static func address(_ configured: String) throws(LedgerError) -> LedgerAddress {
        do { return try LedgerAddress(configured: configured) } catch {
            throw .unreadable(path: PostgresAddress.redacting(configured), reason: error.message)
        }
    }

    /// A PostgreSQL ledger: written through the connection that holds the run lock, read
    /// through a connection of its own. An empty database is a missing ledger: created by a
    /// write (the tables and their version, in one transaction), read as empty.
    private static func openPostgres(_ address: PostgresAddress, access: LedgerAccess, lock: LedgerLock?)
        throws(LedgerError) -> Ledger
    {
        let path = address.description
        let db = try wrap(path, writing: false) { try lock?.connection ?? PostgresDatabase.connect(address) }
        let exists = try wrap(path, writing: false) { try db.tableExists("meta") }
        if !exists {
            guard access == .write else { return try inMemory(path: path, legacy: nil) }
            // Another instance may create it first: then it is opened as it found it.
            if try wrap(path, writing: true, { try LedgerMigrations.create(db, at: Date()) }) {
                return Ledger(path: path, db: db, isNew: true, migratedFrom: nil, writable: true)
            }
        }
        let version = try schemaVersion(of: db, path: path)
        if version > LedgerSchema.version { throw .newerSchema(path: path, version: version) }
        if access == .write { _ = try wrap(path, writing: true) { try LedgerMigrations.upgrade(db, from: version) } }
        return Ledger(path: path, db: db, isNew: false, migratedFrom: nil, writable: access == .write)
    }

    /// A ledger that does not exist yet, read: empty (or a legacy JSON state's contents) in
    /// memory, so looking never creates or changes anything.
    private static func inMemory(path: String, legacy: LegacyJSONState?) throws(LedgerError) -> Ledger {
        let db = try wrap(path, writing: false) { try SQLiteDatabase(path: ":memory:", mode: .create) }
        try wrap(path, writing: true) {
            try LedgerMigrations.create(db, at: Date())
            if let legacy { try LegacyJSONState.importState(legacy, into: db) }
        }
        return Ledger(path: path, db: db, isNew: legacy == nil, migratedFrom: nil, writable: false)
    }

    private static func openFile(configured: String, access: LedgerAccess, lock: LedgerLock?, verify: Bool)
        throws(LedgerError) -> Ledger
    {
        let location = LedgerLocation(configured: configured)
        let path = location.databasePath
        let files = FileManager.default
        if files.fileExists(atPath: path) {
            return try openExisting(path: path, access: access, lock: lock, verify: verify)
        }
        let legacy =
            files.fileExists(atPath: location.legacyJSONPath)
            ? try LegacyJSONState.load(path: location.legacyJSONPath) : nil
        switch access {
        case .read:
            return try inMemory(path: path, legacy: legacy)
        case .write:
            let made = try createFile(path: path, legacy: legacy)
            if legacy != nil && made {
                let migrated = location.legacyJSONPath + ".migrated"
                guard rename(location.legacyJSONPath, migrated) == 0 else {
                    throw .writeFailed(path: migrated, reason: String(cString: strerror(errno)))
                }
                unlink(location.legacyJSONPath + ".journal")
                unlink(location.legacyJSONPath + ".prev")
            }
            let ledger = try openExisting(path: path, access: .write, lock: nil, verify: false)
            return Ledger(
                path: path, db: ledger.db, isNew: legacy == nil,
                migratedFrom: legacy == nil ? nil : location.legacyJSONPath, writable: true)
        }
    }

    private static func openExisting(path: String, access: LedgerAccess, lock: LedgerLock?, verify: Bool)
        throws(LedgerError) -> Ledger
    {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        if size == 0 { throw .corrupt(path: path, reason: "the file is empty") }
        guard access == .write else {
            let (db, version) = try openToRead(path)
            if version > LedgerSchema.version { throw .newerSchema(path: path, version: version) }
            return Ledger(path: path, db: db, isNew: false, migratedFrom: nil, writable: false)
        }
        let (db, version) = try openToWrite(path)
        if version > LedgerSchema.version { throw .newerSchema(path: path, version: version) }
        if verify && lock?.ledgerUnchanged != true { try checkIntegrity(db, path: path) }
        try wrap(path, writing: true) {
            try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            _ = try LedgerMigrations.upgrade(db, from: version)
        }
        return Ledger(path: path, db: db, isNew: false, migratedFrom: nil, writable: access == .write)
    }

    /// The ledger opened to write, and its schema version (read before anything is written: a
    /// file that is not a ledger stays untouched).
    private static func openToWrite(_ path: String) throws(LedgerError) -> (SQLiteDatabase, Int) {
        let db = try wrap(path, writing: false) { try SQLiteDatabase(path: path, mode: .readWrite) }
        return (db, try schemaVersion(of: db, path: path))
    }

    /// The ledger opened to read without writing anything: beside a running writer through its
    /// write-ahead log, else (no `-wal` file, or one this user cannot share) as an immutable
    /// file, so looking works on a read-only mount, in a folder the user cannot write and on a
    /// full disk, and leaves no `-wal` or `-shm` file behind.
    private static func openToRead(_ path: String) throws(LedgerError) -> (any LedgerDatabase, Int) {
        if FileManager.default.fileExists(atPath: path + "-wal") {
            do {
                let db = try wrap(path, writing: false) { try SQLiteDatabase(path: path, mode: .readOnly) }
                return (db, try schemaVersion(of: db, path: path))
            } catch {
                guard case .unreadable = error else { throw error }
            }
        }
        let db = try wrap(path, writing: false) { try SQLiteDatabase(path: path, mode: .readOnlyImmutable) }
        return (db, try schemaVersion(of: db, path: path))
    }

    /// The schema version a ledger file records; a file that is not a ledger is corrupt.
    private static func schemaVersion(of db: any LedgerDatabase, path: String) throws(LedgerError) -> Int {
        do {
            guard try db.tableExists("meta") else {
                throw LedgerError.corrupt(path: path, reason: "not a newspush ledger (no such table: meta)")
            }
            let rows = try db.query("SELECT value FROM meta WHERE name = 'schema_version'", [])
            guard let text = rows.first?.text(0), let number = Int(text) else {
                throw LedgerError.corrupt(path: path, reason: "no schema version")
            }
            return number
        } catch let error as DatabaseError {
            switch error.kind {
            case .corrupt: throw .corrupt(path: path, reason: "not a SQLite database")
            case .diskFull: throw .diskFull(path: path)
            default: throw .unreadable(path: path, reason: error.message)
            }
        } catch let error as LedgerError {
            throw error
        } catch {
            throw .unreadable(path: path, reason: "\(error)")
        }
    }

    /// Creates the ledger file whole, or not at all: built under a temporary name, then renamed.
    /// Makes a new ledger at `path`, whole or not at all: built in a file of its own, then
    /// linked into place, which fails when another process or thread made one first (that one
    /// is then used: a rename would replace a ledger someone already writes to).
    /// Returns whether this call made it.
    @discardableResult
    private static func createFile(path: String, legacy: LegacyJSONState?) throws(LedgerError) -> Bool {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            let db = try SQLiteDatabase(path: temporary, mode: .create)
            try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            try LedgerMigrations.create(db, at: Date())
            if let legacy { try LegacyJSONState.importState(legacy, into: db) }
        } catch let error as DatabaseError {
            unlink(temporary)
            throw LedgerError.from(error, path: path, writing: true)
        } catch {
            unlink(temporary)
            throw .writeFailed(path: path, reason: "\(error)")
        }
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return false }
            throw .writeFailed(path: path, reason: String(cString: strerror(errno)))
        }
        let folder = (path as NSString).deletingLastPathComponent
        let fd = Glibc.open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        return true
    }

    static func wrap<T>(_ path: String, writing: Bool, _ body: () throws -> T) throws(LedgerError) -> T {
        do { return try body() } catch { throw sorted(error, path: path, writing: writing) }
    }

    /// `error` as the ledger at `path` says it.
    static func sorted(_ error: any Error, path: String, writing: Bool) -> LedgerError {
        switch error {
        case let error as DatabaseError: LedgerError.from(error, path: path, writing: writing)
        case let error as LedgerError: error
        default: writing ? .writeFailed(path: path, reason: "\(error)") : .unreadable(path: path, reason: "\(error)")
        }
    }

    func reading<T>(_ body: () throws -> T) throws(LedgerError) -> T {
        shared?.turn.lock()
        defer { shared?.turn.unlock() }
        do { return try Self.wrap(path, writing: false, body) } catch {
            distrustIfDamaged(error)
            throw error
        }
    }

    /// Runs `body` in a write transaction; `durable`: one the send journal depends on (a push
    /// recorded before it goes out), committed to the disk even on a connection the back-end
    /// shares at `synchronous = NORMAL`.
    ///
    /// `redone`: a write that a crash may lose because what is owed redoes it (an
    /// installation recorded after its hub write, whose note of that write is on the disk
    /// already): PostgreSQL commits it without waiting for its log to reach the disk.
    func writing<T>(durable: Bool = false, redone: Bool = false, _ body: () throws -> T) throws(LedgerError) -> T {
        guard writable else { throw .writeFailed(path: path, reason: "opened read-only") }
        do {
            return try Self.wrap(path, writing: true) {
                if let shared { return try shared.write(db, durable: durable, body) }
                return try db.transaction {
                    if redone { try db.commitWithoutWaiting() }
                    return try body()
                }
            }
        } catch {
            distrustIfDamaged(error)
            throw error
        }
    }

    /// `writing` from a task: on a connection threads share, `body` joins the next group commit
    /// with no thread waiting for it, and `schedule` runs that commit on a thread that may block
    /// when no write's thread is there to (`GroupCommit`); else as `writing`, in place.
    func writing<T: Sendable>(
        redone: Bool, schedule: @escaping GroupCommit.Schedule, _ body: @escaping () throws -> T
    ) async throws(LedgerError) -> T {
        guard let shared, writable else { return try writing(redone: redone, body) }
        do {
            return try await shared.write(db, schedule: schedule, body)
        } catch {
            let sorted = Self.sorted(error, path: path, writing: true)
            distrustIfDamaged(sorted)
            throw sorted
        }
    }

    /// Lets several threads share this ledger's connection: one read or transaction at a
    /// time, the writes that wait committed together (`GroupCommit`).
    func shareConnection() { shared = GroupCommit() }

    /// One statement written on its own: in the shared connection's next group commit, else
    /// committed by itself (no `BEGIN`/`COMMIT` round trips on PostgreSQL).
    func writingOne(_ sql: String, _ arguments: [SQLValue], durable: Bool) throws(LedgerError) {
        guard writable else { throw .writeFailed(path: path, reason: "opened read-only") }
        do {
            _ = try Self.wrap(path, writing: true) { () throws -> Int in
                if let shared { return try shared.write(db, durable: durable) { try db.run(sql, arguments) } }
                // As a query: a statement a connection runs again is prepared (PostgreSQL).
                return try db.query(sql, arguments).count
            }
        } catch {
            distrustIfDamaged(error)
            throw error
        }
    }

    /// Statements written together, in order: where the engine modifies in a `WITH`
    /// (PostgreSQL) and `independent` says no statement touches a row another one changes (each
    /// part of a `WITH` sees the rows as they were before any of them), one statement, one round
    /// trip, committed by itself; else one transaction. `redone` as for `writing`: PostgreSQL
    /// commits without waiting for the disk.
    func writingTogether(
        _ statements: [SQLStatement], independent: Bool = true, redone: Bool = false
    ) throws(LedgerError) {
        guard db.modifiesInWith, independent else {
            try writing(redone: redone) { try db.run(statements) }
            return
        }
        let parts = statements.indices.map { "w\($0) AS (\(statements[$0].sql))" }
        let commit = redone ? db.commitWithoutWaitingInSelect : "1"
        _ = try writingQuery(
            "WITH " + parts.joined(separator: ", ") + " SELECT " + commit, statements.flatMap(\.arguments))
    }

    /// One statement that writes and returns rows, committed by itself (no `BEGIN`/`COMMIT`
    /// round trips on PostgreSQL), or in the shared connection's next group commit.
    func writingQuery(_ sql: String, _ arguments: [SQLValue]) throws(LedgerError) -> [SQLRow] {
        guard writable else { throw .writeFailed(path: path, reason: "opened read-only") }
        do {
            return try Self.wrap(path, writing: true) { () throws -> [SQLRow] in
                if let shared { return try shared.write(db, durable: false) { try db.query(sql, arguments) } }
                return try db.query(sql, arguments)
            }
        } catch {
            distrustIfDamaged(error)
            throw error
        }
    }

    /// Whether threads may share this ledger (`openIndex` of a SQLite ledger).
    public var isShared: Bool { shared != nil }

    /// Whether its connection is still open (a PostgreSQL restart closes it).
    public var isConnected: Bool { db.isConnected }

    /// Damage found while in use: the next command checks the whole file again.
    private func distrustIfDamaged(_ error: LedgerError) {
        if case .corrupt = error { lock?.distrust() }
    }
}
