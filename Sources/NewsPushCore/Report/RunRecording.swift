import Foundation
import NewsPushModel

extension RunRecord {
    /// The record stage of a run: what the ledger learns from this run's feeds and items, and
    /// the outbox entries the plan made. Written before anything is sent, so a crash never turns
    /// into a second push.
    public static func make(
        reads: [(settings: FeedSettings, read: FeedRead)], records: [String: FeedRecord],
        candidates: [Candidate], plan: RunPlan, at time: Date
    ) -> RunRecord {
        var record = RunRecord(at: time)
        for (settings, read) in reads {
            if let feed = updated(records[settings.url], url: settings.url, after: read, at: time) {
                record.feeds.append(feed)
            }
        }
        var seen = Set<String>()
        for candidate in candidates where candidate.previous == nil && seen.insert(candidate.key).inserted {
            let item = candidate.item
            record.newStories.append(
                StoryRecord(
                    key: candidate.key, feed: candidate.feedURL, title: item.title, link: item.link,
                    category: candidate.classification.category?.rawValue, firstSeen: time, lastSeen: time,
                    published: item.published,
                    status: .seen))
        }
        let readFeeds = Set(reads.filter { $0.read.status == .ok }.map(\.settings.url))
        for candidate in candidates where readFeeds.contains(candidate.feedURL) {
            record.listings[candidate.feedURL, default: []].append(candidate.key)
        }
        for url in readFeeds where record.listings[url] == nil { record.listings[url] = [] }
        record.outbox = plan.newEntries + plan.newHolds
        record.expired = plan.expired.map(\.id)
        record.holds = plan.newHolds.compactMap { entry in
            plan.holdDetails[entry.id].map {
                ReviewHold(entryID: entry.id, rule: $0.rule.name, content: json($0.content))
            }
        }
        record.audit =
            plan.newHolds.map { entry in
                AuditRecord(
                    at: time, editor: AuditRecord.runEditor, action: .held, entryID: entry.id, storyKey: entry.storyKey,
                    category: entry.category, title: entry.properties["title"],
                    detail: plan.holdDetails[entry.id]?.rule.name)
            }
            + plan.expired.filter { $0.status == .held }.map { entry in
                AuditRecord(
                    at: time, editor: AuditRecord.runEditor, action: .expired, entryID: entry.id,
                    storyKey: entry.storyKey, category: entry.category, title: entry.properties["title"],
                    detail: "no editor decided before it was no longer fresh (policy.max_age)")
            }
        return record
    }

    /// A push's content as the ledger keeps it for an edited approval.
    static func json(_ content: PushContent) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(content)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// A feed's record after this run's fetch; nil when the feed was not fetched (paused).
    static func updated(_ previous: FeedRecord?, url: String, after read: FeedRead, at time: Date) -> FeedRecord? {
        let fetched = read.fetched
        if fetched.paused { return nil }
        var feed = previous ?? FeedRecord(url: url)
        feed.movedTo = fetched.movedTo
        feed.retryAfter = fetched.retryAfter
        // Its last full response stays its list of stories until the next one: they are alive.
        feed.listedAt = time
        switch read.status {
        case .ok:
            feed.validators = fetched.validators
            feed.lastFetched = time
            feed.lastSuccess = time
        case .notModified:
            if let validators = fetched.validators { feed.validators = validators }
            feed.lastFetched = time
        case .error:
            if fetched.status == .ok {
                // Fetched but not readable: without validators the next run reads it in full again.
                feed.validators = nil
                feed.lastFetched = time
            }
        }
        return feed
    }
}
