import Foundation

/// The identify stage of a run: every item of every feed read gets its story key, and what the
/// ledger already knows about that story (by key, else by canonical link, or a tombstone).
public enum StoryIdentifier {
    /// One candidate per item, feeds in order, items in document order. Items of a feed never
    /// read before are marked for a baseline unless its `first_run` (or the policy's) is `send`.
    public static func identify(_ reads: [(settings: FeedSettings, read: FeedRead)], records: [String: FeedRecord],
                                policy: PolicySettings, ledger: Ledger, now: Date) throws(LedgerError) -> [Candidate] {
        var candidates: [Candidate] = []
        for (settings, read) in reads {
            guard let feed = read.feed else { continue }
            let name = settings.name ?? feed.title ?? settings.url
            let baseline = records[settings.url]?.lastSuccess == nil && (settings.firstRun ?? policy.firstRun) == .baseline
            let language = Languages.normalized(settings.language ?? feed.language ?? "en")
            for (item, key) in zip(feed.items, StoryKey.keys(for: feed.items, feedURL: settings.url)) {
                var candidate = Candidate(key: key, linkKey: item.link.flatMap(StoryKey.canonicalLink), feedName: name,
                                          feedURL: settings.url, sectionCategory: settings.category, item: item, firstSeen: now,
                                          inBaselineFeed: baseline)
                candidate.language = language
                candidates.append(candidate)
            }
        }
        let byKey = try ledger.stories(keys: Set(candidates.map(\.key)))
        let byLink = try ledger.stories(linkKeys: Set(candidates.compactMap(\.linkKey)))
        let tombstoned = try ledger.tombstoned(Set(candidates.map(\.key)).subtracting(byKey.keys))
        for index in candidates.indices {
            let candidate = candidates[index]
            let previous = byKey[candidate.key] ?? candidate.linkKey.flatMap { byLink[$0] }
            candidates[index].previous = previous
            candidates[index].firstSeen = previous?.firstSeen ?? now
            candidates[index].tombstoned = previous == nil && tombstoned.contains(candidate.key)
        }
        return candidates
    }
}
