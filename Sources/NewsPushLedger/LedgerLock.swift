import Foundation
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// The run lock: an exclusive `flock` on `<ledger>.lock`, held for a whole run (or publish),
/// released when the object goes away or the process dies. For a PostgreSQL ledger it is a
/// session-level advisory lock on the connection the ledger is then written through: a host
/// that dies, or loses that connection, releases it, and can commit nothing more.
///
/// The lock file also carries a stamp of the ledger file (device, inode, size, modification
/// time) as the last holder left it, written only when that holder checked the ledger (or
/// found it unchanged) and closed it cleanly. A write command whose ledger still matches the
/// stamp skips the whole-file damage check: nothing but newspush, under this lock, has written
/// the file since it was last found whole. Anything else that writes it (a garbled page, a
/// restored copy, a killed run) changes the stamp, and the next write command checks it.
public final class LedgerLock {
    /// The lock file (for PostgreSQL, the database).
    public let path: String
    private let ledgerPath: String
    private var descriptor: Int32 = -1
    /// Whether this holder found the ledger whole (checked, or unchanged since the last check).
    private var vouched = false
    /// PostgreSQL: the connection that holds the advisory lock (the ledger is written on it).
    let connection: PostgresDatabase?
    /// How long taking the lock waited, in seconds (for the metrics).
    public private(set) var waited: Double = 0

    /// Takes the lock of the ledger `state:` names, waiting up to `wait` seconds for a running
    /// job to finish (nil or 0: not at all).
    public convenience init(configured: String, wait: Double? = nil) throws(LedgerError) {
        switch try Ledger.address(configured) {
        case .sqlite:
            try self.init(ledgerPath: LedgerLocation(configured: configured).databasePath, wait: wait)
        case .postgres(let address):
            try self.init(postgres: address, wait: wait)
        }
    }

    private init(postgres address: PostgresAddress, wait: Double?) throws(LedgerError) {
        path = address.description
        ledgerPath = address.description
        ledgerUnchanged = false
        let started = Date()
        let taken: Bool
        do {
            let connection = try PostgresDatabase.connect(address)
            self.connection = connection
            taken = try connection.takeAdvisoryLock(wait: wait ?? 0)
        } catch {
            throw LedgerError.from(error, path: path, writing: false)
        }
        guard taken else { throw .locked(path: path) }
        waited = Date().timeIntervalSince(started)
    }

    /// Takes the lock of the SQLite ledger at `ledgerPath`, waiting up to `wait` seconds for a
    /// running job to finish (nil or 0: not at all).
    public init(ledgerPath: String, wait: Double? = nil) throws(LedgerError) {
        self.ledgerPath = ledgerPath
        path = ledgerPath + ".lock"
        connection = nil
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .writeFailed(path: path, reason: String(cString: strerror(errno))) }
        let started = Date()
        let deadline = started.addingTimeInterval(wait ?? 0)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard Date() < deadline else {
                close(fd)
                throw .locked(path: ledgerPath)
            }
            usleep(100_000)
        }
        waited = Date().timeIntervalSince(started)
        descriptor = fd
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = pread(fd, &buffer, buffer.count, 0)
        let previous = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
        // Compared now, before the ledger is opened (opening creates its write-ahead log).
        ledgerUnchanged = !previous.isEmpty && previous == Self.stamp(ledgerPath)
    }

    /// Whether the ledger file was, when the lock was taken, exactly as the last holder left it
    /// after finding it whole.
    let ledgerUnchanged: Bool

    /// The ledger was found whole by this holder.
    func vouch() { vouched = true }

    /// The ledger turned out damaged while this holder used it: the next holder checks it.
    func distrust() { vouched = false }

    /// The ledger file's identity and last change; nil while its write-ahead log exists (a
    /// connection is open, or was not closed cleanly) or when it cannot be read.
    static func stamp(_ ledgerPath: String) -> String? {
        guard access(ledgerPath + "-wal", F_OK) != 0 else { return nil }
        var info = stat()
        guard stat(ledgerPath, &info) == 0 else { return nil }
        return "\(info.st_dev) \(info.st_ino) \(info.st_size) \(info.st_mtim.tv_sec) \(info.st_mtim.tv_nsec)"
    }

    deinit {
        guard connection == nil else { return }  // the connection's end releases the advisory lock
        let stamp = vouched ? Self.stamp(ledgerPath) ?? "" : ""
        if ftruncate(descriptor, 0) == 0, !stamp.isEmpty {
            _ = stamp.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        }
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
