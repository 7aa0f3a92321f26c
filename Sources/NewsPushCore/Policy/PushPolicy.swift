import Foundation

/// What happened to an item in a run, as SPEC §3 names it.
public enum ItemDecision: String, Codable, Sendable {
    case pushed
    case wouldPush = "would-push"
    case baseline
    case seen
    case sameStory = "same-story"
    case stale
    case overBudget = "over-budget"
    case quietHours = "quiet-hours"
    case unclassified
    case failed
    case pending

    /// A short explanation for the text report.
    public var explanation: String {
        switch self {
        case .pushed: return "pushed"
        case .wouldPush: return "would push"
        case .baseline: return "first run: recorded as already known, not pushed"
        case .seen: return "already seen in an earlier run"
        case .sameStory: return "same story as another item of this run"
        case .stale: return "published longer ago than policy.max_age"
        case .overBudget: return "category budget for the window is used up"
        case .quietHours: return "quiet hours"
        case .unclassified: return "no category with enough confidence"
        case .failed: return "push failed"
        case .pending: return "push not accepted by the hub; retried next run"
        }
    }
}

/// One item considered by a run.
public struct Candidate: Sendable {
    public var key: String
    /// The canonical link, which identifies the story when feeds disagree on ids.
    public var linkKey: String?
    public var feedName: String
    public var feedURL: String
    public var item: FeedItem
    public var classification: Classification
    /// What the state file already knew about this story, if anything.
    public var previous: StoryRecord?
    /// When newspush first saw it (now for new items).
    public var firstSeen: Date
    /// The state pruned this story earlier: it is old news even though no record is left.
    public var tombstoned = false

    /// The date freshness is judged by: published, else updated, else first seen.
    public var effectiveDate: Date { item.published ?? item.updated ?? firstSeen }
}

/// Decides, for every item of a run, whether it deserves a push: new, classified, fresh,
/// outside quiet hours and within its category's budget (newest first).
public struct PushPolicy: Sendable {
    public var settings: PolicySettings

    public init(settings: PolicySettings) {
        self.settings = settings
    }

    /// A story already pushed in an earlier run, for matching near-identical titles.
    public struct RecentPush: Sendable {
        public var title: TitleFingerprint
        public var at: Date
    }

    /// One decision per candidate, in the same order. On the first run (no state yet) items are
    /// a baseline unless `first_run: send`; `sendInitial` lets it push the N newest eligible items.
    /// Items that are one story (same key, same canonical link, or near-identical titles within
    /// 36 hours) are decided once, for the item with the strongest evidence; the others get
    /// `same-story`, as do new items matching a story pushed in an earlier run.
    public func decide(_ candidates: [Candidate], state: NewsPushState?, firstRun: Bool, sendInitial: Int?, now: Date,
                       recentPushes: [RecentPush] = []) -> [ItemDecision] {
        var decisions = [ItemDecision?](repeating: nil, count: candidates.count)
        for cluster in Self.clusters(candidates) where cluster.count > 1 {
            func isKnown(_ i: Int) -> Bool {
                candidates[i].tombstoned || (candidates[i].previous.map { $0.status != .pending } ?? false)
            }
            if cluster.contains(where: isKnown) {
                // The story was handled in an earlier run: its new copies are the same story.
                for member in cluster where !isKnown(member) { decisions[member] = .sameStory }
                continue
            }
            // The strongest evidence wins: highest confidence, then the earliest listed item.
            let best = cluster.max { a, b in
                let ca = candidates[a].classification.confidence, cb = candidates[b].classification.confidence
                return ca != cb ? ca < cb : a > b
            }!
            for member in cluster where member != best { decisions[member] = .sameStory }
        }
        var eligible: [Int] = []
        for (index, candidate) in candidates.enumerated() where decisions[index] == nil {
            if candidate.tombstoned {
                decisions[index] = .seen
                continue
            }
            if let previous = candidate.previous, previous.status != .pending {
                decisions[index] = .seen
                continue
            }
            if candidate.previous == nil, !recentPushes.isEmpty, let title = candidate.item.title {
                let fingerprint = TitleFingerprint(title)
                if recentPushes.contains(where: { abs($0.at.timeIntervalSince(candidate.effectiveDate)) <= TitleFingerprint.window && $0.title.matches(fingerprint) }) {
                    decisions[index] = .sameStory
                    continue
                }
            }
            if firstRun && sendInitial == nil && settings.firstRun == .baseline {
                decisions[index] = .baseline
                continue
            }
            guard candidate.classification.category != nil, candidate.classification.confidence >= settings.minConfidence else {
                decisions[index] = .unclassified
                continue
            }
            if now.timeIntervalSince(candidate.effectiveDate) > settings.maxAge {
                decisions[index] = .stale
                continue
            }
            if let quiet = settings.quietHours, quiet.contains(now) {
                decisions[index] = .quietHours
                continue
            }
            eligible.append(index)
        }
        // Newest first, then the category budgets (and on a first run, --send-initial N overall).
        eligible.sort { candidates[$0].effectiveDate > candidates[$1].effectiveDate }
        var used: [NewsCategory: Int] = [:]
        for record in state?.stories.values ?? [:].values {
            guard let pushedAt = record.pushedAt, now.timeIntervalSince(pushedAt) < settings.budgetWindow,
                  [.pushed, .unknown, .sending].contains(record.status),
                  let category = record.category.flatMap(NewsCategory.init(rawValue:)) else { continue }
            used[category, default: 0] += 1
        }
        var initialLeft = firstRun ? sendInitial : nil
        for index in eligible {
            let category = candidates[index].classification.category!
            if let left = initialLeft, left <= 0 {
                decisions[index] = .baseline
                continue
            }
            if used[category, default: 0] >= settings.budgetPerCategory {
                decisions[index] = .overBudget
                continue
            }
            used[category, default: 0] += 1
            initialLeft = initialLeft.map { $0 - 1 }
            decisions[index] = .wouldPush
        }
        return decisions.map { $0 ?? .seen }
    }

    /// Groups candidates that are one story: same key, same canonical link, or near-identical
    /// titles dated within 36 hours. Uses an index of title shingles so each item is compared
    /// only with items sharing a word pair.
    static func clusters(_ candidates: [Candidate]) -> [[Int]] {
        var parent = Array(candidates.indices)
        func find(_ i: Int) -> Int {
            var i = i
            while parent[i] != i { parent[i] = parent[parent[i]]; i = parent[i] }
            return i
        }
        func union(_ a: Int, _ b: Int) {
            let ra = find(a), rb = find(b)
            if ra != rb { parent[max(ra, rb)] = min(ra, rb) }
        }
        var byKey: [String: Int] = [:]
        var byLink: [String: Int] = [:]
        var byShingle: [String: [Int]] = [:]
        var fingerprints: [TitleFingerprint?] = []
        // Shingles shared with each earlier item, counted through the index; only items sharing
        // enough of them to reach the similarity threshold are compared in full. This keeps
        // common word pairs ("of the") from making the comparison quadratic.
        var shared = [Int](repeating: 0, count: candidates.count)
        var touched: [Int] = []
        for (index, candidate) in candidates.enumerated() {
            if let other = byKey[candidate.key] { union(other, index) } else { byKey[candidate.key] = index }
            if let link = candidate.linkKey {
                if let other = byLink[link] { union(other, index) } else { byLink[link] = index }
            }
            let fingerprint = candidate.item.title.map(TitleFingerprint.init)
            fingerprints.append(fingerprint)
            guard let fingerprint, fingerprint.words.count >= 4 else { continue }
            for shingle in fingerprint.shingles {
                for other in byShingle[shingle] ?? [] {
                    if shared[other] == 0 { touched.append(other) }
                    shared[other] += 1
                }
                byShingle[shingle, default: []].append(index)
            }
            // Jaccard c / (a + b - c) >= t  <=>  c >= t (a + b) / (1 + t)
            let t = TitleFingerprint.threshold
            for other in touched {
                let common = shared[other]
                shared[other] = 0
                guard let otherPrint = fingerprints[other],
                      Double(common) >= t * Double(fingerprint.shingles.count + otherPrint.shingles.count) / (1 + t),
                      find(other) != find(index),
                      abs(candidates[other].effectiveDate.timeIntervalSince(candidate.effectiveDate)) <= TitleFingerprint.window,
                      otherPrint.matches(fingerprint) else { continue }
                union(other, index)
            }
            touched.removeAll(keepingCapacity: true)
        }
        var groups: [Int: [Int]] = [:]
        for index in candidates.indices { groups[find(index), default: []].append(index) }
        return groups.values.map { $0.sorted() }.sorted { $0[0] < $1[0] }
    }
}
