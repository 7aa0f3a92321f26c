import Foundation
import NewsPushModel

extension RunRecord {
    /// The record stage of a run: what the ledger learns from this run's feeds and items, and
    /// the outbox entries the plan made. Written before anything is sent, so a crash never turns
    /// into a second push. The items are read back from `log` feed by feed as the ledger writes
    /// them; `open` has the plan's candidates by position (their category is the final one).
    public static func make(
        feeds: [FeedTally], records: [String: FeedRecord], log: ItemLog, open: [ItemPosition: Candidate],
        plan: RunPlan, at time: Date
    ) -> RunRecord {
        var record = RunRecord(at: time)
        for feed in feeds {
            if let updated = updated(records[feed.settings.url], url: feed.settings.url, after: feed.read, at: time) {
                record.feeds.append(updated)
            }
        }
        let read = feeds.enumerated().filter { $0.element.read.status == .ok }.map {
            ($0.offset, $0.element.settings.url)
        }
        record.listings = FeedListings { body in
            for (index, url) in read {
                let items = log.items(ofFeed: index)
                // A chunk that could not be read back stops the record: nothing is written as if
                // that feed had listed nothing.
                if let failure = log.readFailure { throw ItemLogError(reason: failure) }
                try body(listing(items, feed: index, url: url, open: open, at: time))
            }
        }
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

    /// One feed's listing: every key, and a story for the first item of each key the ledger did
    /// not know (a pruned one is known again, as old news).
    static func listing(
        _ items: [ListedItem], feed: Int, url: String, open: [ItemPosition: Candidate], at time: Date
    ) -> FeedListing {
        var seen = Set<String>()
        var stories: [StoryRecord] = []
        for (index, item) in items.enumerated() where item.previous == nil && seen.insert(item.key).inserted {
            var story = item.story(feedURL: url, at: time)
            if let candidate = open[ItemPosition(feed: feed, item: index)] {
                story.category = candidate.classification.category?.rawValue
            }
            stories.append(story)
        }
        return FeedListing(feed: url, keys: items.map(\.key), newStories: stories)
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
        if fetched.status != .error {
            // The server's word on when to ask again, kept so a watcher that takes the feed over
            // (or starts again) honours it too.
            let ttl = read.feed?.ttl.map { time.addingTimeInterval(min(Double($0) * 60, HTTPFreshness.longest)) }
            feed.freshUntil = [fetched.freshUntil, ttl].compactMap { $0 }.max()
        }
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

/// The run's item log could not be read back: the run fails with the reason.
public struct ItemLogError: Error, CustomStringConvertible, Sendable {
    /// What could not be read.
    public var reason: String
    /// The reason.
    public var description: String { reason }
}
