import Crypto
import Foundation
import NewsPushModel
import NotificationHubs

/// A push an editor sends by hand (`newspush publish`, `newspush hub test-send`).
public struct ManualPush: Sendable {
    /// The story's category (and tag expression, unless `tags`).
    public var category: NewsCategory
    /// The headline.
    public var title: String?
    /// The exact `messageParam` text (instead of the category's message template with the title).
    public var message: String?
    /// The story's URL.
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

    /// A manual push to `category`.
    public init(
        category: NewsCategory, title: String? = nil, message: String? = nil, url: String? = nil,
        tags: String? = nil, test: Bool = false, force: Bool = false, importance: Importance? = nil, at: Date? = nil,
        replacing: String? = nil, language: String = "en"
    ) {
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

    /// Why it is refused, naming the story and what `--force` does.
    public var description: String {
        switch self {
        case .known(let record):
            let when = record.pushedAt.map { " at \(FeedDates.format($0))" } ?? ""
            let what =
                record.status == .pending
                ? "waits in the outbox (the next run sends it)"
                : "was already pushed (\(record.status.rawValue)\(when))"
            return
                "this story \(what): \(record.title ?? record.key) [\(record.key)]; not sending it twice (--force "
                + "pushes it again on purpose)"
        case .sameStory(let same):
            return
                "a near-identical headline was pushed in \(same.place.rawValue): \(same.title ?? same.key) "
                + "[\(same.key)]; not sending it twice (--force pushes it anyway)"
        }
    }
}

/// A manual push, planned: what would be recorded and sent, and whether it must be refused.
public struct PublishPlan: Sendable {
    /// What the editor asked for.
    public var push: ManualPush
    /// The story as it would be recorded.
    public var story: StoryRecord
    /// The outbox entry as it would be recorded.
    public var entry: OutboxEntry
    /// The request as it would go out now (shown by `--dry-run`).
    public var request: HubRequest
    /// Set when sending would repeat a story and `--force` was not given.
    public var refusal: PublishRefusal?
}

/// Why a manual push cannot be planned at all.
public enum PublishPlanError: Error, Sendable, CustomStringConvertible {
    /// `publish --replace KEY` names no story that was pushed.
    case unknownStory(String, reason: String)
    /// The push cannot be made into a request (a bad `--tags` expression, a message too large).
    case request(HubError)

    /// What is wrong, naming the story.
    public var description: String {
        switch self {
        case .unknownStory(let key, let reason): return "cannot correct '\(key)': \(reason)"
        case .request(let error): return error.description
        }
    }
}

/// What the ledger knows that a manual push is checked against (the load stage's answer).
public struct PublishKnowledge: Sendable {
    /// The story under the push's own key, if the ledger has it.
    public var byKey: StoryRecord?
    /// The first story recorded with the push's canonical link, if any.
    public var byLink: StoryRecord?
    /// The story a correction corrects (`replacing`), if the ledger has it.
    public var corrected: StoryRecord?
    /// Stories pushed (or about to be) in the last 36 hours, for the near-identical-title rule.
    public var recentPushes: [StoryRecord]

    /// What a ledger knows about one manual push.
    public init(
        byKey: StoryRecord? = nil, byLink: StoryRecord? = nil, corrected: StoryRecord? = nil,
        recentPushes: [StoryRecord] = []
    ) {
        self.byKey = byKey
        self.byLink = byLink
        self.corrected = corrected
        self.recentPushes = recentPushes
    }
}

/// Plans a push an editor sends by hand: the same story key, request and repeat rules as the
/// scheduled run, so the run recognises the story and never repeats it.
public enum PublishPlanner {
    /// The story key of a manual push: the canonical link when there is a URL (so the feed
    /// item for the same article is recognised), else a hash of category and text.
    public static func key(for push: ManualPush) -> String {
        if let url = push.url, let canonical = StoryKey.canonicalLink(url) { return "link:\(canonical)" }
        let digest = SHA256.hash(
            data: Data("\(push.category.rawValue)\n\(push.title ?? "")\n\(push.message ?? "")".utf8))
        return "manual:" + digest.prefix(12).map { String(format: "%02x", $0) }.joined()
    }

    /// Plans the push and checks it against what the ledger knows: by key, by link and by the
    /// run's near-identical-title rule. A correction (`replacing`) takes the corrected story's
    /// key and collapse id and is never a repeat. `now` is the session's clock reading; the
    /// request shown is signed at `requestTime` (the wall clock).
    public static func plan(
        _ push: ManualPush, knowledge: PublishKnowledge, config: NewsPushConfig, client: NotificationHubClient,
        now: Date, requestTime: Date = Date()
    ) throws(PublishPlanError) -> PublishPlan {
        let settings = config.settings(for: push.category)
        let title = push.title ?? push.message ?? ""
        var key = Self.key(for: push)
        var refusal: PublishRefusal?
        var kind = OutboxEntry.Kind.push
        if let corrected = push.replacing {
            guard let record = knowledge.corrected, record.wasPushed else {
                let reason =
                    knowledge.corrected.map {
                        "it was never pushed (\($0.status.rawValue)): publish it instead of correcting it"
                    }
                    ?? "the ledger has no story with this key (`newspush state show` lists them)"
                throw .unknownStory(corrected, reason: reason)
            }
            key = record.key
            kind = .correction
        } else if !push.isTrial {
            refusal = repeatOf(key: key, title: title, url: push.url, knowledge: knowledge, now: now)
            if refusal != nil { kind = .repeat }
        }
        let importance =
            push.importance
            ?? ImportanceRules(config.importanceRules)
            .importance(title: title, feedName: nil, feedURL: nil, default: settings.importance)
        let content = PushContent(
            category: push.category, title: title, url: push.url ?? "", source: "newsroom", id: key,
            message: push.message, language: push.language, importance: importance)
        let story = StoryRecord(
            key: key, feed: "publish", title: title, link: push.url, category: push.category.rawValue,
            firstSeen: now, lastSeen: now, published: push.at ?? now, status: .seen, origin: .publish)
        let entry = OutboxEntry(
            storyKey: key, kind: kind, origin: .publish, category: push.category, format: settings.format,
            tags: push.tags ?? settings.tags,
            properties: PushRequests.properties(content, settings: settings, linkParams: config.linkParams),
            createdAt: now, freshUntil: (push.at ?? now).addingTimeInterval(config.policy.maxAge),
            expiresAfter: settings.expiry, scheduledAt: push.at)
        let request: HubRequest
        do { request = try PushRequests.request(entry, client: client, test: push.test, now: requestTime) } catch {
            throw .request(error)
        }
        return PublishPlan(
            push: push, story: story, entry: entry, request: request, refusal: push.force ? nil : refusal)
    }

    /// What makes this story a repeat, if anything.
    static func repeatOf(key: String, title: String, url: String?, knowledge: PublishKnowledge, now: Date)
        -> PublishRefusal?
    {
        var candidate = Candidate(
            key: key, linkKey: url.flatMap(StoryKey.canonicalLink), feedName: "publish", feedURL: "publish",
            item: FeedItem(title: title, link: url, published: now), firstSeen: now)
        candidate.previous = knowledge.byKey ?? (candidate.linkKey == nil ? nil : knowledge.byLink)
        switch StoryMatcher.match([candidate], recentPushes: knowledge.recentPushes)[0] {
        case .known(let record) where record.wasPushed || record.status == .pending: return .known(record)
        case .sameStory(let same): return .sameStory(same)
        case .known, .new, .tombstoned: return nil
        }
    }
}
