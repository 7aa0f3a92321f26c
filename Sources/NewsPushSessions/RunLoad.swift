import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel

/// What the plan stage needs of the ledger's past: pushes that make a new item the same story,
/// the outbox waiting to be sent, and the budget already spent.
struct RunHistory: Sendable {
    /// Stories pushed (or about to be) in the last 36 hours.
    var recentPushes: [StoryRecord]
    /// The outbox entries waiting to be sent, oldest first.
    var waiting: [OutboxEntry]
    /// Pushes per category in the current budget window.
    var sentInWindow: [NewsCategory: Int]
}

/// The load stage of a run: what the stages need from the ledger, read once and returned as
/// values (no stage sees the ledger itself).
enum RunLoad {
    /// Settles what earlier runs left unfinished before anything is read: sends interrupted
    /// mid-way become `unknown` (never re-sent), scheduled sends whose time has passed `sent`.
    static func settle(_ ledger: Ledger, now: Date) throws(LedgerError) -> [OutboxEntry] {
        let interrupted = try ledger.settleInterruptedSends(at: now)
        try ledger.settleScheduledSends(at: now)
        return interrupted.filter { !$0.kind.isTrial }
    }

    /// What the ledger knows about the stories of `candidates`: by key, by canonical link, and
    /// which of the keys it knows nothing else about were pruned.
    static func known(_ candidates: [Candidate], in ledger: Ledger) throws(LedgerError) -> KnownStories {
        let (keys, linkKeys) = StoryIdentifier.lookups(candidates)
        let byKey = try ledger.stories(keys: keys)
        let byLink = try ledger.stories(linkKeys: linkKeys)
        let tombstoned = try ledger.tombstoned(keys.subtracting(byKey.keys))
        return KnownStories(byKey: byKey, byLink: byLink, tombstoned: tombstoned)
    }

    /// The recent pushes, the waiting outbox and the budget spent, as of `now`.
    static func history(_ ledger: Ledger, policy: PolicySettings, now: Date) throws(LedgerError) -> RunHistory {
        RunHistory(
            recentPushes: try ledger.recentPushes(since: now.addingTimeInterval(-TitleFingerprint.window)),
            waiting: try ledger.waitingPushes(),
            sentInWindow: try ledger.pushesSent(since: now.addingTimeInterval(-policy.budgetWindow)))
    }
}
