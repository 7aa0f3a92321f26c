import Foundation
import NewsPushModel

/// The story an item was found to repeat, and where that story was met.
public struct SameStory: Sendable, Equatable {
    /// Where the story was met.
    public enum Place: String, Sendable {
        case thisRun = "this run"
        case earlierRun = "an earlier run"
        case publish = "a publish"
    }

    /// The story's key.
    public var key: String
    /// The story's headline.
    public var title: String?
    /// Where it was met.
    public var place: Place
    /// Whether an editor rejected that story: a decision about the story, whichever feed lists
    /// a copy of it.
    public var rejected = false
}

/// What newspush already knows about an item's story.
public enum StoryMatch: Sendable, Equatable {
    /// A story nobody has handled: the policy decides.
    case new
    /// The ledger knows it (by key or canonical link).
    case known(StoryRecord)
    /// The ledger pruned it earlier: old news.
    case tombstoned
    /// The same story as another item of this run with stronger evidence, or as a story pushed
    /// (or waiting to be) in an earlier run or by a publish.
    case sameStory(SameStory)
}

/// All same-story logic of a run: items that are one story (same key, same canonical link, or
/// near-identical titles dated within 36 hours) are handled once, for the item with the
/// strongest evidence; a new copy of a story the ledger knows, or of one pushed in the last
/// 36 hours, is that story.
public enum StoryMatcher {
    /// One match per candidate, in order. `recentPushes` are the ledger's stories pushed (or
    /// waiting in the outbox, held or rejected by an editor) in the last 36 hours.
    public static func match(_ candidates: [Candidate], recentPushes: [StoryRecord]) -> [StoryMatch] {
        let recent = recentPushes.compactMap { record -> RecentPush? in
            guard let title = record.title else { return nil }
            let print = TitleFingerprint(title)
            return print.isComparable ? (record, print, record.published ?? record.pushedAt ?? record.firstSeen) : nil
        }
        var (groups, recentMatch) = cluster(candidates, recent: recent)
        var matches = candidates.map { candidate -> StoryMatch in
            if candidate.tombstoned { return .tombstoned }
            if let previous = candidate.previous { return .known(previous) }
            return .new
        }
        for cluster in groups.clusters() {
            decide(cluster, candidates: candidates, recent: recent, recentMatch: recentMatch, matches: &matches)
        }
        return matches
    }

    /// A story pushed recently: its record, its title's fingerprint, and its date.
    private typealias RecentPush = (record: StoryRecord, print: TitleFingerprint, date: Date)

    /// The candidates grouped into stories (same key, same canonical link, or near-identical
    /// titles within the window), and for each candidate the recent push its title repeats.
    private static func cluster(_ candidates: [Candidate], recent: [RecentPush]) -> (UnionFind, [Int: Int]) {
        let fingerprints = candidates.map { $0.item.title.map(TitleFingerprint.init) }
        let index = SimilarTitleIndex(fingerprints + recent.map(\.print))
        var groups = UnionFind(count: candidates.count)
        var byKey: [String: Int] = [:]
        var byLink: [String: Int] = [:]
        var recentMatch: [Int: Int] = [:]
        for (i, candidate) in candidates.enumerated() {
            if let other = byKey[candidate.key] { groups.union(other, i) } else { byKey[candidate.key] = i }
            if let link = candidate.linkKey {
                if let other = byLink[link] { groups.union(other, i) } else { byLink[link] = i }
            }
            guard let print = fingerprints[i], print.isComparable else { continue }
            for j in index.similar(to: i) {
                if j < candidates.count {
                    guard j < i, groups.find(j) != groups.find(i),
                        abs(candidates[j].effectiveDate.timeIntervalSince(candidate.effectiveDate))
                            <= TitleFingerprint.window,
                        fingerprints[j]?.matches(print) == true
                    else { continue }
                    groups.union(j, i)
                } else if recentMatch[i] == nil {
                    let other = recent[j - candidates.count]
                    if abs(other.date.timeIntervalSince(candidate.effectiveDate)) <= TitleFingerprint.window,
                        other.print.matches(print)
                    {
                        recentMatch[i] = j - candidates.count
                    }
                }
            }
        }
        return (groups, recentMatch)
    }

    /// The matches of one cluster: copies of a story handled before are that story; a copy of a
    /// recent push is that push; otherwise the strongest evidence wins (highest confidence, then
    /// the earliest listed item) and the rest are the same story as it.
    private static func decide(
        _ cluster: [Int], candidates: [Candidate], recent: [RecentPush], recentMatch: [Int: Int],
        matches: inout [StoryMatch]
    ) {
        if let known = cluster.first(where: { matches[$0] != .new }) {
            let record = candidates[known].previous
            let same = SameStory(
                key: record?.key ?? candidates[known].key, title: record?.title ?? candidates[known].item.title,
                place: record?.origin == .publish ? .publish : .earlierRun, rejected: record?.status == .rejected)
            for member in cluster where matches[member] == .new { matches[member] = .sameStory(same) }
        } else if let r = cluster.lazy.compactMap({ recentMatch[$0] }).first {
            // A copy of a story pushed in the last 36 hours, under another key and link.
            let record = recent[r].record
            let same = SameStory(
                key: record.key, title: record.title, place: record.origin == .publish ? .publish : .earlierRun,
                rejected: record.status == .rejected)
            for member in cluster { matches[member] = .sameStory(same) }
        } else if cluster.count > 1,
            let best = cluster.max(by: { a, b in
                let ca = candidates[a].classification.confidence, cb = candidates[b].classification.confidence
                return ca != cb ? ca < cb : a > b
            })
        {
            let same = SameStory(key: candidates[best].key, title: candidates[best].item.title, place: .thisRun)
            for member in cluster where member != best { matches[member] = .sameStory(same) }
        }
    }
}

extension StoryMatcher {
    /// The items a run settled when their feeds were read (kept in `log`) that are one story
    /// with any of `open`, directly or through one another: with `open`, they are what `match`
    /// needs to answer for the open items exactly as over every item of the run (a story's
    /// first known copy, its strongest evidence). Walks the log until a walk adds nothing
    /// (once when nothing is in a story with an open item); `feeds`: each feed's name and URL.
    public static func neighbours(of open: [Candidate], in log: ItemLog, feeds: [(name: String, url: String)])
        -> [Candidate]
    {
        guard !open.isEmpty else { return [] }
        var hood = StoryNeighbourhood()
        for candidate in open {
            hood.add(
                key: candidate.key, linkKey: candidate.linkKey, title: candidate.item.title,
                date: candidate.effectiveDate)
        }
        var pulled: [ItemPosition: Candidate] = [:]
        var grew = true
        while grew {
            grew = false
            for feed in 0..<log.feedCount {
                for (index, item) in log.items(ofFeed: feed).enumerated() where item.decision != nil {
                    let position = ItemPosition(feed: feed, item: index)
                    guard pulled[position] == nil,
                        hood.touches(key: item.key, linkKey: item.linkKey, title: item.title, date: item.effectiveDate)
                    else { continue }
                    pulled[position] = Candidate(
                        item, position: position, feedName: feeds[feed].name, feedURL: feeds[feed].url)
                    hood.add(key: item.key, linkKey: item.linkKey, title: item.title, date: item.effectiveDate)
                    grew = true
                }
            }
        }
        return pulled.values.sorted { $0.position < $1.position }
    }
}

/// The items known to be in a story with a run's open items: their keys, links and titles,
/// asked whether another item joins them (the same key, link, or a near-identical title within
/// the window: `StoryMatcher`'s rule). Every word pair of a member's title is indexed, so the
/// answer is exact for any item asked.
struct StoryNeighbourhood {
    private var keys = Set<String>()
    private var links = Set<String>()
    private var prints: [(print: TitleFingerprint, date: Date)] = []
    private var postings: [UInt64: [Int]] = [:]
    private var earliest = Date.distantFuture
    private var latest = Date.distantPast

    mutating func add(key: String, linkKey: String?, title: String?, date: Date) {
        keys.insert(key)
        if let linkKey { links.insert(linkKey) }
        guard let title else { return }
        let print = TitleFingerprint(title)
        guard print.isComparable else { return }
        for token in print.numberedShingles { postings[token, default: []].append(prints.count) }
        prints.append((print, date))
        earliest = min(earliest, date)
        latest = max(latest, date)
    }

    func touches(key: String, linkKey: String?, title: String?, date: Date) -> Bool {
        if keys.contains(key) { return true }
        if let linkKey, links.contains(linkKey) { return true }
        // Titles are compared only within the window of some member's date.
        guard let title, date >= earliest.addingTimeInterval(-TitleFingerprint.window),
            date <= latest.addingTimeInterval(TitleFingerprint.window)
        else { return false }
        let print = TitleFingerprint(title)
        guard print.isComparable else { return false }
        var tried = Set<Int>()
        for token in print.numberedShingles {
            for member in postings[token] ?? [] where tried.insert(member).inserted {
                let other = prints[member]
                if abs(other.date.timeIntervalSince(date)) <= TitleFingerprint.window, other.print.matches(print) {
                    return true
                }
            }
        }
        return false
    }

}

extension TitleFingerprint {
    /// The title's word pairs, each hashed with the title's numbers: titles that are one story
    /// have the same numbers, so only titles with the same ones share a token (what the run's
    /// title indexes key on).
    var numberedShingles: [UInt64] {
        var numbersHash: UInt64 = 0x9E37_79B9_7F4A_7C15
        for number in numbers {
            numbersHash = (numbersHash ^ TitleFingerprint.hash(number, "")) &* 0x0000_0100_0000_01B3
        }
        return shingles.map { $0 ^ numbersHash }
    }
}

/// Finds titles that may be near-identical without comparing every pair (which took 10 s for
/// 24,000 items whose titles differ only by a number). Two ideas, both exact for the matching
/// rule: titles that are one story have the same numbers, so each shingle is indexed together
/// with the title's numbers; and two sets with Jaccard similarity ≥ t share at least one of
/// their rarest |s| − ⌈t·|s|⌉ + 1 shingles (prefix filtering), so only those are indexed.
struct SimilarTitleIndex {
    private var postings: [UInt64: [Int]] = [:]
    private var prefixes: [[UInt64]] = []

    init(_ fingerprints: [TitleFingerprint?]) {
        var tokens: [[UInt64]] = []
        tokens.reserveCapacity(fingerprints.count)
        var frequency: [UInt64: Int] = [:]
        for print in fingerprints {
            guard let print, print.isComparable else {
                tokens.append([])
                continue
            }
            let own = print.numberedShingles
            for token in own { frequency[token, default: 0] += 1 }
            tokens.append(own)
        }
        let t = TitleFingerprint.threshold
        for (i, own) in tokens.enumerated() {
            // Rarest first (ties by value, so every title orders the same shingles the same way).
            let ordered = own.map { (frequency[$0, default: 0], $0) }.sorted { $0 < $1 }
            let length = ordered.count - Int((t * Double(ordered.count)).rounded(.up)) + 1
            let prefix = ordered.prefix(max(0, length)).map(\.1)
            prefixes.append(prefix)
            for token in prefix { postings[token, default: []].append(i) }
        }
    }

    /// The other entries sharing a prefix shingle with entry `i`, each once, in order.
    func similar(to i: Int) -> [Int] {
        var found: [Int] = []
        for token in prefixes[i] {
            for j in postings[token] ?? [] where j != i { found.append(j) }
        }
        found.sort()
        var unique: [Int] = []
        unique.reserveCapacity(found.count)
        for j in found where unique.last != j { unique.append(j) }
        return unique
    }
}

/// Disjoint sets of item indices, joined by `union`.
struct UnionFind {
    private var parent: [Int]

    init(count: Int) { parent = Array(0..<count) }

    mutating func find(_ i: Int) -> Int {
        var i = i
        while parent[i] != i {
            parent[i] = parent[parent[i]]
            i = parent[i]
        }
        return i
    }

    mutating func union(_ a: Int, _ b: Int) {
        let ra = find(a), rb = find(b)
        if ra != rb { parent[max(ra, rb)] = min(ra, rb) }
    }

    /// Every set, each sorted, in the order of its first member.
    mutating func clusters() -> [[Int]] {
        var groups: [Int: [Int]] = [:]
        for i in parent.indices { groups[find(i), default: []].append(i) }
        return groups.values.sorted { $0[0] < $1[0] }
    }
}
