import Foundation
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// The run lock: an exclusive `flock` on `<ledger>.lock`, held for a whole run (or publish),
/// released when the object goes away or the process dies.
///
/// The lock file also carries a stamp of the ledger file (device, inode, size, modification
/// time) as the last holder left it, written only when that holder checked the ledger (or
/// found it unchanged) and closed it cleanly. A write command whose ledger still matches the
/// stamp skips the whole-file damage check: nothing but newspush, under this lock, has written
/// the file since it was last found whole. Anything else that writes it (a garbled page, a
/// restored copy, a killed run) changes the stamp, and the next write command checks it.
public final class LedgerLock {
    /// The lock file.
    public let path: String
    private let ledgerPath: String
    private var descriptor: Int32 = -1
    /// Whether this holder found the ledger whole (checked, or unchanged since the last check).
    private var vouched = false

    /// Takes the lock of the ledger at `ledgerPath`, waiting up to `wait` seconds for a running
    /// job to finish (nil or 0: not at all).
    public init(ledgerPath: String, wait: Double? = nil) throws(LedgerError) {
        self.ledgerPath = ledgerPath
        path = ledgerPath + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .writeFailed(path: path, reason: String(cString: strerror(errno))) }
        let deadline = Date().addingTimeInterval(wait ?? 0)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard Date() < deadline else {
                close(fd)
                throw .locked(path: ledgerPath)
            }
            usleep(100_000)
        }
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
        let stamp = vouched ? Self.stamp(ledgerPath) ?? "" : ""
        if ftruncate(descriptor, 0) == 0, !stamp.isEmpty {
            _ = stamp.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        }
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
