import Foundation
import NewsPushModel

extension LedgerError {
    /// The error for a failed database call on the ledger at `path`.
    static func from(_ error: DatabaseError, path: String, writing: Bool) -> LedgerError {
        switch error.kind {
        case .diskFull:
            // Say which disk: the ledger's, or another (the temporary folder) while the ledger's has room.
            guard let free = freeBytes(near: path), free >= 1 << 20 else { return .diskFull(path: path) }
            return .writeFailed(
                path: path,
                reason: "a disk is full, but not the ledger's (\(free >> 20) MB free there): the temporary folder "
                    + "\(NSTemporaryDirectory()) (TMPDIR) may be; \(error.message)")
        case .corrupt: return .corrupt(path: path, reason: error.message)
        case .readOnly, .cannotOpen, .io, .busy, .constraint, .connection, .other:
            return writing
                ? .writeFailed(path: path, reason: error.message) : .unreadable(path: path, reason: error.message)
        }
    }
}

/// The bytes free on the disk holding `path` (its folder when the file is not there); nil for a
/// ledger that is not a file (PostgreSQL) or a folder that cannot be asked.
private func freeBytes(near path: String) -> Int? {
    guard !path.contains("://") else { return nil }
    var stats = statvfs()
    let folder = (path as NSString).deletingLastPathComponent
    guard statvfs(folder.isEmpty ? "." : folder, &stats) == 0 else { return nil }
    return Int(stats.f_bavail) * Int(stats.f_frsize)
}
