import FeedParsing
import Foundation
import NewsPushModel

/// Where an item stands in a run: its feed's place in the config and its place in that feed's
/// document.
public struct ItemPosition: Hashable, Comparable, Sendable {
    /// The feed's index in the run's feed list.
    public var feed: Int
    /// The item's index in its feed's document.
    public var item: Int

    /// The item `item` of feed `feed`.
    public init(feed: Int, item: Int) {
        self.feed = feed
        self.item = item
    }

    /// Run order: feeds in order, items in document order.
    public static func < (a: ItemPosition, b: ItemPosition) -> Bool {
        (a.feed, a.item) < (b.feed, b.item)
    }
}

/// What a run keeps of one item once its feed is read: what the report, the ledger and the
/// same-story question need of it, and not its summary, content or markup. An item whose
/// decision was settled when its feed was read (seen, a baseline, pruned, held, rejected,
/// scheduled) carries it; the others (`decision == nil`) are decided by the plan.
public struct ListedItem: Sendable, Equatable {
    /// The story key.
    public var key: String
    /// The canonical link.
    public var linkKey: String?
    /// The headline.
    public var title: String?
    /// The link.
    public var link: String?
    /// When its feed says it was published.
    public var published: Date?
    /// When its feed says it was updated.
    public var updated: Date?
    /// When newspush first saw its story.
    public var firstSeen: Date
    /// Its category and confidence.
    public var classification: Classification
    /// The ledger pruned its story earlier.
    public var tombstoned: Bool
    /// Its feed is read for the first time and records a baseline.
    public var inBaselineFeed: Bool
    /// What the ledger knew of its story, as far as same-story decisions need it.
    public var previous: KnownStory?
    /// Its decision when the reading of its feed settled it; nil when the plan decides.
    public var decision: ItemDecision?
    /// The reason beside a settled decision.
    public var reason: String?

    /// What the ledger knew of an item's story: enough to name it as the story another item
    /// repeats, and to decide an item of it.
    public struct KnownStory: Sendable, Equatable {
        /// The story's key.
        public var key: String
        /// Its headline.
        public var title: String?
        /// Where it stands.
        public var status: StoryRecord.Status
        /// Who recorded it first.
        public var origin: StoryRecord.Origin
    }

    /// Whether no run had seen it (and it was not pruned).
    public var isNew: Bool { previous == nil && !tombstoned }

    /// The date freshness and same-story windows are judged by.
    public var effectiveDate: Date { published ?? updated ?? firstSeen }
}

extension ListedItem {
    /// What a run keeps of `candidate`, with the decision (and its reason) when already settled.
    public init(_ candidate: Candidate, decision: ItemDecision?, reason: String?) {
        let item = candidate.item
        self.init(
            key: candidate.key, linkKey: candidate.linkKey, title: item.title, link: item.link,
            published: item.published, updated: item.updated, firstSeen: candidate.firstSeen,
            classification: candidate.classification, tombstoned: candidate.tombstoned,
            inBaselineFeed: candidate.inBaselineFeed,
            previous: candidate.previous.map {
                KnownStory(key: $0.key, title: $0.title, status: $0.status, origin: $0.origin)
            },
            decision: decision, reason: reason)
    }

    /// The story the ledger learns from it (when it is new).
    public func story(feedURL: String, at time: Date) -> StoryRecord {
        StoryRecord(
            key: key, feed: feedURL, title: title, link: link, category: classification.category?.rawValue,
            firstSeen: time, lastSeen: time, published: published, status: .seen)
    }
}

extension Candidate {
    /// A candidate again from what a run kept of it (for the same-story question over the
    /// items of earlier feeds): its headline, link and dates, without its summary.
    public init(_ listed: ListedItem, position: ItemPosition, feedName: String, feedURL: String) {
        var item = FeedItem()
        item.title = listed.title
        item.link = listed.link
        item.published = listed.published
        item.updated = listed.updated
        self.init(
            key: listed.key, linkKey: listed.linkKey, feedName: feedName, feedURL: feedURL, item: item,
            previous: listed.previous.map {
                StoryRecord(
                    key: $0.key, feed: feedURL, title: $0.title, link: nil, category: nil, firstSeen: listed.firstSeen,
                    lastSeen: listed.firstSeen, published: nil, status: $0.status, origin: $0.origin)
            },
            firstSeen: listed.firstSeen, tombstoned: listed.tombstoned, inBaselineFeed: listed.inBaselineFeed)
        self.classification = listed.classification
        self.position = position
    }
}
