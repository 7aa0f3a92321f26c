import Foundation
import NewsPushModel

extension Ledger {
    // MARK: Rows

    static let feedColumns =
        "url, etag, last_modified, last_fetched, last_success, listed_at, retry_after, moved_to, fresh_until"
    static let storyColumns =
        "key, feed, title, link, link_key, category, first_seen, last_seen, published, status, pushed_at, "
        + "notification_id, error, origin"
    static let auditColumns = "id, at, editor, action, entry_id, story_key, category, title, detail"
    static let outboxColumns =
        "id, story_key, kind, origin, category, format, tags, properties, created_at, fresh_until, status, "
        + "attempts, last_attempt, http_status, notification_id, error, expires_after, scheduled_at, accepted_at"

    static func marks(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ", ") }

    /// `count` rows of `columns` placeholders each, for a multi-row `VALUES`.
    static func rows(_ columns: Int, _ count: Int) -> String {
        Array(repeating: "(\(marks(columns)))", count: count).joined(separator: ", ")
    }

    static func feed(_ row: SQLRow) -> FeedRecord {
        let etag = row.text(1), modified = row.text(2)
        return FeedRecord(
            url: row.text(0) ?? "",
            validators: etag == nil && modified == nil
                ? nil : ConditionalGetValidators(etag: etag, lastModified: modified),
            lastFetched: row.date(3), lastSuccess: row.date(4), listedAt: row.date(5), retryAfter: row.date(6),
            movedTo: row.text(7), freshUntil: row.values.count > 8 ? row.date(8) : nil)
    }

    static func story(_ row: SQLRow) -> StoryRecord {
        StoryRecord(
            key: row.text(0) ?? "", feed: row.text(1) ?? "", title: row.text(2), link: row.text(3),
            category: row.text(5),
            firstSeen: row.date(6) ?? Date(timeIntervalSince1970: 0),
            lastSeen: row.date(7) ?? Date(timeIntervalSince1970: 0),
            published: row.date(8), status: row.text(9).flatMap(StoryRecord.Status.init(rawValue:)) ?? .seen,
            pushedAt: row.date(10), notificationId: row.text(11), error: row.text(12),
            origin: row.text(13).flatMap(StoryRecord.Origin.init(rawValue:)) ?? .run)
    }

    /// The values of `storyColumns`.
    static func values(_ s: StoryRecord) -> [SQLValue] {
        [
            .text(s.key), .text(s.feed), SQLValue(s.title), SQLValue(s.link), SQLValue(s.linkKey), SQLValue(s.category),
            SQLValue(s.firstSeen), SQLValue(s.lastSeen), SQLValue(s.published), .text(s.status.rawValue),
            SQLValue(s.pushedAt),
            SQLValue(s.notificationId), SQLValue(s.error), .text(s.origin.rawValue),
        ]
    }

    static func outboxEntry(_ row: SQLRow) -> OutboxEntry? {
        guard let id = row.text(0), let storyKey = row.text(1),
            let category = row.text(4).flatMap(NewsCategory.init(rawValue:)),
            let format = row.text(5).flatMap(PushFormat.init(rawValue:)), let created = row.date(8),
            let fresh = row.date(9),
            let status = row.text(10).flatMap(OutboxEntry.Status.init(rawValue:))
        else { return nil }
        // Properties that do not decode make the row unreadable (a push without its text must
        // never go out, nor vanish: `decodedOutbox` and `state check` say so).
        var properties: [String: String] = [:]
        if let text = row.text(7) {
            guard let decoded = try? JSONDecoder().decode([String: String].self, from: Data(text.utf8)) else {
                return nil
            }
            properties = decoded
        }
        return OutboxEntry(
            id: id, storyKey: storyKey, kind: row.text(2).flatMap(OutboxEntry.Kind.init(rawValue:)) ?? .push,
            origin: row.text(3).flatMap(StoryRecord.Origin.init(rawValue:)) ?? .run, category: category, format: format,
            tags: row.text(6) ?? "", properties: properties, createdAt: created, freshUntil: fresh, status: status,
            attempts: row.int(11) ?? 0, lastAttempt: row.date(12), httpStatus: row.int(13),
            notificationId: row.text(14),
            error: row.text(15), expiresAfter: Double(row.int(16) ?? 3600), scheduledAt: row.date(17),
            acceptedAt: row.date(18))
    }

    /// An outbox entry's properties as the ledger keeps them (a JSON object, keys sorted).
    static func encoded(_ properties: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(properties)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    static func values(_ e: OutboxEntry) -> [SQLValue] {
        let properties = encoded(e.properties)
        return [
            .text(e.id), .text(e.storyKey), .text(e.kind.rawValue), .text(e.origin.rawValue),
            .text(e.category.rawValue),
            .text(e.format.rawValue), .text(e.tags), .text(properties), SQLValue(e.createdAt), SQLValue(e.freshUntil),
            .text(e.status.rawValue), .integer(Int64(e.attempts)), SQLValue(e.lastAttempt), SQLValue(e.httpStatus),
            SQLValue(e.notificationId), SQLValue(e.error), .integer(Int64(e.expiresAfter.rounded())),
            SQLValue(e.scheduledAt), SQLValue(e.acceptedAt),
        ]
    }

    static func audit(_ row: SQLRow) -> AuditRecord? {
        guard let id = row.text(0), let at = row.date(1), let editor = row.text(2),
            let action = row.text(3).flatMap(AuditRecord.Action.init(rawValue:))
        else { return nil }
        return AuditRecord(
            id: id, at: at, editor: editor, action: action, entryID: row.text(4), storyKey: row.text(5),
            category: row.text(6).flatMap(NewsCategory.init(rawValue:)), title: row.text(7), detail: row.text(8))
    }
}
