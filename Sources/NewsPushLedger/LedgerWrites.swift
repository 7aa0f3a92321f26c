import Foundation
import NewsPushModel

extension Ledger {
    // MARK: Writing

    /// Entries left `sending` by a run that died mid-send: their outcome is unknown and they are
    /// never sent again. Returns them, settled.
    @discardableResult
    public func settleInterruptedSends(at time: Date) throws(LedgerError) -> [OutboxEntry] {
        let interrupted = try outbox([.sending])
        guard !interrupted.isEmpty else { return [] }
        let reason = "the run sending it was interrupted; outcome unknown, not re-sent"
        try record(
            interrupted.map {
                OutboxOutcome(entryID: $0.id, storyKey: $0.storyKey, status: .unknown, at: time, error: reason)
            })
        return interrupted
    }

    /// Scheduled sends whose time has passed were delivered by the hub: they count as sent
    /// from then on (pushed at their scheduled time).
    public func settleScheduledSends(at time: Date) throws(LedgerError) {
        try writing {
            let due = try db.query(
                "SELECT id, story_key, scheduled_at FROM outbox WHERE status = 'scheduled' AND scheduled_at <= ?",
                [SQLValue(time)])
            for row in due {
                guard let id = row.text(0), let key = row.text(1) else { continue }
                try db.run("UPDATE outbox SET status = 'sent', last_attempt = scheduled_at WHERE id = ?", [.text(id)])
                try db.run(
                    "UPDATE stories SET status = 'pushed', pushed_at = ? WHERE key = ? AND status = 'scheduled'",
                    [SQLValue(row.date(2)), .text(key)])
            }
        }
    }

    /// Writes what a run learnt and planned, in one transaction. Many rows per statement, across
    /// feeds: a database server one network hop away costs a round trip per hundreds of rows,
    /// not several per feed.
    public func record(_ run: RunRecord) throws(LedgerError) {
        try writing {
            try upsert(run.feeds)
            var stories: [StoryRecord] = []
            var storyKeys = Set<String>()
            var listings: [FeedListing] = []
            try run.listings.forEach { listing in
                for story in listing.newStories where storyKeys.insert(story.key).inserted { stories.append(story) }
                listings.append(FeedListing(feed: listing.feed, keys: listing.keys, newStories: []))
                // A listing's members are written once its stories are (a few hundred feeds at a time).
                if stories.count >= 100 || listings.count >= 250 {
                    try insert(stories)
                    try list(listings, at: run.at)
                    stories.removeAll(keepingCapacity: true)
                    storyKeys.removeAll(keepingCapacity: true)
                    listings.removeAll(keepingCapacity: true)
                }
            }
            try insert(stories)
            try list(listings, at: run.at)
            for entry in run.outbox { try insert(entry) }
            for hold in run.holds { try insert(hold) }
            for id in run.expired {
                try setOutbox(
                    OutboxOutcome(
                        entryID: id, storyKey: "", status: .expired, at: run.at,
                        error: "no longer fresh (policy.max_age) before the hub took it"))
            }
            for record in run.audit { try insert(record) }
        }
    }

    /// New stories, a hundred to a statement (a story already there stays as it is); a pruned
    /// story that is listed again is known again, as old news.
    private func insert(_ stories: [StoryRecord]) throws {
        for chunk in stories.chunked(100) {
            try db.run(
                """
                INSERT INTO stories (\(Self.storyColumns)) VALUES \(Self.rows(14, chunk.count))
                ON CONFLICT (key) DO NOTHING
                """, chunk.flatMap(Self.values))
            try db.run(
                "DELETE FROM tombstones WHERE key IN (\(Self.marks(chunk.count)))", chunk.map { .text($0.key) })
        }
    }

    /// Each feed's members are the stories its document lists now, each seen at `time`. Only
    /// what changed is written (a feed lists mostly what it listed last time): the members that
    /// left and joined, and `last_seen` where it is more than `seenRefresh` old — writes, not
    /// reads, are what a database server's disk and log pay for.
    private func list(_ listings: [FeedListing], at time: Date) throws {
        guard !listings.isEmpty else { return }
        var members: [String: Set<String>] = [:]
        for chunk in Array(Set(listings.map(\.feed))).chunked(500) {
            let rows = try db.query(
                "SELECT feed, story_key FROM feed_members WHERE feed IN (\(Self.marks(chunk.count)))",
                chunk.map(SQLValue.init))
            for row in rows {
                if let feed = row.text(0), let key = row.text(1) { members[feed, default: []].insert(key) }
            }
        }
        var left: [(feed: String, key: String)] = []
        var joined: [(feed: String, key: String)] = []
        for listing in listings {
            let now = Set(listing.keys)
            let was = members[listing.feed] ?? []
            left += was.subtracting(now).map { (listing.feed, $0) }
            joined += now.subtracting(was).map { (listing.feed, $0) }
            members[listing.feed] = now
        }
        for chunk in left.chunked(250) {
            try db.run(
                "DELETE FROM feed_members WHERE (feed, story_key) IN (VALUES \(Self.rows(2, chunk.count)))",
                chunk.flatMap { [.text($0.feed), .text($0.key)] })
        }
        for chunk in joined.chunked(250) {
            try db.run(
                "INSERT INTO feed_members (feed, story_key) VALUES \(Self.rows(2, chunk.count)) ON CONFLICT "
                    + "(feed, story_key) DO NOTHING",
                chunk.flatMap { [.text($0.feed), .text($0.key)] })
        }
        let seen = Set(listings.flatMap(\.keys))
        for chunk in Array(seen).chunked(500) {
            try db.run(
                "UPDATE stories SET last_seen = ? WHERE last_seen < ? AND key IN (\(Self.marks(chunk.count)))",
                [SQLValue(time), SQLValue(time.addingTimeInterval(-Self.seenRefresh))] + chunk.map(SQLValue.init))
        }
    }

    /// How stale a story's `last_seen` may be before a run listing it writes it again (retention
    /// is counted in days; a run every few minutes need not rewrite every story it lists).
    static let seenRefresh: Double = 600

    /// Records editorial decisions made outside a run (a publish, a correction, a cancel).
    public func recordAudit(_ records: [AuditRecord]) throws(LedgerError) {
        try writing { for record in records { try insert(record) } }
    }

    /// An editor's approval of a held entry: from now on it is a pending push with these
    /// properties (the held ones, or an edit's), and the decisions are on the record. False
    /// when the entry is not held (any more): nothing changes.
    public func approve(_ entryID: String, properties: [String: String], audit: [AuditRecord])
        throws(LedgerError) -> Bool
    {
        try writing(durable: true) {
            let changed = try db.run(
                "UPDATE outbox SET status = 'pending', properties = ? WHERE id = ? AND status = 'held'",
                [.text(Self.encoded(properties)), .text(entryID)])
            guard changed == 1 else { return false }
            try db.run(
                "UPDATE stories SET status = 'pending' WHERE key = (SELECT story_key FROM outbox WHERE id = ? AND kind = "
                    + "'push')", [.text(entryID)])
            for record in audit { try insert(record) }
            return true
        }
    }

    /// Ends a held entry unsent (`rejected` by an editor, or `expired`), with the decision on
    /// the record. False when the entry is not held (any more): nothing changes.
    public func endHold(_ entryID: String, as status: OutboxEntry.Status, audit: AuditRecord) throws(LedgerError)
        -> Bool
    {
        try writing(durable: true) {
            let held = try db.query("SELECT 1 FROM outbox WHERE id = ? AND status = 'held'", [.text(entryID)])
            guard !held.isEmpty else { return false }
            try setOutbox(
                OutboxOutcome(entryID: entryID, storyKey: "", status: status, at: audit.at, error: audit.detail))
            try insert(audit)
            return true
        }
    }

    private func insert(_ hold: ReviewHold) throws {
        try db.run(
            "INSERT INTO review (entry_id, rule, content) VALUES (?, ?, ?) ON CONFLICT (entry_id) DO NOTHING",
            [.text(hold.entryID), .text(hold.rule), .text(hold.content)])
    }

    private func insert(_ record: AuditRecord) throws {
        try db.run(
            "INSERT INTO audit (\(Self.auditColumns)) VALUES (\(Self.marks(9)))",
            [
                .text(record.id), SQLValue(record.at), .text(record.editor), .text(record.action.rawValue),
                SQLValue(record.entryID), SQLValue(record.storyKey), SQLValue(record.category?.rawValue),
                SQLValue(record.title), SQLValue(record.detail),
            ])
    }

    /// Adds one outbox entry (a manual publish) and its story when new.
    public func enqueue(_ entry: OutboxEntry, story: StoryRecord?) throws(LedgerError) {
        try writing(durable: true) {
            if let story {
                try db.run(
                    "INSERT INTO stories (\(Self.storyColumns)) VALUES (\(Self.marks(14))) ON CONFLICT (key) DO NOTHING",
                    Self.values(story))
            }
            try insert(entry)
        }
    }

    /// The intent: these entries are about to be sent. Synced before any request goes out; if
    /// this cannot be written, nothing is sent.
    public func markSending(_ entries: [OutboxEntry], at time: Date) throws(LedgerError) {
        guard !entries.isEmpty else { return }
        try writing(durable: true) {
            for entry in entries {
                try db.run(
                    "UPDATE outbox SET status = 'sending', attempts = attempts + 1, last_attempt = ? WHERE id = ?",
                    [SQLValue(time), .text(entry.id)])
                // An app may report the alert before the hub has even answered: its report starts
                // with the intent (SPEC §11), and takes the acceptance time and audience after.
                if !entry.kind.isTrial {
                    try db.run(
                        "INSERT INTO alert_reports (alert_id, sent_at) VALUES (?, ?) ON CONFLICT (alert_id) DO NOTHING",
                        [.text(entry.id), SQLValue(entry.scheduledAt ?? time)])
                }
                guard entry.kind == .push else { continue }
                try db.run(
                    "UPDATE stories SET status = 'sending', pushed_at = ? WHERE key = ?",
                    [SQLValue(time), .text(entry.storyKey)])
            }
        }
    }

    /// What the hub answered for each entry (or `pending` for entries put back unsent).
    public func record(_ outcomes: [OutboxOutcome]) throws(LedgerError) {
        guard !outcomes.isEmpty else { return }
        try writing(durable: true) {
            for outcome in outcomes { try setOutbox(outcome) }
        }
    }

    private func setOutbox(_ outcome: OutboxOutcome) throws {
        try db.run(
            "UPDATE outbox SET status = ?, http_status = ?, notification_id = COALESCE(?, notification_id), error = "
                + "?, accepted_at = COALESCE(?, accepted_at) WHERE id = ?",
            [
                .text(outcome.status.rawValue), SQLValue(outcome.httpStatus), SQLValue(outcome.notificationId),
                SQLValue(outcome.error), SQLValue(outcome.acceptedAt), .text(outcome.entryID),
            ])
        if let properties = outcome.properties {
            try db.run(
                "UPDATE outbox SET properties = ? WHERE id = ?",
                [.text(Self.encoded(properties)), .text(outcome.entryID)])
        }
        // A story's status follows its first push only: repeats and corrections of a pushed story
        // are pushes of their own and leave it pushed.
        let storyStatus = outcome.status.storyStatus.rawValue
        try db.run(
            """
            UPDATE stories SET status = ?, notification_id = COALESCE(?, notification_id), error = ?,
                pushed_at = CASE WHEN ? IN ('pending', 'expired') THEN NULL ELSE pushed_at END
            WHERE key = (SELECT story_key FROM outbox WHERE id = ? AND kind = 'push')
            """,
            [
                .text(storyStatus), SQLValue(outcome.notificationId), SQLValue(outcome.error), .text(storyStatus),
                .text(outcome.entryID),
            ])
    }

    private func insert(_ entry: OutboxEntry) throws {
        try db.run("INSERT INTO outbox (\(Self.outboxColumns)) VALUES (\(Self.marks(19)))", Self.values(entry))
        guard entry.kind == .push else { return }
        try db.run(
            "UPDATE stories SET status = ?, error = NULL WHERE key = ?",
            [.text(entry.status.storyStatus.rawValue), .text(entry.storyKey)])
    }

    /// Each feed's record, a hundred to a statement (the last record of a URL given twice).
    private func upsert(_ feeds: [FeedRecord]) throws {
        var seen = Set<String>()
        let distinct = feeds.reversed().filter { seen.insert($0.url).inserted }.reversed()
        for chunk in Array(distinct).chunked(100) { try upsertChunk(chunk) }
    }

    private func upsertChunk(_ feeds: ArraySlice<FeedRecord>) throws {
        try db.run(
            """
            INSERT INTO feeds (\(Self.feedColumns)) VALUES \(Self.rows(9, feeds.count))
            ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
                last_fetched = excluded.last_fetched, last_success = excluded.last_success,
                    listed_at = excluded.listed_at,
                retry_after = excluded.retry_after, moved_to = excluded.moved_to, fresh_until = excluded.fresh_until
            """,
            feeds.flatMap { feed -> [SQLValue] in
                [
                    .text(feed.url), SQLValue(feed.validators?.etag), SQLValue(feed.validators?.lastModified),
                    SQLValue(feed.lastFetched), SQLValue(feed.lastSuccess), SQLValue(feed.listedAt),
                    SQLValue(feed.retryAfter), SQLValue(feed.movedTo), SQLValue(feed.freshUntil),
                ]
            })
    }

    /// Records that the scheduled send with this notification id was cancelled at the hub;
    /// false when the ledger holds no such scheduled send.
    public func cancelScheduled(notificationId: String, at time: Date) throws(LedgerError) -> Bool {
        let entries = try reading {
            try db.query(
                "SELECT id, story_key FROM outbox WHERE notification_id = ? AND status = 'scheduled'",
                [.text(notificationId)])
        }
        guard let row = entries.first, let id = row.text(0), let key = row.text(1) else { return false }
        try record([
            OutboxOutcome(
                entryID: id, storyKey: key, status: .cancelled, at: time, notificationId: notificationId,
                error: "scheduled send cancelled (newspush hub cancel)")
        ])
        return true
    }

    /// The latest pushes the hub took (sent or scheduled), newest first, for `hub status --last N`.
    public func latestNotifications(_ count: Int) throws(LedgerError) -> [OutboxEntry] {
        try reading {
            try db.query(
                """
                SELECT \(Self.outboxColumns) FROM outbox
                WHERE status IN ('sent', 'scheduled', 'cancelled') AND notification_id IS NOT NULL
                ORDER BY COALESCE(last_attempt, created_at) DESC, id LIMIT ?
                """, [.integer(Int64(count))]
            ).map(decodedOutboxEntry)
        }
    }
}
