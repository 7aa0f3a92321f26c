import Foundation
import NewsPushModel

/// What the ledger knows about the stories of a run's items: the load stage's answer to "which
/// of these keys and links do you know?", handed to the identify stage as a value.
public struct KnownStories: Sendable {
    /// Stories by key.
    public var byKey: [String: StoryRecord]
    /// Stories by canonical link (the first recorded one per link).
    public var byLink: [String: StoryRecord]
    /// Keys of stories that were pruned (old news even though no record is left).
    public var tombstoned: Set<String>

    /// What a ledger knows about some keys and links.
    public init(byKey: [String: StoryRecord] = [:], byLink: [String: StoryRecord] = [:], tombstoned: Set<String> = []) {
        self.byKey = byKey
        self.byLink = byLink
        self.tombstoned = tombstoned
    }
}

/// The identify stage of a run: every item of every feed read gets its story key, and then what
/// the ledger already knows about that story (by key, else by canonical link, or a tombstone).
public enum StoryIdentifier {
    /// One candidate per item of one feed read (the feed at `feedIndex` of the run), in
    /// document order, each with its story key and position. Items of a feed never read before
    /// are marked for a baseline unless its `first_run` (or the policy's) is `send`.
    public static func candidates(
        _ settings: FeedSettings, read: FeedRead, feedIndex: Int, record: FeedRecord?, policy: PolicySettings,
        now: Date
    ) -> [Candidate] {
        guard let feed = read.feed else { return [] }
        let name = settings.name ?? feed.title ?? settings.url
        let baseline = record?.lastSuccess == nil && (settings.firstRun ?? policy.firstRun) == .baseline
        let language = Languages.normalized(settings.language ?? feed.language ?? "en")
        return zip(feed.items, StoryKey.keys(for: feed.items, feedURL: settings.url)).enumerated().map {
            index, pair in
            var candidate = Candidate(
                key: pair.1, linkKey: pair.0.link.flatMap(StoryKey.canonicalLink), feedName: name,
                feedURL: settings.url, sectionCategory: settings.category, item: pair.0, firstSeen: now,
                inBaselineFeed: baseline)
            candidate.language = language
            candidate.position = ItemPosition(feed: feedIndex, item: index)
            return candidate
        }
    }

    /// The keys and canonical links the ledger is asked about for `candidates`.
    public static func lookups(_ candidates: [Candidate]) -> (keys: Set<String>, linkKeys: Set<String>) {
        (Set(candidates.map(\.key)), Set(candidates.compactMap(\.linkKey)))
    }

    /// The candidates with what the ledger knows of their stories.
    public static func identify(_ candidates: [Candidate], known: KnownStories, now: Date) -> [Candidate] {
        candidates.map { candidate in
            var candidate = candidate
            let previous = known.byKey[candidate.key] ?? candidate.linkKey.flatMap { known.byLink[$0] }
            candidate.previous = previous
            candidate.firstSeen = previous?.firstSeen ?? now
            candidate.tombstoned = previous == nil && known.tombstoned.contains(candidate.key)
            return candidate
        }
    }
}
