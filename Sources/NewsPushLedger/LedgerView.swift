import Foundation
import NewsPushModel

/// The whole ledger read at once, for `state show`, `state export` and `state check`.
public struct LedgerView: Sendable {
    /// The ledger's file.
    public var path: String
    /// Newest first, each with the time a feed last listed it.
    public var stories: [(record: StoryRecord, lastListed: Date)]
    /// Every feed.
    public var feeds: [FeedRecord]
    /// Every outbox entry, oldest first.
    public var outbox: [OutboxEntry]
    /// Every tombstone.
    public var tombstones: [String: Date]
    /// Every editorial decision, newest first.
    public var audit: [AuditRecord] = []
    /// What the apps reported of each alert (SPEC §11).
    public var reports = ReportTables()

    /// The whole ledger, read at once.
    public static func read(_ ledger: Ledger) throws(LedgerError) -> LedgerView {
        LedgerView(
            path: ledger.path, stories: try ledger.allStories(), feeds: try ledger.allFeeds(),
            outbox: try ledger.outbox(OutboxEntry.Status.allCases), tombstones: try ledger.tombstones(),
            audit: try ledger.audit(), reports: try ledger.reportTables())
    }

    /// "12 stories (3 pushed, 9 seen), 4 feeds, 2 tombstones, 1 push waiting in the outbox"
    public var summary: String {
        var counts: [StoryRecord.Status: Int] = [:]
        for story in stories { counts[story.record.status, default: 0] += 1 }
        let byStatus = counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }
            .joined(separator: ", ")
        let waiting = outbox.filter { $0.status == .pending }.count
        return
            "\(stories.count) stories (\(byStatus.isEmpty ? "none" : byStatus)), \(feeds.count) feeds, "
            + "\(tombstones.count) tombstones, "
            + "\(waiting) push\(waiting == 1 ? "" : "es") waiting in the outbox"
    }

    /// One line per story, newest first: status, category, key, title, when it was pushed, and its
    /// latest push's outbox status with the reason it failed.
    public func text() -> String {
        let latest = Dictionary(
            outbox.filter { !$0.kind.isTrial }.map { ($0.storyKey, $0) }, uniquingKeysWith: { _, newer in newer })
        var lines = ["\(path): \(summary)"]
        for (record, _) in stories {
            var line =
                "\(record.status.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) "
                + "\(record.category ?? "-") \(record.key)  \(record.title ?? "")"
            if let pushedAt = record.pushedAt { line += " pushed \(Timestamp.format(pushedAt))" }
            if let push = latest[record.key] {
                line +=
                    "  [outbox: \(push.kind == .push ? "" : "\(push.kind.rawValue) ")\(push.status.rawValue), "
                    + "\(push.attempts) attempt\(push.attempts == 1 ? "" : "s")"
                if push.status == .pending { line += ", fresh until \(Timestamp.format(push.freshUntil))" }
                line += "]"
            }
            if let error = record.error ?? latest[record.key]?.error { line += "  reason: \(error)" }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// The ledger as one JSON document: stories (`items`, keyed by story key), feeds, the
    /// outbox and tombstones.
    public func json() -> String {
        func date(_ d: Date?) -> Any { d.map(Timestamp.format) ?? NSNull() }
        func text(_ s: String?) -> Any { s ?? NSNull() }
        let latest = Dictionary(
            outbox.filter { !$0.kind.isTrial }.map { ($0.storyKey, $0) }, uniquingKeysWith: { _, newer in newer })
        var items: [String: Any] = [:]
        for (record, lastListed) in stories {
            items[record.key] =
                [
                    "status": record.status.rawValue, "feed": record.feed, "title": text(record.title),
                    "link": text(record.link),
                    "category": text(record.category), "first_seen": date(record.firstSeen),
                    "last_seen": date(lastListed),
                    "published": date(record.published), "pushed_at": date(record.pushedAt),
                    "notification_id": text(record.notificationId),
                    "error": text(record.error), "origin": record.origin.rawValue,
                    "outbox_status": text(latest[record.key]?.status.rawValue),
                ] as [String: Any]
        }
        var feedObjects: [String: Any] = [:]
        for feed in feeds {
            feedObjects[feed.url] =
                [
                    "etag": text(feed.validators?.etag), "last_modified": text(feed.validators?.lastModified),
                    "last_fetched": date(feed.lastFetched), "last_success": date(feed.lastSuccess),
                    "listed_at": date(feed.listedAt),
                    "retry_after": date(feed.retryAfter), "moved_to": text(feed.movedTo),
                    "fresh_until": date(feed.freshUntil),
                ] as [String: Any]
        }
        let entries: [[String: Any]] = outbox.map { entry in
            [
                "id": entry.id, "story_key": entry.storyKey, "kind": entry.kind.rawValue,
                "origin": entry.origin.rawValue,
                "category": entry.category.rawValue, "format": entry.format.rawValue, "tags": entry.tags,
                "properties": entry.properties,
                "created_at": date(entry.createdAt), "fresh_until": date(entry.freshUntil),
                "status": entry.status.rawValue,
                "attempts": entry.attempts, "last_attempt": date(entry.lastAttempt),
                "http_status": entry.httpStatus as Any? ?? NSNull(),
                "notification_id": text(entry.notificationId), "error": text(entry.error),
                "accepted_at": date(entry.acceptedAt),
            ]
        }
        let document: [String: Any] = [
            "ledger": path, "schema_version": Ledger.schemaVersion, "items": items, "feeds": feedObjects,
            "outbox": entries,
            "tombstones": tombstones.mapValues { Timestamp.format($0) },
            "audit": audit.map(Self.auditObject),
        ].merging(reports.json) { first, _ in first }
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// One editorial decision as `state export` and `review history --format json` write it.
    public static func auditObject(_ record: AuditRecord) -> [String: Any] {
        func text(_ value: String?) -> Any { value ?? NSNull() }
        return [
            "id": record.id, "at": Timestamp.format(record.at), "editor": record.editor,
            "action": record.action.rawValue, "entry_id": text(record.entryID), "story_key": text(record.storyKey),
            "category": text(record.category?.rawValue), "title": text(record.title), "detail": text(record.detail),
        ]
    }
}
