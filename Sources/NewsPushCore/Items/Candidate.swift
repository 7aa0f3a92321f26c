import FeedParsing
import Foundation
import NewsPushModel

/// One item of a run, identified: its story key and what the ledger knows about it.
public struct Candidate: Sendable {
    /// The story key.
    public var key: String
    /// The canonical link, which identifies the story when feeds disagree on ids.
    public var linkKey: String?
    /// The feed's name (or title).
    public var feedName: String
    /// The feed's URL as configured.
    public var feedURL: String
    /// The category of its feed when that is a section feed (`category:` in the config).
    public var sectionCategory: NewsCategory?
    /// The item as parsed (in a shared box: the run's stages copy candidates, and a copy of a
    /// candidate shares its item instead of copying a kilobyte of fields).
    public var item: FeedItem {
        get { itemBox.item }
        set { itemBox = ItemBox(item: newValue) }
    }
    private var itemBox: ItemBox
    /// Its category and confidence (after the classify stage).
    public var classification: Classification = .unclassified
    /// What the ledger already knew about this story (by key, else by canonical link); boxed
    /// like the item, so a candidate stays small to copy.
    public var previous: StoryRecord? {
        get { previousBox?.record }
        set { previousBox = newValue.map(RecordBox.init) }
    }
    private var previousBox: RecordBox?
    /// When newspush first saw it (now for new items).
    public var firstSeen: Date
    /// The ledger pruned this story earlier: it is old news even though no record is left.
    public var tombstoned = false
    /// Its feed has never been read before and records a baseline (its `first_run` is not `send`).
    public var inBaselineFeed = false
    /// The language of its feed (`language:`, else the feed's `<language>`, else en).
    public var language = "en"
    /// Its feed's place in the run and its own place in that feed's document.
    public var position = ItemPosition(feed: 0, item: 0)

    /// Whether it has a title or summary a reader can read once cleaned (else nothing would show
    /// on a lock screen, and it is not pushed).
    public var hasHeadline: Bool { AlertCopy.headline(title: item.title, summary: item.summary) != nil }

    /// An item of a run with its key.
    public init(
        key: String, linkKey: String?, feedName: String, feedURL: String, sectionCategory: NewsCategory? = nil,
        item: FeedItem,
        previous: StoryRecord? = nil, firstSeen: Date, tombstoned: Bool = false, inBaselineFeed: Bool = false
    ) {
        self.key = key
        self.linkKey = linkKey
        self.feedName = feedName
        self.feedURL = feedURL
        self.sectionCategory = sectionCategory
        self.itemBox = ItemBox(item: item)
        self.previousBox = previous.map(RecordBox.init)
        self.firstSeen = firstSeen
        self.tombstoned = tombstoned
        self.inBaselineFeed = inBaselineFeed
    }

    /// The date freshness is judged by: published, else updated, else first seen.
    public var effectiveDate: Date { item.published ?? item.updated ?? firstSeen }
}

/// An immutable item shared by the copies of a candidate.
private final class ItemBox: Sendable {
    let item: FeedItem
    init(item: FeedItem) { self.item = item }
}

/// An immutable story record shared by the copies of a candidate.
private final class RecordBox: Sendable {
    let record: StoryRecord
    init(record: StoryRecord) { self.record = record }
}
