import Foundation
import NewsPushModel

/// Which pushes the desk's history shows: each filter applies when set.
public struct PushHistoryFilter: Sendable, Equatable {
    /// Only this category's.
    public var category: NewsCategory?
    /// Only pushes in this status.
    public var status: OutboxEntry.Status?
    /// Only pushes planned at or after this time.
    public var since: Date?
    /// At most this many, newest first.
    public var limit: Int

    /// A filter (nothing set: the newest `limit` pushes).
    public init(category: NewsCategory? = nil, status: OutboxEntry.Status? = nil, since: Date? = nil, limit: Int = 200)
    {
        self.category = category
        self.status = status
        self.since = since
        self.limit = limit
    }
}

extension Ledger {
    // MARK: What the desk shows

    /// The pushes on record (held ones included), newest first, as `filter` selects.
    public func pushHistory(_ filter: PushHistoryFilter) throws(LedgerError) -> [OutboxEntry] {
        try reading {
            // Ids are ordered by creation, so the primary key's index walks them newest first.
            try db.query(
                """
                SELECT \(Self.outboxColumns) FROM outbox
                WHERE created_at >= ? AND (CAST(? AS TEXT) IS NULL OR category = ?)
                  AND (CAST(? AS TEXT) IS NULL OR status = ?)
                ORDER BY id DESC LIMIT ?
                """,
                [
                    SQLValue(filter.since ?? Date(timeIntervalSince1970: 0)), SQLValue(filter.category?.rawValue),
                    SQLValue(filter.category?.rawValue), SQLValue(filter.status?.rawValue),
                    SQLValue(filter.status?.rawValue), .integer(Int64(filter.limit)),
                ]
            ).map(decodedOutboxEntry)
        }
    }

    /// The decisions on record about these entries, newest first.
    public func audit(entryIDs: some Collection<String>) throws(LedgerError) -> [AuditRecord] {
        try reading {
            guard try db.tableExists("audit") else { return [] }
            var records: [AuditRecord] = []
            for chunk in Array(entryIDs).chunked(500) {
                records += try db.query(
                    "SELECT \(Self.auditColumns) FROM audit WHERE entry_id IN (\(Self.marks(chunk.count)))",
                    chunk.map(SQLValue.init)
                ).compactMap(Self.audit)
            }
            return records.sorted { ($0.at, $0.id) > ($1.at, $1.id) }
        }
    }

    /// The feeds that listed each of these stories (a story found under one key in several feeds).
    public func feedsListing(_ storyKeys: some Collection<String>) throws(LedgerError) -> [String: [String]] {
        try reading {
            var listing: [String: [String]] = [:]
            for chunk in Array(storyKeys).chunked(500) {
                for row in try db.query(
                    "SELECT story_key, feed FROM feed_members WHERE story_key IN (\(Self.marks(chunk.count)))",
                    chunk.map(SQLValue.init))
                {
                    guard let key = row.text(0), let feed = row.text(1) else { continue }
                    listing[key, default: []].append(feed)
                }
            }
            return listing.mapValues { $0.sorted() }
        }
    }

    /// A mark that changes whenever a push or a decision is recorded: the desk's pages refresh
    /// when it does.
    public func changeMark() throws(LedgerError) -> String {
        try reading {
            let outbox = try db.query(
                "SELECT COUNT(*), MAX(COALESCE(last_attempt, created_at)), MAX(id) FROM outbox", []
            ).first
            let statuses = try db.query("SELECT status, COUNT(*) FROM outbox GROUP BY status ORDER BY status", [])
            let audit =
                try db.tableExists("audit") ? try db.query("SELECT COUNT(*), MAX(at) FROM audit", []).first : nil
            let parts =
                [outbox?.text(0), outbox?.text(1), outbox?.text(2), audit?.text(0), audit?.text(1)].map { $0 ?? "" }
                + statuses.map { "\($0.text(0) ?? ""):\($0.text(1) ?? "")" }
            return parts.joined(separator: "/")
        }
    }
}
