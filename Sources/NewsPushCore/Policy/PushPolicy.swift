import Foundation
import NewsPushModel

/// Decides, for every item of a run, whether it deserves a push: a story nobody has handled,
/// classified, fresh, outside quiet hours and within its category's budget (newest first).
/// Same-story questions are answered before (`StoryMatcher`); this only applies the rules.
public struct PushPolicy: Sendable {
    /// `policy:` of the config.
    public var settings: PolicySettings

    /// The policy of `settings`.
    public init(settings: PolicySettings) {
        self.settings = settings
    }

    /// One decision per candidate, in the same order.
    /// - `budgetUsed`: pushes per category already spent in the current window (sent in earlier
    ///   runs, or waiting in the outbox to be sent now).
    /// - `sendInitial`: items of feeds read for the first time are a baseline; with N, the N
    ///   newest eligible ones among them are pushed instead.
    public func decide(
        _ candidates: [Candidate], matches: [StoryMatch], budgetUsed: [NewsCategory: Int] = [:],
        sendInitial: Int? = nil, now: Date
    ) -> [ItemDecision] {
        var decisions = [ItemDecision?](repeating: nil, count: candidates.count)
        var eligible: [Int] = []
        for (index, candidate) in candidates.enumerated() {
            switch matches[index] {
            case .tombstoned:
                decisions[index] = .seen
            case .known(let record):
                decisions[index] = Self.decision(known: record, key: candidate.key)
            case .sameStory(let same):
                decisions[index] = same.rejected ? .rejected : .sameStory
            case .new:
                if candidate.inBaselineFeed && sendInitial == nil {
                    decisions[index] = .baseline
                } else if candidate.classification.category == nil
                    || candidate.classification.confidence < settings.minConfidence || !candidate.hasHeadline
                {
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
            guard let category = candidates[index].classification.category else { continue }
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

    /// An item whose story the ledger knows: its push waits in the outbox (under this key; a
    /// copy found by link is seen), at the hub, or for an editor (the same story from any feed
    /// joins the held push), or was rejected; else it was seen.
    static func decision(known record: StoryRecord, key: String) -> ItemDecision {
        switch record.status {
        case .scheduled: return .scheduled
        case .held: return .held
        case .rejected: return .rejected
        case .pending where record.key == key: return .pending
        default: return .seen
        }
    }
}
