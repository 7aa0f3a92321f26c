import Foundation
import NewsPushModel

extension Ledger {
    // MARK: Maintenance

    /// Drops stories that no feed has listed for longer than `retention` (leaving a tombstone, so
    /// a story that comes back is still old news), tombstones older than 12 × `retention`, and
    /// the secure pushes that expired. Stories with a push waiting or under way stay. Returns
    /// how many stories went.
    @discardableResult
    public func prune(retention: Double, now: Date) throws(LedgerError) -> Int {
        let cutoff = SQLValue(now.addingTimeInterval(-retention))
        return try writing {
            let keys = try db.query(
                """
                SELECT key FROM stories s
                WHERE s.last_seen < ? AND s.status NOT IN ('pending', 'sending', 'scheduled')
                  AND NOT EXISTS (SELECT 1 FROM feed_members m JOIN feeds f ON f.url = m.feed
                                  WHERE m.story_key = s.key AND f.listed_at >= ?)
                """, [cutoff, cutoff]
            ).compactMap { $0.text(0) }
            for key in keys {
                try db.run(
                    "INSERT INTO tombstones (key, pruned_at) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                        + "pruned_at = excluded.pruned_at",
                    [.text(key), SQLValue(now)])
                try db.run("DELETE FROM feed_members WHERE story_key = ?", [.text(key)])
                try db.run("DELETE FROM outbox WHERE story_key = ? AND status NOT IN ('sent', 'unknown')", [.text(key)])
                try db.run("DELETE FROM stories WHERE key = ?", [.text(key)])
            }
            try db.run(
                "DELETE FROM tombstones WHERE pruned_at < ?",
                [SQLValue(now.addingTimeInterval(-retention * Self.tombstoneFactor))])
            try pruneOneShots(retention: retention, now: now)
            return keys.count
        }
    }

    /// Bounds what the app back-end leaves in the ledger (`devices prune`; each run's prune
    /// too): reservations of `POST /api/register` past their day, secure texts past their
    /// expiry and every read of them, and ended pushes of no story (messages, secure pushes,
    /// notices) older than `retention`.
    public func pruneBackEnd(retention: Double, now: Date) throws(LedgerError) {
        try writing { try pruneOneShots(retention: retention, now: now) }
    }

    /// A reservation of `POST /api/register` not used within this long expires.
    public static let reservationLifetime: Double = 86400

    private func pruneOneShots(retention: Double, now: Date) throws {
        // Ended pushes are kept for the budget and history until they are older than the
        // retention; those of a story that is still kept stay with it.
        try db.run(
            "DELETE FROM outbox WHERE status IN ('sent', 'unknown', 'failed', 'expired') AND created_at < ? "
                + "AND story_key NOT IN (SELECT key FROM stories)",
            [SQLValue(now.addingTimeInterval(-retention))])
        try db.run(
            "DELETE FROM registration_ids WHERE created_at < ?",
            [SQLValue(now.addingTimeInterval(-Self.reservationLifetime))])
        // A secure push's text lives only until the push expires; its reads go with it.
        try expireSecurePushes(now: now)
        try db.run("DELETE FROM secure_reads WHERE secure_id NOT IN (SELECT id FROM secure_pushes)", [])
        // An alert's report goes with its outbox entry; the digests that counted each phone once
        // go when events stop being taken.
        try db.run("DELETE FROM alert_counts WHERE alert_id NOT IN (SELECT id FROM outbox)", [])
        try db.run("DELETE FROM alert_reports WHERE alert_id NOT IN (SELECT id FROM outbox)", [])
        try db.run(
            "DELETE FROM alert_event_keys WHERE at < ?", [SQLValue(now.addingTimeInterval(-AlertBuckets.window))])
    }

    /// Tombstones are kept this many times the retention period.
    public static let tombstoneFactor = 12.0

    /// Forgets a story (record, tombstone, waiting pushes) so a later run treats it as new, and
    /// clears the validators of the feeds that list it so the next run reads them in full even
    /// if they would answer 304. Returns false when the ledger knows no such key.
    public func forget(_ key: String) throws(LedgerError) -> Bool {
        try writing {
            let feeds = try db.query(
                "SELECT feed FROM feed_members WHERE story_key = ? UNION SELECT feed FROM stories WHERE key = ?",
                [.text(key), .text(key)]
            ).compactMap { $0.text(0) }
            let known = try db.query(
                "SELECT key FROM stories WHERE key = ? UNION SELECT key FROM tombstones WHERE key = ?",
                [.text(key), .text(key)])
            guard !known.isEmpty else { return false }
            for feed in feeds {
                try db.run("UPDATE feeds SET etag = NULL, last_modified = NULL WHERE url = ?", [.text(feed)])
            }
            try db.run("DELETE FROM feed_members WHERE story_key = ?", [.text(key)])
            try db.run(
                "DELETE FROM outbox WHERE story_key = ? AND status IN ('pending', 'expired', 'failed')", [.text(key)])
            try db.run("DELETE FROM stories WHERE key = ?", [.text(key)])
            try db.run("DELETE FROM tombstones WHERE key = ?", [.text(key)])
            return true
        }
    }

    // MARK: Whole views (state show, export, check)

    /// Every story with the time it was last known to be in a feed (its own last sighting, or
    /// the last time a feed listing it was confirmed), newest first.
    public func allStories() throws(LedgerError) -> [(record: StoryRecord, lastListed: Date)] {
        try reading {
            try db.query(
                """
                SELECT \(Self.storyColumns),
                       (SELECT MAX(f.listed_at) FROM feed_members m JOIN feeds f ON f.url = m.feed WHERE
                           m.story_key = stories.key)
                FROM stories ORDER BY first_seen DESC, key
                """, []
            ).map { row in
                let record = Self.story(row)
                return (record, max(record.lastSeen, row.date(14) ?? record.lastSeen))
            }
        }
    }

    /// Every feed the ledger knows, by URL.
    public func allFeeds() throws(LedgerError) -> [FeedRecord] {
        try reading { try db.query("SELECT \(Self.feedColumns) FROM feeds ORDER BY url", []).map(Self.feed) }
    }

    /// Every tombstone with when its story was pruned.
    public func tombstones() throws(LedgerError) -> [String: Date] {
        try reading {
            var result: [String: Date] = [:]
            for row in try db.query("SELECT key, pruned_at FROM tombstones", []) {
                if let key = row.text(0), let at = row.date(1) { result[key] = at }
            }
            return result
        }
    }

    /// The latest push of each story that has one.
    public func latestPushes() throws(LedgerError) -> [String: OutboxEntry] {
        let entries = try outbox(OutboxEntry.Status.allCases)
        var latest: [String: OutboxEntry] = [:]
        for entry in entries where !entry.kind.isTrial { latest[entry.storyKey] = entry }
        return latest
    }

    /// SQLite's own check of the file, then consistency checks a healthy ledger passes.
    public func problems() throws(LedgerError) -> [String] {
        try reading {
            var problems: [String] = []
            problems += try db.integrityProblems(quick: false).map { "integrity: \($0)" }
            for row in try db.query("SELECT key FROM stories WHERE status = 'pushed' AND pushed_at IS NULL", []) {
                problems.append("\(row.text(0) ?? "?"): pushed without a push time")
            }
            for row in try db.query("SELECT key FROM stories WHERE last_seen < first_seen", []) {
                problems.append("\(row.text(0) ?? "?"): last seen before first seen")
            }
            for row in try db.query("SELECT s.key FROM stories s JOIN tombstones t ON t.key = s.key", []) {
                problems.append("\(row.text(0) ?? "?"): both a story and a tombstone")
            }
            for row in try db.query(
                "SELECT o.id, o.story_key FROM outbox o WHERE o.status = 'pending' AND o.kind NOT IN "
                    + "\(OutboxEntry.Kind.notStoryAlertsSQL) AND NOT EXISTS (SELECT 1 FROM stories s WHERE s.key = "
                    + "o.story_key)",
                [])
            {
                problems.append(
                    "outbox entry \(row.text(0) ?? "?") waits for a story that is not in the ledger "
                        + "(\(row.text(1) ?? "?"))"
                )
            }
            for row in try db.query("SELECT \(Self.outboxColumns) FROM outbox", []) where Self.outboxEntry(row) == nil {
                problems.append(
                    "outbox entry \(row.text(0) ?? "?") (\(row.text(10) ?? "?"), story \(row.text(1) ?? "?")) cannot be "
                        + "read: a field is missing or its properties are not a JSON object of strings")
            }
            return problems
        }
    }

    /// An outbox row as an entry, or the ledger's error naming it: a row that cannot be read
    /// stops the command (its push would otherwise be neither sent nor reported).
    func decodedOutboxEntry(_ row: SQLRow) throws -> OutboxEntry {
        guard let entry = Self.outboxEntry(row) else {
            throw LedgerError.corrupt(
                path: path,
                reason: "outbox entry \(row.text(0) ?? "?") cannot be read (newspush state check lists it)")
        }
        return entry
    }

    /// Stops a write on a damaged file (SPEC §6: exit 1, the file untouched): SQLite's quick
    /// check of every page, before anything is written. A run reads and writes only a few pages,
    /// so damage elsewhere (an index page it does not happen to visit) would otherwise go
    /// unnoticed while the run writes into the file. It costs about 0.05–0.14 s on the
    /// 150,000-story benchmark ledger (86 MB), measured in docs/benchmarks.md.
    static func checkIntegrity(_ db: any LedgerDatabase, path: String) throws(LedgerError) {
        let problems: [String]
        do { problems = try db.integrityProblems(quick: true) } catch {
            throw .corrupt(path: path, reason: "the file cannot be checked: \(error.message)")
        }
        if let first = problems.first {
            throw .corrupt(path: path, reason: "damaged pages (\(first)\(problems.count > 1 ? ", …" : ""))")
        }
    }
}
