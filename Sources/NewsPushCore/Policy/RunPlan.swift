import Foundation
import NewsPushModel

/// The plan stage's answer: a decision for every item, an outbox entry for each item selected,
/// and what becomes of the pushes already waiting in the outbox.
public struct RunPlan: Sendable {
    /// One decision per candidate, in order.
    public var decisions: [ItemDecision]
    /// New outbox entries, one per item decided `would-push`, in send order.
    public var newEntries: [OutboxEntry]
    /// Entries of earlier runs (or publishes) still fresh: sent first, whatever their feed said.
    public var due: [OutboxEntry]
    /// Entries of earlier runs that are no longer fresh: they expire unsent.
    public var expired: [OutboxEntry]
    /// Entries of earlier runs held back by quiet hours: they stay pending.
    public var held: [OutboxEntry]
    /// This run's entries that `review.rules` hold for an editor (status `held`), each with the
    /// rule that held it and its content (for an edited approval), by entry id.
    public var newHolds: [OutboxEntry] = []
    /// The rule and content of each of `newHolds`, by entry id.
    public var holdDetails: [String: (rule: ReviewRule, content: PushContent)] = [:]
    /// Held entries of earlier runs still fresh: they wait for an editor.
    public var awaitingReview: [OutboxEntry] = []

    /// Everything to send, in order: the waiting entries first, then this run's.
    public var toSend: [OutboxEntry] { due + newEntries }
}

/// Plans a run: the policy's decisions over the items, and the outbox.
public enum RunPlanner {
    /// - `waiting`: the ledger's pending outbox entries.
    /// - `sentInWindow`: pushes per category that went out in the current budget window.
    public static func plan(
        _ candidates: [Candidate], matches: [StoryMatch], waiting: [OutboxEntry],
        sentInWindow: [NewsCategory: Int], sendInitial: Int?, config: NewsPushConfig, now: Date
    ) -> RunPlan {
        let quiet = config.policy.quietHours?.contains(now) ?? false
        var due: [OutboxEntry] = [], expired: [OutboxEntry] = [], held: [OutboxEntry] = []
        var awaitingReview: [OutboxEntry] = []
        for entry in waiting {
            if entry.freshUntil < now {
                expired.append(entry)
            } else if entry.status == .held {
                awaitingReview.append(entry)
            } else if quiet && entry.origin == .run {
                // An editor's publish goes out when the hub is back; the run's pushes keep quiet hours.
                held.append(entry)
            } else {
                due.append(entry)
            }
        }
        var budgetUsed = sentInWindow
        for entry in due + held where entry.kind != .correction { budgetUsed[entry.category, default: 0] += 1 }
        let decisions = PushPolicy(settings: config.policy).decide(
            candidates, matches: matches, budgetUsed: budgetUsed,
            sendInitial: sendInitial, now: now)
        // Newest first within each category.
        let selected = decisions.indices.compactMap { index -> (index: Int, category: NewsCategory)? in
            guard decisions[index] == .wouldPush, let category = candidates[index].classification.category else {
                return nil
            }
            return (index, category)
        }.sorted {
            ($0.category, candidates[$1.index].effectiveDate) < ($1.category, candidates[$0.index].effectiveDate)
        }
        let rules = ImportanceRules(config.importanceRules)
        let review = ReviewRules(config.review.rules)
        var plan = RunPlan(decisions: decisions, newEntries: [], due: due, expired: expired, held: held)
        plan.awaitingReview = awaitingReview
        for (index, category) in selected {
            let candidate = candidates[index]
            var (entry, content) = entry(for: candidate, category: category, config: config, rules: rules, now: now)
            if let rule = review.holdingRule(
                category: category, title: content.title, feedName: candidate.feedName, feedURL: candidate.feedURL)
            {
                entry.status = .held
                plan.newHolds.append(entry)
                plan.holdDetails[entry.id] = (rule, content)
                plan.decisions[index] = .wouldHold
            } else {
                plan.newEntries.append(entry)
            }
        }
        return plan
    }

    /// The outbox entry for a selected item: its category's format, tags, properties and
    /// expiry, its importance, fresh until the item is `policy.max_age` old.
    static func entry(
        for candidate: Candidate, category: NewsCategory, config: NewsPushConfig, rules: ImportanceRules,
        now: Date
    ) -> (OutboxEntry, PushContent) {
        let settings = config.settings(for: category)
        let item = candidate.item
        let title = AlertCopy.headline(title: item.title, summary: item.summary) ?? item.link ?? "(untitled)"
        let importance = rules.importance(
            title: item.title, feedName: candidate.feedName, feedURL: candidate.feedURL, default: settings.importance)
        let content = PushContent(
            category: category, title: title, url: item.link ?? "", source: candidate.feedName, id: candidate.key,
            summary: AlertCopy.summary(item.summary, headline: title), image: item.image,
            language: candidate.language, importance: importance)
        let entry = OutboxEntry(
            storyKey: candidate.key, origin: .run, category: category, format: settings.format, tags: settings.tags,
            properties: PushRequests.properties(
                content, settings: settings, languages: config.languages, linkParams: config.linkParams),
            createdAt: now,
            freshUntil: candidate.effectiveDate.addingTimeInterval(config.policy.maxAge), expiresAfter: settings.expiry)
        return (entry, content)
    }
}
