import Foundation
import NewsPushModel

/// What the reading of one feed left for the report: its read (without its items), its name,
/// and how many of its items were new and settled as a baseline.
public struct FeedTally: Sendable {
    /// The feed as configured.
    public var settings: FeedSettings
    /// The fetch and parse, its items let go.
    public var read: FeedRead
    /// Items no run had seen.
    public var newItems = 0
    /// Items settled as a baseline when the feed was read.
    public var baselines = 0
    /// Read for the first time: its items are a baseline (unless `--send-initial`).
    public var firstRead = false

    /// The tally of a feed read, before its items are counted.
    public init(settings: FeedSettings, read: FeedRead) {
        self.settings = settings
        self.read = read
    }

    /// The feed's name (or title, or URL).
    public var name: String { settings.name ?? read.feed?.title ?? settings.url }
}

/// Everything the report stage reads.
public struct RunFacts {
    var dryRun: Bool
    var startedAt: Date
    var feeds: [FeedTally]
    var log: ItemLog
    /// The candidates the plan decided (new items, pushes waiting, and the settled items in a
    /// story with one of them), in run order; `plan.decisions` and `matches` follow them.
    var decided: [Candidate]
    /// The positions among `decided` of settled items (their line is kept unless the plan
    /// decided them otherwise).
    var pulled: [ItemPosition: ItemDecision]
    var plan: RunPlan
    var matches: [StoryMatch]
    var policy: PolicySettings
    var now: Date
    /// What the send stage did (nil in a dry run).
    var sent: SendResult?
    /// The ledger's stories of the outbox entries handled, for those no feed listed this run.
    var outboxStories: [String: StoryRecord]
    /// The story keys of outbox entries that an item of this run listed.
    var listedOutboxKeys: Set<String>
    /// How many distinct stories of this run no run had seen.
    var itemsNew: Int

    /// What the report of a run is made from: its feeds, its items (in `log`), the candidates
    /// the plan decided with their matches and plan, what was sent (nil in a dry run), the
    /// ledger's stories of the outbox entries handled that no feed listed.
    public init(
        dryRun: Bool, startedAt: Date, feeds: [FeedTally], log: ItemLog, decided: [Candidate],
        pulled: [ItemPosition: ItemDecision], plan: RunPlan, matches: [StoryMatch], policy: PolicySettings,
        now: Date, sent: SendResult?, outboxStories: [String: StoryRecord], listedOutboxKeys: Set<String>,
        itemsNew: Int
    ) {
        self.dryRun = dryRun
        self.startedAt = startedAt
        self.feeds = feeds
        self.log = log
        self.decided = decided
        self.pulled = pulled
        self.plan = plan
        self.matches = matches
        self.policy = policy
        self.now = now
        self.sent = sent
        self.outboxStories = outboxStories
        self.listedOutboxKeys = listedOutboxKeys
        self.itemsNew = itemsNew
    }
}

extension RunReport {
    /// The report stage: every feed, every item with the one decision it got (after sending),
    /// every push with what became of it, and the outbox left for the next run. The items stay
    /// in the run's log; the report holds the lines of those the plan decided.
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
        report.summary.itemsNew = facts.itemsNew
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
        let published = Dictionary(
            facts.decided.compactMap { candidate in candidate.item.published.map { (candidate.key, $0) } },
            uniquingKeysWith: { first, _ in first })
        for entry in facts.plan.toSend {
            let status = outcomes[entry.id]?.status ?? .pending
            final[entry.storyKey] = facts.dryRun ? .wouldPush : itemDecision(status)
            if !facts.dryRun && status == .pending { stillPending.append(entry) }
            var push = push(entry, outcome: outcomes[entry.id], dryRun: facts.dryRun)
            push.firstSeen = entry.createdAt
            push.acceptedAt = outcomes[entry.id]?.acceptedAt
            push.published = published[entry.storyKey]
            pushes.append(push)
        }
        for entry in facts.plan.expired { final[entry.storyKey] = .expired }
        for entry in facts.plan.held { final[entry.storyKey] = .pending }
        return (pushes, final, stillPending)
    }

    /// Every feed of the run: its outcome, its items and how many were new; a baseline when any
    /// of its items was decided as one.
    private static func feedReports(_ facts: RunFacts) -> [FeedReport] {
        var baselines = facts.feeds.map(\.baselines)
        for (candidate, decision) in zip(facts.decided, facts.plan.decisions) {
            let before = facts.pulled[candidate.position]
            if before == .baseline && decision != .baseline { baselines[candidate.position.feed] -= 1 }
            if before == nil && decision == .baseline { baselines[candidate.position.feed] += 1 }
        }
        return facts.feeds.enumerated().map { index, feed in
            FeedReport(
                name: feed.name, url: feed.settings.url, status: feed.read.status,
                httpStatus: feed.read.fetched.httpStatus, items: feed.read.itemCount, new: feed.newItems,
                error: feed.read.error, movedTo: feed.read.fetched.movedTo,
                baseline: baselines[index] > 0 ? true : nil)
        }
    }

    /// Every item with the one decision it got (after sending): the lines of the items the plan
    /// decided replace their settled ones in the log; then the pushes of earlier runs that no
    /// feed listed this run (304, errors, publishes).
    private static func itemReports(_ facts: RunFacts, final: [String: ItemDecision], pushes: [PushReport])
        -> ReportItems
    {
        var errors: [String: String] = [:]
        for push in pushes { if let error = push.error { errors[push.itemKey] = error } }
        var replaced: [ItemPosition: ItemReport] = [:]
        for (index, (candidate, decision)) in zip(facts.decided, facts.plan.decisions).enumerated() {
            if let settled = facts.pulled[candidate.position], settled == decision { continue }
            let outcome = decision == .wouldPush || decision == .pending ? final[candidate.key] : nil
            let decided = outcome ?? (decision == .wouldHold && !facts.dryRun ? .held : decision)
            replaced[candidate.position] = ItemReport(
                key: candidate.key, feed: candidate.feedName, title: candidate.item.title, link: candidate.item.link,
                category: candidate.classification.category, confidence: candidate.classification.confidence,
                decision: decided,
                reason: reason(decided, candidate, facts.matches[index], facts, error: errors[candidate.key]))
        }
        var listed = facts.listedOutboxKeys
        var extra: [ItemReport] = []
        for entry in facts.plan.due + facts.plan.held + facts.plan.expired where listed.insert(entry.storyKey).inserted
        {
            let story = facts.outboxStories[entry.storyKey]
            extra.append(
                ItemReport(
                    key: entry.storyKey, feed: entry.properties["source"] ?? story?.feed ?? "",
                    title: story?.title ?? entry.properties["title"], link: story?.link ?? entry.properties["url"],
                    category: entry.category, confidence: 1,
                    decision: final[entry.storyKey] ?? .pending, reason: errors[entry.storyKey]))
        }
        return ReportItems(log: facts.log, feedNames: facts.feeds.map(\.name), replaced: replaced, extra: extra)
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
        case .failed, .pending, .expired:
            return error
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
            return ItemSettling.reason(decision, candidate)
        case .rejected:
            guard case .sameStory(let same) = match else { return ItemSettling.reason(decision, candidate) }
            return "an editor rejected this story as \"\(same.title ?? same.key)\" [\(same.key)]; it is never sent"
        case .seen, .baseline, .scheduled:
            return ItemSettling.reason(decision, candidate)
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

extension ListedItem {
    /// The item's line in the report, under its feed's name.
    public func report(feed: String) -> ItemReport {
        ItemReport(
            key: key, feed: feed, title: title, link: link, category: classification.category,
            confidence: classification.confidence, decision: decision ?? .seen, reason: reason)
    }
}
