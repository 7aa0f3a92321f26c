import Foundation
import NewsPushModel

extension Ledger {
    // MARK: Reading what a run needs

    /// The records of these feeds (feeds never fetched have none).
    public func feeds(_ urls: [String]) throws(LedgerError) -> [String: FeedRecord] {
        try reading {
            let records = try rows("SELECT \(Self.feedColumns) FROM feeds WHERE url IN", urls).map(Self.feed)
            return Dictionary(records.map { ($0.url, $0) }, uniquingKeysWith: { a, _ in a })
        }
    }

    /// Stories by key.
    public func stories(keys: some Collection<String>) throws(LedgerError) -> [String: StoryRecord] {
        try reading {
            let records = try rows("SELECT \(Self.storyColumns) FROM stories WHERE key IN", keys).map(Self.story)
            return Dictionary(records.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        }
    }

    /// Stories by canonical link (the first recorded one per link).
    public func stories(linkKeys: some Collection<String>) throws(LedgerError) -> [String: StoryRecord] {
        try reading {
            var records: [String: StoryRecord] = [:]
            for record in try rows("SELECT \(Self.storyColumns) FROM stories WHERE link_key IN", linkKeys).map(
                Self.story
            )
            .sorted(by: { $0.firstSeen < $1.firstSeen }) {
                if let link = record.linkKey, records[link] == nil { records[link] = record }
            }
            return records
        }
    }

    /// The keys among `keys` that were pruned (old news even though no record is left).
    public func tombstoned(_ keys: some Collection<String>) throws(LedgerError) -> Set<String> {
        try reading { Set(try rows("SELECT key FROM tombstones WHERE key IN", keys).compactMap { $0.text(0) }) }
    }

    /// The rows of `sql`, which ends in `IN`, for every value of `values`: 500 values a query.
    private func rows(_ sql: String, _ values: some Collection<String>) throws -> [SQLRow] {
        var rows: [SQLRow] = []
        for chunk in Array(values).chunked(500) {
            rows += try db.query("\(sql) (\(Self.marks(chunk.count)))", chunk.map(SQLValue.init))
        }
        return rows
    }

    /// Stories pushed (or about to be, held for an editor, or rejected by one) since `since`,
    /// and those forced out as a deliberate repeat under a key of their own: a new item with a
    /// near-identical title is the same story.
    public func recentPushes(since: Date) throws(LedgerError) -> [StoryRecord] {
        try reading {
            try db.query(
                """
                SELECT \(Self.storyColumns) FROM stories
                WHERE (status IN ('pushed', 'unknown', 'sending', 'pending', 'scheduled', 'held', 'rejected')
                    AND COALESCE(pushed_at, first_seen) >= ?)
                  OR key IN (SELECT story_key FROM outbox WHERE kind = 'repeat'
                    AND status IN ('sent', 'unknown', 'sending', 'pending', 'scheduled') AND created_at >= ?)
                """, [SQLValue(since), SQLValue(since)]
            ).map(Self.story)
        }
    }

    /// Pushes per category that went out (or may have) since `since`, for the rolling budget.
    public func pushesSent(since: Date) throws(LedgerError) -> [NewsCategory: Int] {
        try reading {
            var used: [NewsCategory: Int] = [:]
            for row in try db.query(
                """
                SELECT category, COUNT(*) FROM outbox
                WHERE kind NOT IN \(OutboxEntry.Kind.notStoryAlertsSQL)
                  AND ((status IN ('sent', 'unknown', 'sending') AND scheduled_at IS NULL AND last_attempt >= ?)
                    OR (status IN ('sent', 'scheduled') AND scheduled_at >= ?))
                GROUP BY category
                """, [SQLValue(since), SQLValue(since)])
            {
                if let category = row.text(0).flatMap(NewsCategory.init(rawValue:)) { used[category] = row.int(1) ?? 0 }
            }
            return used
        }
    }

    /// The pushes waiting to be sent, oldest first: what every run sends first while they are
    /// fresh. Tests and trials are never among them (a run would send them to every reader).
    public func waitingPushes() throws(LedgerError) -> [OutboxEntry] {
        try outbox([.pending, .held]).filter { !$0.kind.isTrial }
    }

    /// The pushes held for an editor, oldest first, each with its hold (rule and content).
    public func heldPushes() throws(LedgerError) -> [(entry: OutboxEntry, hold: ReviewHold?)] {
        try reading {
            guard try db.tableExists("review") else { return try outbox([.held]).map { ($0, nil) } }
            let columns = Self.outboxColumns.split(separator: ", ").map { "outbox.\($0)" }.joined(separator: ", ")
            return try db.query(
                """
                SELECT \(columns), review.rule, review.content FROM outbox
                LEFT JOIN review ON review.entry_id = outbox.id
                WHERE outbox.status = 'held' ORDER BY outbox.created_at, outbox.id
                """, []
            ).map { row in
                let entry = try decodedOutboxEntry(row)
                let hold = row.text(18).map { ReviewHold(entryID: entry.id, rule: $0, content: row.text(19) ?? "{}") }
                return (entry, hold)
            }
        }
    }

    /// One outbox entry by its id, with its hold if it was ever held.
    public func outboxEntry(_ id: String) throws(LedgerError) -> (entry: OutboxEntry, hold: ReviewHold?)? {
        try reading {
            guard let found = try db.query("SELECT \(Self.outboxColumns) FROM outbox WHERE id = ?", [.text(id)]).first
            else { return nil }
            let entry = try decodedOutboxEntry(found)
            let row = try db.query("SELECT rule, content FROM review WHERE entry_id = ?", [.text(id)]).first
            return (entry, row.map { ReviewHold(entryID: id, rule: $0.text(0) ?? "", content: $0.text(1) ?? "{}") })
        }
    }

    /// The editorial decisions since `since` (all when nil), newest first; of one entry when
    /// `entryID` is given.
    public func audit(since: Date? = nil, entryID: String? = nil) throws(LedgerError) -> [AuditRecord] {
        try reading {
            // (A ledger of schema 1 opened to read, not migrated, has no audit yet.)
            guard try db.tableExists("audit") else { return [] }
            return try db.query(
                """
                SELECT \(Self.auditColumns) FROM audit WHERE at >= ? AND (CAST(? AS TEXT) IS NULL OR entry_id = ?)
                ORDER BY at DESC, id DESC
                """, [SQLValue(since ?? Date(timeIntervalSince1970: 0)), SQLValue(entryID), SQLValue(entryID)]
            ).compactMap(Self.audit)
        }
    }

    /// Outbox entries with these statuses, oldest first.
    public func outbox(_ statuses: [OutboxEntry.Status] = [.pending]) throws(LedgerError) -> [OutboxEntry] {
        try reading {
            try db.query(
                "SELECT \(Self.outboxColumns) FROM outbox WHERE status IN (\(Self.marks(statuses.count))) ORDER BY "
                    + "created_at, id",
                statuses.map { .text($0.rawValue) }
            ).map(decodedOutboxEntry)
        }
    }

    /// The last personal alert of story `key` to `tags` (one reader's tag) that went out or may
    /// have, if any.
    public func personalPush(of key: String, tags: String) throws(LedgerError) -> OutboxEntry? {
        try reading {
            try db.query(
                """
                SELECT \(Self.outboxColumns) FROM outbox
                WHERE story_key = ? AND kind = 'personal' AND tags = ?
                  AND status IN ('sent', 'unknown', 'scheduled', 'sending')
                ORDER BY created_at DESC, id DESC LIMIT 1
                """, [.text(key), .text(tags)]
            ).map(decodedOutboxEntry).first
        }
    }

    /// The tags of the readers each story of `keys` went to by name (`publish --user`), if it
    /// went out or may have.
    public func personalRecipients(of keys: [String]) throws(LedgerError) -> [String: [String]] {
        guard !keys.isEmpty else { return [:] }
        return try reading {
            var found: [String: [String]] = [:]
            for chunk in Array(Set(keys)).sorted().chunked(200) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                for row in try db.query(
                    """
                    SELECT story_key, tags FROM outbox WHERE kind = 'personal'
                      AND status IN ('sent', 'unknown', 'scheduled', 'sending') AND story_key IN (\(marks))
                    """, chunk.map { SQLValue.text($0) })
                {
                    if let key = row.text(0), let tags = row.text(1) { found[key, default: []].append(tags) }
                }
            }
            return found
        }
    }

    /// The story's last alert to its readers that went out, may have, or is scheduled (tests and
    /// trials aside), and a scheduled send of it still waiting at the hub.
    public func lastPush(of key: String) throws(LedgerError) -> (last: OutboxEntry?, scheduled: OutboxEntry?) {
        try reading {
            let entries = try db.query(
                """
                SELECT \(Self.outboxColumns) FROM outbox
                WHERE story_key = ? AND kind NOT IN \(OutboxEntry.Kind.notStoryAlertsSQL) AND status IN ('sent', 'unknown', 'scheduled')
                ORDER BY created_at, id
                """, [.text(key)]
            ).map(decodedOutboxEntry)
            return (entries.last, entries.last { $0.status == .scheduled })
        }
    }
}
