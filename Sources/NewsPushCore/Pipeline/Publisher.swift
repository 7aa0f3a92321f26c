import Crypto
import Foundation
import Logging
import NotificationHubs

/// A push an editor sends by hand (`newspush publish`, `newspush hub test-send`).
public struct ManualPush: Sendable {
    public var category: NewsCategory
    public var title: String?
    /// The exact `messageParam` text (instead of the category's message template with the title).
    public var message: String?
    public var url: String?
    /// Overrides the category's tag expression (e.g. `user:alice` to try it on one device).
    public var tags: String?
    /// Send with the hub's test flag (at most 10 devices; per-device outcomes come back).
    public var test: Bool
    /// Push the story even though it was pushed already (recorded as a deliberate repeat).
    public var force: Bool
    /// Overrides the category's importance and the importance rules.
    public var importance: Importance?
    /// Have the hub deliver it at this time (a scheduled send; Standard tier, ≤ 7 days ahead).
    public var at: Date?
    /// Correct the alert of this story (its key): same collapse id, new text, recorded as a correction.
    public var replacing: String?
    /// The language of the text (picks the category's message template); default en.
    public var language: String

    public init(category: NewsCategory, title: String? = nil, message: String? = nil, url: String? = nil,
                tags: String? = nil, test: Bool = false, force: Bool = false, importance: Importance? = nil, at: Date? = nil,
                replacing: String? = nil, language: String = "en") {
        self.category = category
        self.title = title
        self.message = message
        self.url = url
        self.tags = tags
        self.test = test
        self.force = force
        self.importance = importance
        self.at = at
        self.replacing = replacing
        self.language = language
    }

    /// A trial to a few devices (`--tags`, `--test`): never recorded as the story's push.
    public var isTrial: Bool { test || tags != nil }
}

/// Why a publish would push a story a second time.
public enum PublishRefusal: Sendable, Equatable, CustomStringConvertible {
    /// The ledger has the story (by key or link) as pushed, or waiting in the outbox.
    case known(StoryRecord)
    /// A near-identical headline was pushed in the last 36 hours.
    case sameStory(SameStory)

    public var description: String {
        switch self {
        case .known(let record):
            let when = record.pushedAt.map { " at \(FeedDates.format($0))" } ?? ""
            let what = record.status == .pending ? "waits in the outbox (the next run sends it)" : "was already pushed (\(record.status.rawValue)\(when))"
            return "this story \(what): \(record.title ?? record.key) [\(record.key)]; not sending it twice (--force pushes it again on purpose)"
        case .sameStory(let same):
            return "a near-identical headline was pushed in \(same.place.rawValue): \(same.title ?? same.key) [\(same.key)]; not sending it twice (--force pushes it anyway)"
        }
    }
}

/// A manual push, planned: what would be recorded and sent, and whether it must be refused.
public struct PublishPlan: Sendable {
    public var push: ManualPush
    public var story: StoryRecord
    public var entry: OutboxEntry
    /// The request as it would go out now (shown by `--dry-run`).
    public var request: HubRequest
    /// Set when sending would repeat a story and `--force` was not given.
    public var refusal: PublishRefusal?
}

/// What became of a manual push.
public struct PublishResult: Sendable {
    public var outcome: OutboxOutcome
    /// Set when the failure concerns the hub or the ledger: the push stays pending (exit 1).
    public var stop: SendStop?
    public var testOutcome: TestSendOutcome?
}

/// Publishes one push by hand through the same plan → outbox → send → record path as the
/// scheduled run, so the run recognises the story and never repeats it.
public struct Publisher: Sendable {
    public var config: NewsPushConfig
    public var logger: Logger
    public var hubTransport: (any HubTransport)?
    public var retrySleep: (@Sendable (Double) -> Void)?
    public var now: @Sendable () -> Date = { Date() }

    public init(config: NewsPushConfig, logger: Logger) {
        self.config = config
        self.logger = logger
    }

    /// The story key of a manual push: the canonical link when there is a URL (so the feed
    /// item for the same article is recognised), else a hash of category and text.
    public static func key(for push: ManualPush) -> String {
        if let url = push.url, let canonical = StoryKey.canonicalLink(url) { return "link:\(canonical)" }
        let digest = SHA256.hash(data: Data("\(push.category.rawValue)\n\(push.title ?? "")\n\(push.message ?? "")".utf8))
        return "manual:" + digest.prefix(12).map { String(format: "%02x", $0) }.joined()
    }

    /// Plans the push and checks the ledger for the story: by key, by link and by the run's
    /// near-identical-title rule. A correction (`replacing`) takes the corrected story's key and
    /// collapse id and is never a repeat.
    public func plan(_ push: ManualPush, ledger: Ledger) throws(RunError) -> PublishPlan {
        let client = try pipeline.makeHubClient()
        let settings = config.categories[push.category]!
        let at = now()
        let title = push.title ?? push.message ?? ""
        var key = Self.key(for: push)
        var refusal: PublishRefusal?
        var kind = OutboxEntry.Kind.push
        if let corrected = push.replacing {
            let record: StoryRecord?
            do { record = try ledger.stories(keys: [corrected])[corrected] } catch { throw .ledger(error) }
            guard let record, record.wasPushed else {
                throw .unknownStory(corrected, reason: record == nil ? "the ledger has no story with this key (`newspush state show` lists them)"
                                                                    : "it was never pushed (\(record!.status.rawValue)): publish it instead of correcting it")
            }
            key = corrected
            kind = .correction
        } else if !push.isTrial {
            refusal = try repeatOf(StoryRecord(key: key, feed: "publish", title: title, link: push.url, category: push.category.rawValue,
                                               firstSeen: at, lastSeen: at, published: at, status: .seen, origin: .publish), ledger: ledger)
            if refusal != nil { kind = .repeat }
        }
        let importance = push.importance ?? ImportanceRules(config.importanceRules)
            .importance(title: title, feedName: nil, feedURL: nil, default: settings.importance)
        let content = PushContent(category: push.category, title: title, url: push.url ?? "", source: "newsroom", id: key,
                                  message: push.message, language: push.language, importance: importance)
        let story = StoryRecord(key: key, feed: "publish", title: title, link: push.url, category: push.category.rawValue,
                                firstSeen: at, lastSeen: at, published: push.at ?? at, status: .seen, origin: .publish)
        let entry = OutboxEntry(storyKey: key, kind: kind, origin: .publish, category: push.category, format: settings.format,
                                tags: push.tags ?? settings.tags,
                                properties: PushRequests.properties(content, settings: settings, linkParams: config.linkParams),
                                createdAt: at, freshUntil: (push.at ?? at).addingTimeInterval(config.policy.maxAge),
                                expiresAfter: settings.expiry, scheduledAt: push.at)
        let request: HubRequest
        do { request = try PushRequests.request(entry, client: client, test: push.test, now: at) } catch { throw .request(error) }
        return PublishPlan(push: push, story: story, entry: entry, request: request, refusal: push.force ? nil : refusal)
    }

    /// What makes this story a repeat, if anything.
    private func repeatOf(_ story: StoryRecord, ledger: Ledger) throws(RunError) -> PublishRefusal? {
        do {
            var candidate = Candidate(key: story.key, linkKey: story.linkKey, feedName: "publish", feedURL: "publish",
                                      item: FeedItem(title: story.title, link: story.link, published: story.published), firstSeen: story.firstSeen)
            candidate.previous = try ledger.stories(keys: [story.key])[story.key]
            if candidate.previous == nil, let link = story.linkKey { candidate.previous = try ledger.stories(linkKeys: [link])[link] }
            let recent = try ledger.recentPushes(since: now().addingTimeInterval(-TitleFingerprint.window))
            switch StoryMatcher.match([candidate], recentPushes: recent)[0] {
            case .known(let record) where record.wasPushed || record.status == .pending: return .known(record)
            case .sameStory(let same): return .sameStory(same)
            case .known, .new, .tombstoned: return nil
            }
        } catch { throw .ledger(error) }
    }

    /// Records the push in the outbox of `ledger` (held under the run lock) and sends it.
    public func send(_ plan: PublishPlan, ledger: Ledger) throws(RunError) -> PublishResult {
        do { try ledger.enqueue(plan.entry, story: plan.story) } catch { throw .ledger(error) }
        let sent = try sender().send([plan.entry], ledger: ledger)
        let outcome = sent.outcomes.last ?? OutboxOutcome(entryID: plan.entry.id, storyKey: plan.entry.storyKey, status: .pending, at: now())
        return PublishResult(outcome: outcome, stop: sent.stop, testOutcome: nil)
    }

    /// Sends a trial (`--tags`, `--test`): the same request and outcome rules, nothing recorded.
    public func sendTrial(_ plan: PublishPlan) throws(RunError) -> PublishResult {
        let (outcome, answer) = try sender().sendUnrecorded(plan.entry, request: plan.request)
        let stop = answer.concernsHub ? SendStop.hub(status: answer.httpStatus, reason: answer.failureReason ?? "") : nil
        var testOutcome: TestSendOutcome?
        if case .accepted(_, _, _, let body) = answer, !body.isEmpty { testOutcome = TestSendOutcome(xml: body) }
        return PublishResult(outcome: outcome, stop: stop, testOutcome: testOutcome)
    }

    private var pipeline: RunPipeline {
        var pipeline = RunPipeline(config: config, logger: logger)
        pipeline.hubTransport = hubTransport
        pipeline.retrySleep = retrySleep
        pipeline.now = now
        return pipeline
    }

    private func sender() throws(RunError) -> OutboxSender {
        OutboxSender(client: try pipeline.makeHubClient(), concurrency: 1, logger: logger, now: now)
    }
}
