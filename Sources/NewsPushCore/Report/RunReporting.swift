import Foundation
import NewsPushModel

/// Everything the report stage reads.
public struct RunFacts {
    var dryRun: Bool
    var startedAt: Date
    var reads: [(settings: FeedSettings, read: FeedRead)]
    var candidates: [Candidate]
    var plan: RunPlan
    var matches: [StoryMatch]
    var policy: PolicySettings
    var now: Date
    /// What the send stage did (nil in a dry run).
    var sent: SendResult?
    /// The ledger's stories of the outbox entries handled, for those no feed listed this run.
    var outboxStories: [String: StoryRecord]

    /// What the report of a run is made from: its feeds' reads, its candidates, their matches
    /// and plan, what was sent (nil in a dry run) and the ledger's stories of the outbox
    /// entries handled that no feed listed.
    public init(
        dryRun: Bool, startedAt: Date, reads: [(settings: FeedSettings, read: FeedRead)], candidates: [Candidate],
        plan: RunPlan, matches: [StoryMatch], policy: PolicySettings, now: Date, sent: SendResult?,
        outboxStories: [String: StoryRecord]
    ) {
        self.dryRun = dryRun
        self.startedAt = startedAt
        self.reads = reads
        self.candidates = candidates
        self.plan = plan
        self.matches = matches
        self.policy = policy
        self.now = now
        self.sent = sent
        self.outboxStories = outboxStories
    }
}

extension RunReport {
    /// The report stage: every feed, every item with the one decision it got (after sending),
    /// every push with what became of it, and the outbox left for the next run.
    public static func make(_ facts: RunFacts, finishedAt: Date) -> RunReport {
        var report = RunReport(dryRun: facts.dryRun, startedAt: facts.startedAt, finishedAt: finishedAt)
        report.stop = facts.sent?.stop
        let outcomes = Dictionary(
            (facts.sent?.outcomes ?? []).map { ($0.entryID, $0) }, uniquingKeysWith: { _, last in last })
        let (pushes, final, stillPending) = pushReports(facts, outcomes: outcomes)
        report.pushes = pushes
        report.feeds = feedReports(facts)
        report.items = itemReports(facts, final: final, pushes: pushes)
        report.summary.feedsOk = report.feeds.filter { $0.status != .error }.count
        report.summary.feedsFailed = report.feeds.count - report.summary.feedsOk
        report.summary.itemsNew = Set(facts.candidates.lazy.filter(\.isNew).map(\.key)).count
        report.summary.pushesSent = outcomes.values.filter { $0.status == .sent }.count
        report.summary.pushesFailed = outcomes.values.filter { $0.status == .failed || $0.status == .unknown }.count
        report.summary.pushesPending = stillPending.count
        report.summary.pendingUntil = stillPending.map(\.freshUntil).max()
        let waiting = facts.plan.awaitingReview + facts.plan.newHolds
        report.summary.reviewHeld = facts.plan.newHolds.count
        report.summary.reviewWaiting = waiting.count
        report.summary.reviewOldestAgeSeconds = waiting.map(\.createdAt).min().map {
            Int(facts.now.timeIntervalSince($0).rounded())
        }
        return report
    }

    /// Every push with what it came to, the decision of each story with a push, and the entries
    /// left waiting (never attempted because sending stopped, or held by quiet hours).
    private static func pushReports(_ facts: RunFacts, outcomes: [String: OutboxOutcome])
        -> (pushes: [PushReport], final: [String: ItemDecision], stillPending: [OutboxEntry])
    {
        var pushes: [PushReport] = []
        var final: [String: ItemDecision] = [:]
        var stillPending: [OutboxEntry] = facts.plan.held
        for entry in facts.plan.toSend {
            let status = outcomes[entry.id]?.status ?? .pending
            final[entry.storyKey] = facts.dryRun ? .wouldPush : itemDecision(status)
            if !facts.dryRun && status == .pending { stillPending.append(entry) }
            pushes.append(push(entry, outcome: outcomes[entry.id], dryRun: facts.dryRun))
        }
        for entry in facts.plan.expired { final[entry.storyKey] = .expired }
        for entry in facts.plan.held { final[entry.storyKey] = .pending }
        return (pushes, final, stillPending)
    }

    /// Every feed of the run: its outcome, its items and how many were new.
    private static func feedReports(_ facts: RunFacts) -> [FeedReport] {
        var newPerFeed: [String: Int] = [:]
        for candidate in facts.candidates where candidate.isNew { newPerFeed[candidate.feedURL, default: 0] += 1 }
        let baselineFeeds = Set(
            zip(facts.candidates, facts.plan.decisions).filter { $0.1 == .baseline }.map(\.0.feedURL))
        return facts.reads.map { settings, read in
            FeedReport(
                name: settings.name ?? read.feed?.title ?? settings.url, url: settings.url, status: read.status,
                httpStatus: read.fetched.httpStatus, items: read.itemCount,
                new: newPerFeed[settings.url] ?? 0, error: read.error, movedTo: read.fetched.movedTo,
                baseline: baselineFeeds.contains(settings.url) ? true : nil)
        }
    }

    /// Every item with the one decision it got (after sending), then the pushes of earlier runs
    /// that no feed listed this run (304, errors, publishes).
    private static func itemReports(_ facts: RunFacts, final: [String: ItemDecision], pushes: [PushReport])
        -> [ItemReport]
    {
        var errors: [String: String] = [:]
        for push in pushes { if let error = push.error { errors[push.itemKey] = error } }
        var items: [ItemReport] = []
        var listed = Set<String>()
        for (index, (candidate, decision)) in zip(facts.candidates, facts.plan.decisions).enumerated() {
            listed.insert(candidate.key)
            let outcome = decision == .wouldPush || decision == .pending ? final[candidate.key] : nil
            let decided = outcome ?? (decision == .wouldHold && !facts.dryRun ? .held : decision)
            items.append(
                ItemReport(
                    key: candidate.key, feed: candidate.feedName, title: candidate.item.title,
                    link: candidate.item.link,
                    category: candidate.classification.category, confidence: candidate.classification.confidence,
                    decision: decided,
                    reason: reason(decided, candidate, facts.matches[index], facts, error: errors[candidate.key])))
        }
        for entry in facts.plan.due + facts.plan.held + facts.plan.expired where listed.insert(entry.storyKey).inserted
        {
            let story = facts.outboxStories[entry.storyKey]
            items.append(
                ItemReport(
                    key: entry.storyKey, feed: entry.properties["source"] ?? story?.feed ?? "",
                    title: story?.title ?? entry.properties["title"], link: story?.link ?? entry.properties["url"],
                    category: entry.category, confidence: 1,
                    decision: final[entry.storyKey] ?? .pending, reason: errors[entry.storyKey]))
        }
        return items
    }

    /// The reason beyond the decision's name, where there is more to say.
    private static func reason(
        _ decision: ItemDecision, _ candidate: Candidate, _ match: StoryMatch, _ facts: RunFacts,
        error: String?
    ) -> String? {
        let policy = facts.policy
        switch decision {
        case .sameStory:
            guard case .sameStory(let same) = match else { return nil }
            return "same story as \"\(same.title ?? same.key)\" [\(same.key)] from \(same.place.rawValue)"
        case .seen:
            guard case .known(let record) = match else { return "pruned earlier: old news" }
            if record.wasPushed {
                return "already pushed\(record.pushedAt.map { " at \(FeedDates.format($0))" } ?? "") [\(record.key)]"
            }
            return "already seen on \(FeedDates.format(record.firstSeen)) (\(record.status.rawValue)) [\(record.key)]"
        case .quietHours:
            guard let quiet = policy.quietHours else { return nil }
            return "quiet hours until \(quiet.endText) \(quiet.zoneName)"
        case .unclassified:
            guard candidate.hasHeadline else { return "no readable title or summary: nothing to show on a lock screen" }
            guard let guess = candidate.classification.category else { return "no evidence for any category" }
            return String(
                format: "best guess %@ at %.2f, below policy.min_confidence %.2f", guess.rawValue,
                candidate.classification.confidence, policy.minConfidence)
        case .stale:
            let hours = facts.now.timeIntervalSince(candidate.effectiveDate) / 3600
            return String(format: "%.1f h old, older than policy.max_age (%.1f h)", hours, policy.maxAge / 3600)
        case .overBudget:
            let budget = policy.budgetPerCategory
            return
                "the \(candidate.classification.category?.rawValue ?? "") budget of \(budget) "
                + "push\(budget == 1 ? "" : "es") per \(Int(policy.budgetWindow / 60)) min is used up"
        case .baseline:
            return "first read of \(candidate.feedName): recorded as already known"
        case .failed, .pending, .expired:
            return error
        case .scheduled:
            return "a scheduled send of this story waits at the hub (`newspush hub cancel ID` cancels it)"
        case .pushed, .wouldPush:
            return nil
        case .held, .wouldHold:
            if let entry = facts.plan.newHolds.first(where: { $0.storyKey == candidate.key }),
                let rule = facts.plan.holdDetails[entry.id]?.rule
            {
                return facts.dryRun
                    ? "would be held by \(rule.name) for an editor"
                    : "held by \(rule.name) for an editor: newspush review approve \(entry.id) sends it"
            }
            return "waits for an editor (newspush review list)"
        case .rejected:
            return "an editor rejected its push; it is never sent"
        }
    }

    private static func push(_ entry: OutboxEntry, outcome: OutboxOutcome?, dryRun: Bool) -> PushReport {
        var push = PushReport(
            category: entry.category, tags: entry.tags, properties: entry.properties, itemKey: entry.storyKey,
            status: dryRun ? .wouldSend : .pending)
        guard let outcome else {
            if !dryRun { push.error = "not sent: sending stopped before it" }
            return push
        }
        switch outcome.status {
        case .sent, .scheduled: push.status = .sent
        case .failed, .cancelled: push.status = .failed
        case .unknown, .sending: push.status = .unknown
        case .pending, .expired, .held: push.status = .pending
        case .rejected: push.status = .failed
        }
        push.httpStatus = outcome.httpStatus
        push.notificationId = outcome.notificationId
        push.error = outcome.error
        return push
    }

    private static func itemDecision(_ status: OutboxEntry.Status) -> ItemDecision {
        switch status {
        case .sent: return .pushed
        case .scheduled: return .scheduled
        case .failed, .unknown, .sending, .cancelled: return .failed
        case .pending: return .pending
        case .expired: return .expired
        case .held: return .held
        case .rejected: return .rejected
        }
    }
}

extension Candidate {
    /// Neither the ledger nor a tombstone knew its story.
    public var isNew: Bool { previous == nil && !tombstoned }
}
