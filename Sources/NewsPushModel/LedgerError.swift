import Foundation

/// Why the ledger cannot be used or written. Each names the ledger and says what to do; every
/// case but `locked` stops the run before anything is sent (exit 1).
public enum LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case corrupt(path: String, reason: String)
    case newerSchema(path: String, version: Int)
    case locked(path: String)
    case diskFull(path: String)
    case writeFailed(path: String, reason: String)
    case noLedger(path: String)
    /// A change waited longer than its patience for another change of the same installation or
    /// reader (the app back-end's key locks): nothing was done; try again in a few seconds.
    case busy(path: String, seconds: Int)

    /// What is wrong with the ledger and what to do, naming it.
    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            return "ledger \(path) cannot be read: \(reason); nothing was sent"
        case .corrupt(let path, let reason):
            return
                "ledger \(path) is corrupt (\(reason)); nothing was sent and the file was left untouched. Inspect "
                + "it with 'newspush state check', restore it from a backup, or move it away only if re-sending "
                + "old news is acceptable"
        case .newerSchema(let path, let version):
            return
                "ledger \(path) has schema version \(version), newer than this newspush understands "
                + "(\(LedgerSchema.version)); upgrade newspush. Nothing was sent"
        case .locked(let path) where PostgresAddress.isPostgres(path):
            return
                "another newspush run (on this host or another) holds the advisory lock of the ledger \(path); this "
                + "one did nothing (publish --wait 2m waits for it)"
        case .locked(let path):
            return
                "another newspush run holds the lock on \(path).lock; this one did nothing (publish --wait 2m waits "
                + "for it)"
        case .diskFull(let path):
            return
                "the disk holding the ledger \(path) is full: nothing was sent without its intent recorded, and the "
                + "pushes not yet sent stay pending for the next run. Free some space"
        case .writeFailed(let path, let reason):
            return "cannot write the ledger \(path): \(reason); the pushes not yet sent stay pending"
        case .noLedger(let path):
            return "no ledger at \(path) (no run has recorded anything yet)"
        case .busy(let path, let seconds):
            return
                "another change of the same installation or reader held it for over \(seconds) s in the ledger "
                + "\(path); nothing was done: try again in a few seconds"
        }
    }
}

/// The ledger's format.
public enum LedgerSchema {
    /// The schema version this newspush reads and writes; a newer ledger stops every command.
    /// (2: the review queue and the audit trail; 3: the app back-end's installation index;
    /// 4: secure pushes; 5: the hub's owed state and each installation's template set; 6: the
    /// watcher's leases and each push's acceptance time; 7: the WebSub subscriptions and each
    /// feed's freshness limit; 8: the Basic credentials the back-end's instances found good;
    /// 9: the alerts' reports.)
    public static let version = 9
}
