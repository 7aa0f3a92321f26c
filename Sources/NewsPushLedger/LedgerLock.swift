import Foundation
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// The run lock: an exclusive `flock` on `<ledger>.lock`, held for a whole run (or publish),
/// released when the object goes away or the process dies.
public final class LedgerLock {
    /// The lock file.
    public let path: String
    private var descriptor: Int32 = -1

    /// Takes the lock of the ledger at `ledgerPath`, waiting up to `wait` seconds for a running
    /// job to finish (nil or 0: not at all).
    public init(ledgerPath: String, wait: Double? = nil) throws(LedgerError) {
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
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
