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
    /// Its push waits for an editor (`review.rules`).
    case held
    /// Its push would wait for an editor (a preview).
    case wouldHold = "would-hold"
    /// An editor rejected its push.
    case rejected

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
        case .held: return "held for an editor (review.rules): sent only once approved"
        case .wouldHold: return "would be held for an editor (review.rules)"
        case .rejected: return "an editor rejected its push"
        }
    }
}
