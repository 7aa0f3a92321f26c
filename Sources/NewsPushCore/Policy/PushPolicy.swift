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
    case expired
    case scheduled

    /// A short explanation for the text report.
    public var explanation: String {
        switch self {
        case .pushed: return "pushed"
        case .wouldPush: return "would push"
        case .baseline: return "first read of its feed: recorded as already known, not pushed"
        case .seen: return "already seen in an earlier run"
        case .sameStory: return "same story as another item"
        case .stale: return "published longer ago than policy.max_age"
        case .overBudget: return "category budget for the window is used up"
        case .quietHours: return "quiet hours"
        case .unclassified: return "no category with enough confidence"
        case .failed: return "push failed"
        case .pending: return "push waits in the outbox; retried next run while fresh"
        case .expired: return "its push waited in the outbox until it was no longer fresh (policy.max_age)"
        case .scheduled: return "a scheduled send of it waits at the hub"
        }
    }
}

/// Decides, for every item of a run, whether it deserves a push: a story nobody has handled,
/// classified, fresh, outside quiet hours and within its category's budget (newest first).
/// Same-story questions are answered before (`StoryMatcher`); this only applies the rules.
public struct PushPolicy: Sendable {
    public var settings: PolicySettings

    public init(settings: PolicySettings) {
        self.settings = settings
    }

    /// One decision per candidate, in the same order.
    /// - `budgetUsed`: pushes per category already spent in the current window (sent in earlier
    ///   runs, or waiting in the outbox to be sent now).
    /// - `sendInitial`: items of feeds read for the first time are a baseline; with N, the N
    ///   newest eligible ones among them are pushed instead.
    public func decide(_ candidates: [Candidate], matches: [StoryMatch], budgetUsed: [NewsCategory: Int] = [:],
                       sendInitial: Int? = nil, now: Date) -> [ItemDecision] {
        var decisions = [ItemDecision?](repeating: nil, count: candidates.count)
        var eligible: [Int] = []
        for (index, candidate) in candidates.enumerated() {
            switch matches[index] {
            case .tombstoned:
                decisions[index] = .seen
            case .known(let record):
                // Its push waits in the outbox (under this key; a copy found by link is seen).
                decisions[index] = record.status == .scheduled ? .scheduled
                    : record.status == .pending && record.key == candidate.key ? .pending : .seen
            case .sameStory:
                decisions[index] = .sameStory
            case .new:
                if candidate.inBaselineFeed && sendInitial == nil {
                    decisions[index] = .baseline
                } else if candidate.classification.category == nil || candidate.classification.confidence < settings.minConfidence {
                    decisions[index] = .unclassified
                } else if now.timeIntervalSince(candidate.effectiveDate) > settings.maxAge {
                    decisions[index] = .stale
                } else if let quiet = settings.quietHours, quiet.contains(now) {
                    decisions[index] = .quietHours
                } else {
                    eligible.append(index)
                }
            }
        }
        // Newest first, then the category budgets (and --send-initial N over the new feeds).
        eligible.sort { candidates[$0].effectiveDate > candidates[$1].effectiveDate }
        var used = budgetUsed
        var initialLeft = sendInitial
        for index in eligible {
            let category = candidates[index].classification.category!
            let initial = candidates[index].inBaselineFeed
            if initial, let left = initialLeft, left <= 0 {
                decisions[index] = .baseline
                continue
            }
            if used[category, default: 0] >= settings.budgetPerCategory {
                decisions[index] = .overBudget
                continue
            }
            used[category, default: 0] += 1
            if initial { initialLeft = initialLeft.map { $0 - 1 } }
            decisions[index] = .wouldPush
        }
        return decisions.map { $0 ?? .seen }
    }
}
