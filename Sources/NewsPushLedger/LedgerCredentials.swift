import Foundation
import NewsPushModel

/// The credentials the app back-end's instances found good, as keyed digests (SPEC §9,
/// "Abuse"): a reader's first request at another instance, or after a restart, needs no bcrypt.
extension Ledger {
    /// Whether `digest` was found good at or after `since`.
    public func recallsCredential(_ digest: String, since: Date) throws(LedgerError) -> Bool {
        try reading {
            try !db.query(
                "SELECT 1 FROM remembered_credentials WHERE digest = ? AND checked_at >= ?",
                [.text(digest), SQLValue(since)]
            ).isEmpty
        }
    }

    /// Remembers `digest`, found good at `time` for the reader filed as `reader`; forgets the
    /// digests found good before `expiredBefore`.
    public func keepCredential(_ digest: String, reader: String, at time: Date, expiredBefore: Date)
        throws(LedgerError)
    {
        try writing {
            try db.run("DELETE FROM remembered_credentials WHERE checked_at < ?", [SQLValue(expiredBefore)])
            try db.run(
                "INSERT INTO remembered_credentials (digest, reader, checked_at) VALUES (?, ?, ?) "
                    + "ON CONFLICT (digest) DO UPDATE SET checked_at = excluded.checked_at",
                [.text(digest), .text(reader), SQLValue(time)])
        }
    }
}
