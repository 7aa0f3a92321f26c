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

    public init(category: NewsCategory, title: String? = nil, message: String? = nil, url: String? = nil,
                tags: String? = nil, test: Bool = false) {
        self.category = category
        self.title = title
        self.message = message
        self.url = url
        self.tags = tags
        self.test = test
    }
}

/// A manual push ready to go.
public struct PublishPlan: Sendable {
    public var key: String
    public var tags: String
    public var format: PushFormat
    public var properties: [String: String]
    public var request: HubRequest
    /// Whether sending it records the story as pushed (not for test sends or tag overrides,
    /// which are trials to a few devices).
    public var recordsStory: Bool
}

/// What became of a manual push.
public struct PublishResult: Sendable {
    public var outcome: SendOutcome
    public var testOutcome: TestSendOutcome?
}

/// Sends one push by hand, recorded in the state file so the scheduled run does not repeat it.
public struct Publisher: Sendable {
    public var config: NewsPushConfig
    public var logger: Logger
    public var hubTransport: (any HubTransport)?
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

    public func plan(_ push: ManualPush) throws(RunError) -> PublishPlan {
        var pipeline = RunPipeline(config: config, logger: logger)
        pipeline.hubTransport = hubTransport
        let client = try pipeline.makeHubClient()
        let settings = config.categories[push.category]!
        let key = Self.key(for: push)
        let content = PushContent(category: push.category, title: push.title ?? push.message ?? "", url: push.url ?? "",
                                  source: "newsroom", id: key, message: push.message)
        do {
            let built = try PushRequests.request(content, settings: settings, tags: push.tags, client: client,
                                                 test: push.test, now: now())
            return PublishPlan(key: key, tags: push.tags ?? settings.tags, format: settings.format, properties: built.properties,
                               request: built.request, recordsStory: !push.test && push.tags == nil)
        } catch {
            throw .hub(error.description)
        }
    }

    /// The state's record of this story when it was already pushed (or may have been).
    public func previousPush(_ plan: PublishPlan) throws(RunError) -> StoryRecord? {
        let state: NewsPushState?
        do { state = try StateStore(path: config.statePath).load() } catch { throw .state(error) }
        guard let state else { return nil }
        let records = [state.stories[plan.key]] + state.stories.values.filter {
            plan.key.hasPrefix("link:") && $0.link.flatMap(StoryKey.canonicalLink).map { "link:\($0)" } == plan.key
        }
        return records.compactMap { $0 }.first { [.pushed, .sending, .unknown].contains($0.status) }
    }

    /// Sends the plan under the run lock, journalling the intent first and the outcome after.
    public func send(_ plan: PublishPlan) throws(RunError) -> PublishResult {
        var pipeline = RunPipeline(config: config, logger: logger)
        pipeline.hubTransport = hubTransport
        let client = try pipeline.makeHubClient()
        guard plan.recordsStory else {
            let outcome = client.send(plan.request)
            return PublishResult(outcome: outcome, testOutcome: Self.testOutcome(outcome))
        }
        let store = StateStore(path: config.statePath)
        do { try store.lock() } catch { throw .state(error) }
        defer { store.unlock() }
        var state: NewsPushState
        do {
            if let loaded = try store.load() {
                state = loaded
            } else {
                state = NewsPushState()
                state.baselinePending = true
            }
        } catch { throw .state(error) }
        let at = now()
        var record = state.stories[plan.key] ?? StoryRecord(
            status: .pending, feed: "manual", title: plan.properties["title"], link: plan.properties["url"].flatMap { $0.isEmpty ? nil : $0 },
            category: plan.properties["category"], firstSeen: at, lastSeen: at, published: at)
        record.status = .sending
        record.pushedAt = at
        state.stories[plan.key] = record
        do { try store.save(state) } catch { throw .state(error) }
        let outcome = client.send(plan.request)
        let entry: JournalEntry
        switch outcome {
        case .accepted(_, let id, _, _): entry = JournalEntry(key: plan.key, status: .pushed, at: now(), notificationId: id)
        case .refused(_, let reason): entry = JournalEntry(key: plan.key, status: .failed, at: now(), error: reason)
        case .notAccepted(_, let reason): entry = JournalEntry(key: plan.key, status: .failed, at: now(), error: reason)
        case .unknown(_, let reason): entry = JournalEntry(key: plan.key, status: .unknown, at: now(), error: reason)
        }
        entry.apply(to: &state)
        do { try store.save(state) } catch { throw .state(error) }
        return PublishResult(outcome: outcome, testOutcome: nil)
    }

    static func testOutcome(_ outcome: SendOutcome) -> TestSendOutcome? {
        if case .accepted(_, _, _, let body) = outcome, !body.isEmpty { return TestSendOutcome(xml: body) }
        return nil
    }
}
