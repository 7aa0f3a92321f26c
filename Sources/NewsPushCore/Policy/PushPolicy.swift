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

    /// One decision per candidate, in the same order. On the first run (no state yet) items are
    /// a baseline unless `first_run: send`; `sendInitial` lets it push the N newest eligible items.
    public func decide(_ candidates: [Candidate], state: NewsPushState?, firstRun: Bool, sendInitial: Int?, now: Date) -> [ItemDecision] {
        var decisions = [ItemDecision?](repeating: nil, count: candidates.count)
        var firstIndexOfKey: [String: Int] = [:]
        var firstIndexOfLink: [String: Int] = [:]
        var eligible: [Int] = []
        for (index, candidate) in candidates.enumerated() {
            if firstIndexOfKey[candidate.key] != nil {
                decisions[index] = .sameStory
                continue
            }
            firstIndexOfKey[candidate.key] = index
            if let link = candidate.linkKey {
                if firstIndexOfLink[link] != nil {
                    decisions[index] = .sameStory
                    continue
                }
                firstIndexOfLink[link] = index
            }
            if let previous = candidate.previous, previous.status != .pending {
                decisions[index] = .seen
                continue
            }
            if firstRun && sendInitial == nil && settings.firstRun == .baseline {
                decisions[index] = .baseline
                continue
            }
            guard candidate.classification.category != nil else {
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
}
