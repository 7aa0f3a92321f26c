import Foundation
import NewsPushModel

/// A secure push's record (SPEC §9): the tags it was sent to and its text by language, kept
/// until it expires; the push itself carried only the id.
public struct SecurePushRecord: Sendable, Equatable {
    /// The `secureId` (a decimal integer below 2³¹).
    public var id: Int
    /// The tag expression it went to.
    public var tags: String
    /// Its text by language (`default` for the text without one).
    public var texts: [String: String]
    /// Who sent it (a user of the app back-end), if a user did.
    public var sender: String?
    /// When it was sent.
    public var created: Date
    /// When it expires (its text is deleted then).
    public var expires: Date

    /// A record as the ledger keeps it.
    public init(id: Int, tags: String, texts: [String: String], sender: String?, created: Date, expires: Date) {
        self.id = id
        self.tags = tags
        self.texts = texts
        self.sender = sender
        self.created = created
        self.expires = expires
    }
}

extension Ledger {
    // MARK: Secure pushes

    /// Seals an id-only outbox entry: records its texts as secure push `push` and, in the same
    /// transaction, gives the entry `properties` (its id, without the texts). False when the id
    /// is taken (the caller draws another): nothing changes.
    public func sealSecurePush(_ push: SecurePushRecord, entryID: String, properties: [String: String])
        throws(LedgerError) -> Bool
    {
        let texts = (try? JSONSerialization.data(withJSONObject: push.texts, options: [.sortedKeys])) ?? Data()
        return try writing(durable: true) { () throws -> Bool in
            let inserted = try db.run(
                """
                INSERT INTO secure_pushes (id, tags, texts, sender, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING
                """,
                [
                    .integer(Int64(push.id)), .text(push.tags), .text(String(decoding: texts, as: UTF8.self)),
                    SQLValue(push.sender), SQLValue(push.created), SQLValue(push.expires),
                ])
            guard inserted == 1 else { return false }
            try db.run(
                "UPDATE outbox SET properties = ? WHERE id = ?", [.text(Self.encoded(properties)), .text(entryID)])
            return true
        }
    }

    /// Secure push `id`, unless it is unknown or expired at `now`.
    public func securePush(id: Int, now: Date) throws(LedgerError) -> SecurePushRecord? {
        try reading {
            guard
                let row = try db.query(
                    "SELECT id, tags, texts, sender, created_at, expires_at FROM secure_pushes WHERE id = ? AND expires_at > ?",
                    [.integer(Int64(id)), SQLValue(now)]
                ).first, let tags = row.text(1), let created = row.date(4), let expires = row.date(5)
            else { return nil }
            let texts =
                (try? JSONSerialization.jsonObject(with: Data((row.text(2) ?? "{}").utf8))) as? [String: String] ?? [:]
            return SecurePushRecord(
                id: id, tags: tags, texts: texts, sender: row.text(3), created: created, expires: expires)
        }
    }

    /// Notes that `reader` fetched secure push `id`; whether they had fetched it before.
    public func markSecurePushRead(id: Int, reader: String) throws(LedgerError) -> Bool {
        try writing { () throws -> Bool in
            let added = try db.run(
                "INSERT INTO secure_reads (secure_id, reader) VALUES (?, ?) ON CONFLICT (secure_id, reader) DO NOTHING",
                [.integer(Int64(id)), .text(reader)])
            return added == 0
        }
    }

    /// The secure pushes `sender` sent since `since`, oldest first (their times).
    public func securePushTimes(sender: String, since: Date) throws(LedgerError) -> [Date] {
        try reading {
            try db.query(
                "SELECT created_at FROM secure_pushes WHERE sender = ? AND created_at > ? ORDER BY created_at",
                [.text(sender), SQLValue(since)]
            ).compactMap { $0.date(0) }
        }
    }

    /// Deletes the secure pushes sent to exactly `tags` (a forgotten reader's tag), texts and
    /// reads; how many.
    @discardableResult
    public func deleteSecurePushes(tags: String) throws(LedgerError) -> Int {
        try writing { () throws -> Int in
            try db.run(
                "DELETE FROM secure_reads WHERE secure_id IN (SELECT id FROM secure_pushes WHERE tags = ?)",
                [.text(tags)])
            return try db.run("DELETE FROM secure_pushes WHERE tags = ?", [.text(tags)])
        }
    }

    /// Deletes the secure pushes expired by `now`, texts and reads; how many.
    @discardableResult
    public func deleteExpiredSecurePushes(now: Date) throws(LedgerError) -> Int {
        try writing { () throws -> Int in try expireSecurePushes(now: now) }
    }

    /// Deletes the secure pushes expired by `now`, within the caller's transaction.
    @discardableResult
    func expireSecurePushes(now: Date) throws -> Int {
        try db.run(
            "DELETE FROM secure_reads WHERE secure_id IN (SELECT id FROM secure_pushes WHERE expires_at <= ?)",
            [SQLValue(now)])
        return try db.run("DELETE FROM secure_pushes WHERE expires_at <= ?", [SQLValue(now)])
    }
}
