import FeedParsing
import Foundation
import NewsPushModel

/// The settle stage of a feed's items: what the reading of their feed already decides. An item
/// whose story the ledger knows (or pruned), or of a baseline, gets its decision now and is
/// kept as a `ListedItem` only; a new item (and one whose push waits in the outbox) stays a
/// candidate for the plan.
public enum ItemSettling {
    /// The decision an identified candidate gets without the plan, or nil when the plan decides
    /// it (`sendInitial`: `--send-initial N`, under which baseline items may be pushed).
    public static func settledDecision(_ candidate: Candidate, sendInitial: Int?) -> ItemDecision? {
        if candidate.tombstoned { return .seen }
        if let previous = candidate.previous {
            let decision = PushPolicy.decision(known: previous, key: candidate.key)
            return decision == .pending ? nil : decision
        }
        return candidate.inBaselineFeed && sendInitial == nil ? .baseline : nil
    }

    /// Each candidate as the run keeps it (settled ones with their decision and reason), and the
    /// candidates the plan decides.
    public static func settle(_ candidates: [Candidate], sendInitial: Int?) -> (
        listed: [ListedItem], open: [Candidate]
    ) {
        var listed: [ListedItem] = []
        var open: [Candidate] = []
        listed.reserveCapacity(candidates.count)
        for candidate in candidates {
            let decision = settledDecision(candidate, sendInitial: sendInitial)
            listed.append(
                ListedItem(candidate, decision: decision, reason: decision.flatMap { reason($0, candidate) }))
            if decision == nil { open.append(candidate) }
        }
        return (listed, open)
    }

    /// The reason of a decision the reading of an item's feed settles (seen, a baseline, held,
    /// scheduled, rejected): what the ledger knew of its story.
    public static func reason(_ decision: ItemDecision, _ candidate: Candidate) -> String? {
        switch decision {
        case .seen:
            guard let record = candidate.previous else { return "pruned earlier: old news" }
            if record.wasPushed {
                return "already pushed\(record.pushedAt.map { " at \(FeedDates.format($0))" } ?? "") [\(record.key)]"
            }
            return "already seen on \(FeedDates.format(record.firstSeen)) (\(record.status.rawValue)) [\(record.key)]"
        case .baseline:
            return "first read of \(candidate.feedName): recorded as already known"
        case .scheduled:
            return "a scheduled send of this story waits at the hub (`newspush hub cancel ID` cancels it)"
        case .held, .wouldHold:
            return "waits for an editor (newspush review list)"
        case .rejected:
            return "an editor rejected its push; it is never sent"
        default:
            return nil
        }
    }
}
