import Foundation
import NewsPushModel

/// What the index holds for one registration: the id's row, the rows holding its handle, and
/// what the hub owes the id.
public struct InstallationState: Sendable, Equatable {
    /// The installation of the id, if the index has it.
    public var current: InstallationRecord?
    /// The installations holding the handle (at most one, unless it is being replaced).
    public var holders: [InstallationRecord]
    /// What the hub owes the id, if anything.
    public var owed: OwedHubState?
}

/// An id whose state at the hub is owed agreement with the index: a removal not yet made, or a
/// write whose answer was lost (`intended`, the installation it makes: if the hub holds it,
/// the write landed).
public struct OwedHubState: Sendable, Equatable {
    /// The installation id.
    public var id: String
    /// The installation a write whose answer was lost makes; nil when the hub is to agree with
    /// the index as it is.
    public var intended: InstallationRecord?
}

/// Which installations `devices list` shows: each filter applies when set.
public struct InstallationFilter: Sendable, Equatable {
    /// Only this user's (`""`: only anonymous ones).
    public var owner: String?
    /// Only this platform's.
    public var platform: String?
    /// Only those carrying this tag.
    public var tag: String?
    /// At most this many, by id.
    public var limit: Int

    /// A filter (nothing set: the first `limit` installations by id).
    public init(owner: String? = nil, platform: String? = nil, tag: String? = nil, limit: Int = 1000) {
        self.owner = owner
        self.platform = platform
        self.tag = tag
        self.limit = limit
    }
}

extension Ledger {
    // MARK: Opening for the app back-end

    /// The ledger as `newspush api` uses it: written beside a run, without the run lock (it
    /// touches only the installation index, in short transactions of its own). A missing
    /// ledger is created: a run finds every feed new and baselines each, as on a first run.
    /// SQLite commits the index without waiting for the disk (`synchronous = NORMAL`: a power
    /// cut may lose the last registrations, which the phones repeat at their next start; it
    /// never damages the file). `verify`: check the file's pages first (once per process).
    ///
    /// A SQLite index is one connection shared by the process's threads (`isShared`): its
    /// writers take turns anyway, and a connection of its own per thread would start each
    /// transaction from a cold page cache, since every other connection's commit empties it.
    /// The writes waiting for their turn are committed together (`GroupCommit`), and the log
    /// is copied into the file every 1,000 pages (SQLite's default), by the commit that fills
    /// it, while every request waits: at 10,000 pages each copy held the connection for 60–150
    /// ms every 2.5 s of 64 phones reporting, the p99 of an event 36 ms against 14 ms now.
    public static func openIndex(configured: String, verify: Bool) throws(LedgerError) -> Ledger {
        let ledger = try open(configured: configured, access: .write, lock: nil, verify: verify)
        if let sqlite = ledger.db as? SQLiteDatabase {
            try wrap(ledger.path, writing: true) {
                try sqlite.execute("PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 1000;")
            }
            ledger.shareConnection()
        }
        return ledger
    }

    // MARK: Reading the index

    static let installationColumns =
        "id, owner, platform, tags, language, handle_digest, created_at, refreshed_at, template_digest"

    /// Installation `id`, if the index has it.
    public func installation(id: String) throws(LedgerError) -> InstallationRecord? {
        try reading {
            try db.query("SELECT \(Self.installationColumns) FROM installations WHERE id = ?", [.text(id)])
                .first.flatMap(Self.installation)
        }
    }

    /// The installation holding the handle of this digest, if any.
    public func installation(handleDigest: String) throws(LedgerError) -> InstallationRecord? {
        try reading {
            try db.query(
                "SELECT \(Self.installationColumns) FROM installations WHERE handle_digest = ?", [.text(handleDigest)]
            ).first.flatMap(Self.installation)
        }
    }

    /// Installations as `filter` selects, by id.
    public func installations(_ filter: InstallationFilter) throws(LedgerError) -> [InstallationRecord] {
        try reading {
            let owner: SQLValue = filter.owner.map { .text($0) } ?? .null
            return try db.query(
                """
                SELECT \(Self.installationColumns) FROM installations
                WHERE (CAST(? AS TEXT) IS NULL OR COALESCE(owner, '') = ?)
                  AND (CAST(? AS TEXT) IS NULL OR platform = ?)
                  AND (CAST(? AS TEXT) IS NULL OR id IN (SELECT installation_id FROM installation_tags WHERE tag = ?))
                ORDER BY id LIMIT ?
                """,
                [
                    owner, owner, SQLValue(filter.platform), SQLValue(filter.platform), SQLValue(filter.tag),
                    SQLValue(filter.tag), .integer(Int64(filter.limit)),
                ]
            ).compactMap(Self.installation)
        }
    }

    /// Every installation of `owner`.
    public func installations(owner: String) throws(LedgerError) -> [InstallationRecord] {
        try reading {
            try db.query("SELECT \(Self.installationColumns) FROM installations WHERE owner = ?", [.text(owner)])
                .compactMap(Self.installation)
        }
    }

    /// Installations not registered again since `before`, oldest first, at most `limit`.
    public func installations(refreshedBefore before: Date, limit: Int) throws(LedgerError) -> [InstallationRecord] {
        try reading {
            try db.query(
                """
                SELECT \(Self.installationColumns) FROM installations WHERE refreshed_at < ?
                ORDER BY refreshed_at LIMIT ?
                """, [SQLValue(before), .integer(Int64(limit))]
            ).compactMap(Self.installation)
        }
    }

    /// How many installations carry `tag`.
    public func installationCount(tag: String) throws(LedgerError) -> Int {
        try reading {
            try db.query("SELECT COUNT(*) FROM installation_tags WHERE tag = ?", [.text(tag)]).first?.int(0) ?? 0
        }
    }

    /// How many installations an expression over `tags` (at most 16) reaches, `matches` telling
    /// for a set of them whether it does. The database counts the installations per combination
    /// of these tags they carry (at most 2¹⁶ groups); the expression is asked once per
    /// combination, and once for the installations carrying none of them.
    public func installationCount(tags: [String], matches: (Set<String>) -> Bool) throws(LedgerError) -> Int {
        precondition(tags.count <= 16, "at most 16 tags")
        return try reading {
            let total = try db.query("SELECT COUNT(*) FROM installations", []).first?.int(0) ?? 0
            guard !tags.isEmpty else { return matches([]) ? total : 0 }
            let masks = try db.membershipCounts(
                tags.map {
                    (
                        "SELECT installation_id FROM installation_tags WHERE tag = ? ORDER BY installation_id",
                        [SQLValue($0)]
                    )
                })
            var count = 0
            var carrying = 0
            for (mask, n) in masks {
                carrying += n
                let carried = Set(tags.indices.filter { mask & (1 << $0) != 0 }.map { tags[$0] })
                if matches(carried) { count += n }
            }
            return count + (matches([]) ? total - carrying : 0)
        }
    }

    /// Whether the index holds any installation (one row read, not a count).
    public func hasInstallations() throws(LedgerError) -> Bool {
        try reading { !(try db.query("SELECT 1 FROM installations LIMIT 1", []).isEmpty) }
    }

    /// How many installations the index holds.
    public func installationTotal() throws(LedgerError) -> Int {
        try reading { try db.query("SELECT COUNT(*) FROM installations", []).first?.int(0) ?? 0 }
    }

    /// The index in numbers: in all, signed in, by platform and by tag (tags that start with
    /// `userTagPrefix`, one per user, and the back-end's own `newspush:` tags are left out).
    public func installationCounts(userTagPrefix: String?) throws(LedgerError) -> InstallationCounts {
        try reading {
            let total = try db.query("SELECT COUNT(*), COUNT(owner) FROM installations", []).first
            var platforms: [String: Int] = [:]
            for row in try db.query("SELECT platform, COUNT(*) FROM installations GROUP BY platform", []) {
                if let name = row.text(0) { platforms[name] = row.int(1) ?? 0 }
            }
            var topics: [String: Int] = [:]
            for row in try db.query("SELECT tag, COUNT(*) FROM installation_tags GROUP BY tag", []) {
                guard let tag = row.text(0) else { continue }
                if let userTagPrefix, !userTagPrefix.isEmpty, tag.hasPrefix(userTagPrefix) { continue }
                if tag.hasPrefix("newspush:") { continue }  // the back-end's own (signed in)
                topics[tag] = row.int(1) ?? 0
            }
            return InstallationCounts(
                total: total?.int(0) ?? 0, signedIn: total?.int(1) ?? 0, platforms: platforms, topics: topics)
        }
    }

    /// How many installations of each platform and language carry each template set (by its
    /// digest; nil for those written before the index kept it).
    public func templateSetCounts() throws(LedgerError) -> [(
        platform: String, language: String?, digest: String?, count: Int
    )] {
        try reading {
            try db.query(
                "SELECT platform, language, template_digest, COUNT(*) FROM installations "
                    + "GROUP BY platform, language, template_digest", []
            ).compactMap { row in
                row.text(0).map { ($0, row.text(1), row.text(2), row.int(3) ?? 0) }
            }
        }
    }

    // MARK: Writing the index (each under the keys of what it touches: `withKeys`)

    /// What the index holds for a registration of `id` with the handle of `handleDigest`: the
    /// row of the id, the rows holding the handle, and what the hub owes the id, if anything.
    public func installationState(id: String, handleDigest: String) throws(LedgerError) -> InstallationState {
        try reading {
            // One query finds all three: the row of the id, the rows holding the handle, and
            // (last, its own columns empty) what the hub owes the id.
            let rows = try db.query(
                """
                SELECT \(Self.installationColumns), NULL FROM installations WHERE id = ? OR handle_digest = ?
                UNION ALL
                SELECT id, NULL, '', '', NULL, '', 0, 0, NULL, COALESCE(intended, '') FROM hub_owed WHERE id = ?
                """, [.text(id), .text(handleDigest), .text(id)])
            let found = rows.filter { $0.text(9) == nil }.compactMap(Self.installation)
            let owed = rows.first { $0.text(9) != nil }.map { row in
                OwedHubState(id: id, intended: Self.intended(row.text(9) ?? ""))
            }
            return InstallationState(
                current: found.first { $0.id == id }, holders: found.filter { $0.handleDigest == handleDigest },
                owed: owed)
        }
    }

    /// Installation `id` and whether the hub owes it anything, in one query (the question of
    /// every app start: is this registration the one the index holds?).
    public func installationAndOwed(id: String) throws(LedgerError) -> (InstallationRecord, owed: Bool)? {
        try reading {
            try db.query(Self.installationAndOwedQuery, [.text(id)]).first.flatMap { row in
                Self.installation(row).map { ($0, (row.int(9) ?? 0) > 0) }
            }
        }
    }

    /// The query of `installationAndOwed` (also `LedgerConnections.installationAndOwed`'s).
    static let installationAndOwedQuery =
        "SELECT \(installationColumns), (SELECT COUNT(*) FROM hub_owed o WHERE o.id = i.id) "
        + "FROM installations i WHERE i.id = ?"

    /// Notes, before a write of `id` goes to the hub, that the hub's state of it is uncertain
    /// until the write's answer is recorded: `intended` is the installation the write makes.
    /// A host that dies meanwhile leaves the note to whoever finishes what is owed.
    public func oweHubWrite(of intended: InstallationRecord, at time: Date) throws(LedgerError) {
        let json = String(decoding: (try? JSONEncoder().encode(intended)) ?? Data(), as: UTF8.self)
        // On the disk before the write goes out: a power cut after the hub took it must not
        // lose the note that says so.
        try writingOne(
            """
            INSERT INTO hub_owed (id, since, owner, intended) VALUES (?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET since = excluded.since, owner = excluded.owner, intended = excluded.intended,
                tries = 0, next_try = NULL
            """, [.text(intended.id), SQLValue(time), SQLValue(intended.owner), .text(json)], durable: true)
    }

    /// Records `installation` as the hub now holds it (its write answered 200): its row
    /// replaces the id's, the rows of `replacing` (the handle's other installations) leave the
    /// index with their removal owed, the id's reservation is spent, and the hub owes nothing
    /// for it, unless `verify`: an earlier write of the id whose answer was lost may still
    /// land, so the hub is checked against the index once more.
    /// `previous` is the row the id has now, as the caller read it under the id's key.
    public func recordInstallation(
        _ installation: InstallationRecord, previous: InstallationRecord?, replacing: [String], verify: Bool
    ) throws(LedgerError) {
        let row = installation  // an existing row keeps its created time: the update leaves it
        let replaced = Array(Set(replacing).subtracting([row.id])).sorted()
        var statements = replaced.flatMap { Self.removal(of: $0, since: row.refreshed) }
        statements.append(
            (
                """
                INSERT INTO installations (\(Self.installationColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, platform = excluded.platform,
                  tags = excluded.tags, language = excluded.language, handle_digest = excluded.handle_digest,
                  refreshed_at = excluded.refreshed_at, template_digest = excluded.template_digest
                """, Self.values(row)
            ))
        if previous?.tags != row.tags { statements += Self.tagRows(of: row, replacingOld: previous != nil) }
        statements.append(("DELETE FROM registration_ids WHERE id = ?", [.text(row.id)]))
        statements.append(Self.settledOwed(row.id, verify: verify))
        // A crash may lose it: the note of its hub write, on the disk, makes the settling redo it.
        // A replaced row holds the handle the id takes: its delete comes first, in a transaction.
        try writingTogether(statements, independent: replaced.isEmpty, redone: true)
    }

    /// The statements that give `row` its tags: the old ones it no longer has deleted, the new
    /// ones added (no statement touches a row another one does, so they may run as one).
    private static func tagRows(of row: InstallationRecord, replacingOld: Bool) -> [SQLStatement] {
        let tags = Set(row.tags).sorted()
        var statements: [SQLStatement] = []
        if replacingOld {
            let kept = tags.isEmpty ? "" : " AND tag NOT IN (\(marks(tags.count)))"
            statements.append(
                (
                    "DELETE FROM installation_tags WHERE installation_id = ?" + kept,
                    [.text(row.id)] + tags.map(SQLValue.init)
                ))
        }
        for chunk in tags.chunked(100) {
            statements.append(
                (
                    "INSERT INTO installation_tags (tag, installation_id) VALUES \(rows(2, chunk.count)) "
                        + "ON CONFLICT (tag, installation_id) DO NOTHING",
                    chunk.flatMap { [SQLValue.text($0), .text(row.id)] }
                ))
        }
        return statements
    }

    /// Writes the `refreshed` time of installation `id` (a registration that changed nothing).
    public func touchInstallation(id: String, at time: Date) throws(LedgerError) {
        // The phone's next start writes it again if a crash loses it.
        try writingTogether(
            [("UPDATE installations SET refreshed_at = ? WHERE id = ?", [SQLValue(time), .text(id)])], redone: true)
    }

    /// Removes installation `id` from the index (when `mayRemove` allows the row it has now),
    /// owing its removal to the hub. Returns the row removed; nil when there was none or it was
    /// not allowed (`allowed` says which).
    public func removeInstallation(
        id: String, at time: Date, mayRemove: (InstallationRecord) -> Bool
    ) throws(LedgerError) -> (removed: InstallationRecord?, allowed: Bool) {
        try writing { () throws -> (InstallationRecord?, Bool) in
            guard
                let current = try db.query(
                    "SELECT \(Self.installationColumns) FROM installations WHERE id = ?", [.text(id)]
                ).first.flatMap(Self.installation)
            else { return (nil, true) }
            guard mayRemove(current) else { return (nil, false) }
            try db.run(Self.removal(of: id, since: time))
            return (current, true)
        }
    }

    /// The ids whose state at the hub is owed agreement with the index, noted before `before`
    /// and due to be tried again by `dueBy` (a note waits after each failure), those never
    /// tried first, then by when they were noted (a note that keeps failing goes to the back and
    /// waits longer each time, so it never keeps newer ones from being settled), at most `limit`.
    public func owedHubStates(before: Date, dueBy: Date, limit: Int) throws(LedgerError) -> [String] {
        try reading {
            try db.query(
                """
                SELECT id FROM hub_owed WHERE since <= ? AND (next_try IS NULL OR next_try <= ?)
                ORDER BY tries, since LIMIT ?
                """,
                [SQLValue(before), SQLValue(dueBy), .integer(Int64(limit))]
            ).compactMap { $0.text(0) }
        }
    }

    /// Settling `ids` failed at `now`: each is tried again after a minute per failure so far,
    /// at most an hour.
    public func owedFailed(_ ids: [String], at now: Date) throws(LedgerError) {
        guard !ids.isEmpty else { return }
        try writing {
            for id in ids {
                let tries = try db.query("SELECT tries FROM hub_owed WHERE id = ?", [.text(id)]).first?.int(0) ?? 0
                try db.run(
                    "UPDATE hub_owed SET tries = ?, next_try = ? WHERE id = ?",
                    [
                        .integer(Int64(tries + 1)), SQLValue(now.addingTimeInterval(Double(min(60, tries + 1)) * 60)),
                        .text(id),
                    ])
            }
        }
    }

    /// What the hub owes installation `id`, if anything.
    public func owedHubState(id: String) throws(LedgerError) -> OwedHubState? {
        try reading { try owed(id) }
    }

    /// The hub agrees with the index on `ids` (a removal done, an owed state settled): nothing
    /// is owed for them any more.
    public func hubAgrees(_ ids: [String]) throws(LedgerError) {
        guard !ids.isEmpty else { return }
        try writing {
            for chunk in ids.chunked(500) {
                try db.run("DELETE FROM hub_owed WHERE id IN (\(Self.marks(chunk.count)))", chunk.map(SQLValue.init))
            }
        }
    }

    /// The writes owed for `owner` whose answers were lost are given up (a forgotten reader's
    /// installation is never made after the forget): the hub is made to agree with the index
    /// instead. Returns their ids.
    public func dropOwedWrites(owner: String) throws(LedgerError) -> [String] {
        try writing {
            let ids = try db.query("SELECT id FROM hub_owed WHERE owner = ?", [.text(owner)]).compactMap { $0.text(0) }
            try db.run("UPDATE hub_owed SET owner = NULL, intended = NULL WHERE owner = ?", [.text(owner)])
            return ids
        }
    }

    private func owed(_ id: String) throws -> OwedHubState? {
        guard let row = try db.query("SELECT intended FROM hub_owed WHERE id = ?", [.text(id)]).first else {
            return nil
        }
        return OwedHubState(id: id, intended: Self.intended(row.text(0) ?? ""))
    }

    /// The installation an owed write makes, from its JSON (empty: none).
    private static func intended(_ json: String) -> InstallationRecord? {
        json.isEmpty ? nil : try? JSONDecoder().decode(InstallationRecord.self, from: Data(json.utf8))
    }

    private static func owedRemoval(_ id: String, since time: Date) -> SQLStatement {
        (
            """
            INSERT INTO hub_owed (id, since, owner, intended) VALUES (?, ?, NULL, NULL)
            ON CONFLICT (id) DO UPDATE SET owner = NULL, intended = NULL, tries = 0, next_try = NULL
            """, [.text(id), SQLValue(time)]
        )
    }

    /// Installation `id`'s rows deleted and its removal owed to the hub.
    private static func removal(of id: String, since time: Date) -> [SQLStatement] {
        [
            ("DELETE FROM installation_tags WHERE installation_id = ?", [.text(id)]),
            ("DELETE FROM installations WHERE id = ?", [.text(id)]), owedRemoval(id, since: time),
        ]
    }

    /// What the hub owes for `id` settled by a write it took: nothing more, or (`verify`) a
    /// check of the hub against the index.
    private static func settledOwed(_ id: String, verify: Bool) -> SQLStatement {
        verify
            ? ("UPDATE hub_owed SET owner = NULL, intended = NULL WHERE id = ?", [.text(id)])
            : ("DELETE FROM hub_owed WHERE id = ?", [.text(id)])
    }

    // MARK: Registration ids

    /// Records `id` as handed out to `owner` (`POST /api/register`), and forgets ids handed
    /// out before `expiredBefore` and never used.
    public func reserveRegistrationId(_ id: String, owner: String, at time: Date, expiredBefore: Date)
        throws(LedgerError)
    {
        try writing {
            try db.run("DELETE FROM registration_ids WHERE created_at < ?", [SQLValue(expiredBefore)])
            try db.run(
                "INSERT INTO registration_ids (id, owner, created_at) VALUES (?, ?, ?)",
                [.text(id), .text(owner), SQLValue(time)])
        }
    }

    /// Who `id` was handed out to, if it was, since `notBefore`.
    public func registrationIdOwner(_ id: String, notBefore: Date) throws(LedgerError) -> String? {
        try reading {
            try db.query(
                "SELECT owner FROM registration_ids WHERE id = ? AND created_at >= ?", [.text(id), SQLValue(notBefore)]
            ).first?.text(0)
        }
    }

    // MARK: Rows

    private static func values(_ row: InstallationRecord) -> [SQLValue] {
        [
            .text(row.id), SQLValue(row.owner), .text(row.platform), .text(row.tags.joined(separator: "\n")),
            SQLValue(row.language), .text(row.handleDigest), SQLValue(row.created), SQLValue(row.refreshed),
            SQLValue(row.templateDigest),
        ]
    }

    static func installation(_ row: SQLRow) -> InstallationRecord? {
        guard let id = row.text(0), let platform = row.text(2), let digest = row.text(5),
            let created = row.date(6), let refreshed = row.date(7)
        else { return nil }
        let tags = (row.text(3) ?? "").split(separator: "\n").map(String.init)
        return InstallationRecord(
            id: id, owner: row.text(1), platform: platform, tags: tags, language: row.text(4), handleDigest: digest,
            created: created, refreshed: refreshed, templateDigest: row.text(8))
    }
}

// MARK: Who owns plain names

extension Ledger {
    /// Which source owned the plain user names of the index when `newspush api` last started
    /// (`basic` or `tokens`; SPEC §9, "Abuse"); nil before any start recorded it.
    public func plainNamesOwner() throws(LedgerError) -> String? {
        try reading { try db.query("SELECT value FROM meta WHERE name = 'plain_names'", []).first?.text(0) }
    }

    /// Records which source owns plain user names from now on.
    public func recordPlainNamesOwner(_ owner: String) throws(LedgerError) {
        try writingOne(
            "INSERT INTO meta (name, value) VALUES ('plain_names', ?) "
                + "ON CONFLICT (name) DO UPDATE SET value = excluded.value", [.text(owner)], durable: true)
    }

    /// How many readers with a plain name (no `basic:` or `jwt:`) own installations, ids
    /// reserved for them or secure pushes' reads, and how many installations those readers own.
    public func plainNamedReaders() throws(LedgerError) -> (readers: Int, installations: Int) {
        try reading {
            let plain = "owner IS NOT NULL AND owner NOT LIKE 'basic:%' AND owner NOT LIKE 'jwt:%'"
            let readers = try db.query(
                """
                SELECT COUNT(*) FROM (SELECT owner FROM installations WHERE \(plain)
                UNION SELECT owner FROM registration_ids WHERE \(plain)
                UNION SELECT reader FROM secure_reads WHERE reader NOT LIKE 'basic:%' AND reader NOT LIKE 'jwt:%') named
                """, []
            ).first?.int(0)
            let installations = try db.query("SELECT COUNT(*) FROM installations WHERE \(plain)", []).first?.int(0)
            return (readers ?? 0, installations ?? 0)
        }
    }
}
