import Foundation
import NewsPushModel

extension LedgerError {
    /// The error for a failed database call on the ledger at `path`.
    static func from(_ error: DatabaseError, path: String, writing: Bool) -> LedgerError {
        switch error.kind {
        case .diskFull: return .diskFull(path: path)
        case .corrupt: return .corrupt(path: path, reason: error.message)
        case .readOnly, .cannotOpen, .io, .busy, .constraint, .connection, .other:
            return writing
                ? .writeFailed(path: path, reason: error.message) : .unreadable(path: path, reason: error.message)
        }
    }
}
