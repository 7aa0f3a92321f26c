import Foundation
import Logging
import NotificationHubs

/// Options of one `newspush run`.
public struct RunOptions: Sendable {
    public var dryRun = false
    /// Only these feeds (by name or URL); empty means all.
    public var feeds: [String] = []
    /// On a first run, push the N newest eligible items instead of recording a baseline.
    public var sendInitial: Int?
    /// Keep every hub request (with its token) for `--show-requests`.
    public var keepRequests = false

    public init(dryRun: Bool = false, feeds: [String] = [], sendInitial: Int? = nil, keepRequests: Bool = false) {
        self.dryRun = dryRun
        self.feeds = feeds
        self.sendInitial = sendInitial
        self.keepRequests = keepRequests
    }
}

/// Why a run could not be done at all (exit 1, 64 or 75).
public enum RunError: Error, Sendable, CustomStringConvertible {
    case state(StateError)
    case hub(String)
    case unknownFeed(String)

    public var description: String {
        switch self {
        case .state(let error): return error.description
        case .hub(let why): return why
        case .unknownFeed(let name): return "no feed named '\(name)' in the config (give a feed's name or URL)"
        }
    }
}

/// What a run produced.
public struct RunResult: Sendable {
    public var report: RunReport
    /// The hub requests built (sent or, in a dry run, not), when asked for.
    public var requests: [HubRequest]
}

/// The scheduled job, stage by stage: config → fetch → parse → classify → dedupe → plan → send →
/// record. Only this type knows the order.
public struct RunPipeline: Sendable {
    public var config: NewsPushConfig
    public var logger: Logger
    /// Replaces the libcurl transport to the hub (tests only).
    public var hubTransport: (any HubTransport)?
    public var retryPolicy = RetryPolicy()
    public var now: @Sendable () -> Date = { Date() }

    public init(config: NewsPushConfig, logger: Logger) {
        self.config = config
        self.logger = logger
    }

    public func run(_ options: RunOptions) throws(RunError) -> RunResult {
        let startedAt = now()
        let feeds = try selectedFeeds(options.feeds)
        let hub = try makeHubClient()

        // State: locked for the whole run unless this is a dry run, which writes nothing.
        let store = StateStore(path: config.statePath)
        if !options.dryRun {
            do { try store.lock() } catch { throw .state(error) }
        }
        defer { store.unlock() }
        let loaded: NewsPushState?
        do { loaded = try store.load() } catch { throw .state(error) }
        let firstRun = loaded == nil || loaded?.baselinePending == true
        if firstRun {
            if options.sendInitial != nil || config.policy.firstRun == .send {
                logger.notice("no state file at \(config.statePath): first run, sending \(options.sendInitial.map { "at most \($0) eligible item(s)" } ?? "every eligible item")")
            } else {
                logger.notice("no state file at \(config.statePath): first run, recording every item as a baseline and sending nothing")
            }
        }
        var state = loaded ?? NewsPushState()
        if !options.dryRun { state.baselinePending = nil }
        Self.settleInterruptedSends(&state)
        // Stories are also known by canonical link, so a feed that changes its guids is not news again.
        var keyByLink: [String: String] = [:]
        for (key, record) in state.stories {
            if let link = record.link.flatMap(StoryKey.canonicalLink), keyByLink[link] == nil { keyByLink[link] = key }
        }

        // Fetch and parse.
        let fetcher = FeedFetcher(settings: config.fetch, baseFolder: (config.file as NSString).deletingLastPathComponent)
        let validators = Dictionary(uniqueKeysWithValues: feeds.compactMap { feed in
            state.feeds[feed.url]?.validators.map { (feed.url, $0) }
        })
        // Feeds whose server asked for a pause (429/503 Retry-After) are not fetched until then.
        let fetchTime = now()
        let resting = Set(feeds.filter { (state.feeds[$0.url]?.retryAfter).map { $0 > fetchTime } ?? false }.map(\.url))
        let toFetch = feeds.map(\.url).filter { !resting.contains($0) }
        let fetchedNow = fetcher.fetch(toFetch, validators: validators)
        var fetchedByURL = Dictionary(zip(toFetch, fetchedNow), uniquingKeysWith: { a, _ in a })
        for url in resting {
            let until = state.feeds[url]!.retryAfter!
            fetchedByURL[url] = FetchedFeed(url: url, status: .error, body: Data(), finalURL: url,
                                            error: "\(url): not fetched: the server asked (Retry-After) for no request before \(FeedDates.format(until))")
        }
        let fetched = feeds.map { fetchedByURL[$0.url]! }
        logger.debug("fetched \(fetchedNow.count) feeds in \(Self.seconds(since: fetchTime))")
        let parseStart = Date()
        var report = RunReport(dryRun: options.dryRun, startedAt: startedAt, finishedAt: startedAt)
        var candidates: [Candidate] = []
        var unreadFeeds = Set<String>()
        let classifier = ItemClassifier(textModel: Self.loadTextModel(logger))
        let runTime = now()
        for (feed, result) in zip(feeds, fetched) {
            var feedReport = FeedReport(name: feed.name ?? feed.url, url: feed.url, status: result.status,
                                        httpStatus: result.httpStatus, items: 0, new: 0, error: result.error, movedTo: result.movedTo)
            if !options.dryRun, !resting.contains(feed.url) {
                state.feeds[feed.url, default: FeedRecord()].retryAfter = result.retryAfter
                state.feeds[feed.url, default: FeedRecord()].movedTo = result.movedTo
            }
            if let movedTo = result.movedTo {
                logger.warning("feed \(feed.url) moved permanently to \(movedTo): update the config")
            }
            if result.httpStatus == 410 {
                logger.error("feed \(feed.url) is GONE (410): the publisher removed it; take it out of the config")
            }
            if result.status == .ok {
                do {
                    let parsed = try FeedParser.parse(result.body, url: result.finalURL, contentType: result.contentType)
                    let name = feed.name ?? parsed.title ?? feed.url
                    feedReport.name = name
                    for problem in parsed.problems { logger.warning("\(name) (\(feed.url)): \(problem)") }
                    let keys = StoryKey.keys(for: parsed.items, feedURL: feed.url)
                    for (item, key) in zip(parsed.items, keys) {
                        let linkKey = item.link.flatMap(StoryKey.canonicalLink)
                        let previous = state.stories[key] ?? linkKey.flatMap { keyByLink[$0] }.flatMap { state.stories[$0] }
                        if previous == nil { feedReport.new += 1 }
                        var candidate = Candidate(key: key, linkKey: linkKey, feedName: name, feedURL: feed.url, item: item,
                                                  classification: classifier.classify(item, feedCategory: feed.category),
                                                  previous: previous, firstSeen: previous?.firstSeen ?? runTime)
                        candidate.tombstoned = previous == nil && state.tombstones[key] != nil
                        candidates.append(candidate)
                    }
                    feedReport.items = parsed.items.count
                } catch {
                    feedReport.status = .error
                    feedReport.error = "\(feed.url): \(error)"
                }
            }
            if feedReport.status == .error {
                report.summary.feedsFailed += 1
                logger.error("feed \(feedReport.name) failed: \(feedReport.error ?? "error")")
            } else {
                report.summary.feedsOk += 1
            }
            if !options.dryRun, let v = result.validators {
                state.feeds[feed.url, default: FeedRecord()].validators = v
            }
            if !options.dryRun, result.status != .error { state.feeds[feed.url, default: FeedRecord()].lastFetched = runTime }
            if feedReport.status != .ok { unreadFeeds.insert(feed.url) }
            report.feeds.append(feedReport)
        }
        // A feed that was not read this run (304, or an error) still holds its stories: keep them
        // from expiring, or they would come back as new once the feed is read again.
        if !options.dryRun, !unreadFeeds.isEmpty {
            for (key, record) in state.stories where unreadFeeds.contains(record.feed) { state.stories[key]?.lastSeen = runTime }
        }
        report.summary.itemsNew = Set(candidates.filter { $0.previous == nil }.map(\.key)).count
        logger.debug("parsed \(candidates.count) items in \(Self.seconds(since: parseStart))")
        let planStart = Date()

        // Plan.
        let policy = PushPolicy(settings: config.policy)
        let recentPushes = state.stories.values.compactMap { record -> PushPolicy.RecentPush? in
            guard [.pushed, .unknown, .sending].contains(record.status), let title = record.title,
                  let at = record.pushedAt, runTime.timeIntervalSince(at) <= TitleFingerprint.window else { return nil }
            return PushPolicy.RecentPush(title: TitleFingerprint(title), at: record.published ?? at)
        }
        var decisions = policy.decide(candidates, state: loaded, firstRun: firstRun, sendInitial: options.sendInitial, now: runTime,
                                      recentPushes: recentPushes)

        logger.debug("planned \(candidates.count) items in \(Self.seconds(since: planStart))")
        // Record every new item before anything is sent, so a crash never turns into a re-send.
        if !options.dryRun {
            for (candidate, decision) in zip(candidates, decisions) {
                record(candidate, decision: decision, in: &state, at: runTime)
            }
            try save(state, store)
        }

        // Send, newest first within each category, `hub.concurrency` at a time. Each batch's
        // intent (`sending`) is journalled and synced before its requests go out, and its outcomes
        // right after: a crash at any instant never leads to a second push of the same story.
        var requests: [HubRequest] = []
        let planned = decisions.indices.filter { decisions[$0] == .wouldPush }
            .sorted { (candidates[$0].classification.category!, candidates[$1].effectiveDate) < (candidates[$1].classification.category!, candidates[$0].effectiveDate) }
        var start = 0
        while start < planned.count {
            let batch = Array(planned[start..<min(planned.count, start + config.hub.concurrency)])
            start += batch.count
            var ready: [(index: Int, request: HubRequest, push: PushReport)] = []
            for index in batch {
                let candidate = candidates[index]
                let category = candidate.classification.category!
                let settings = config.categories[category]!
                let content = PushContent(category: category, title: candidate.item.title ?? candidate.item.link ?? "(untitled)",
                                          url: candidate.item.link ?? "", source: candidate.feedName, id: candidate.key,
                                          summary: candidate.item.summary ?? "")
                let properties = PushRequests.properties(content, settings: settings)
                var push = PushReport(category: category, tags: settings.tags, properties: properties, itemKey: candidate.key,
                                      status: .wouldSend)
                do {
                    let request = try PushRequests.request(content, properties: properties, settings: settings, client: hub, now: now())
                    if options.keepRequests { requests.append(request) }
                    ready.append((index, request, push))
                } catch {
                    push.status = .failed
                    push.error = error.description
                    decisions[index] = .failed
                    report.pushes.append(push)
                    report.summary.pushesFailed += 1
                    logger.error("push of \(candidate.key) not built: \(error.description)")
                    if !options.dryRun {
                        let entry = JournalEntry(key: candidate.key, status: .failed, at: now(), error: error.description)
                        entry.apply(to: &state)
                        try journal([entry], store)
                    }
                }
            }
            if options.dryRun {
                report.pushes.append(contentsOf: ready.map(\.push))
                continue
            }
            let sendingAt = now()
            let intents = ready.map { JournalEntry(key: candidates[$0.index].key, status: .sending, at: sendingAt) }
            for entry in intents { entry.apply(to: &state) }
            try journal(intents, store)
            let outcomes = PushRequests.sendAll(ready.map(\.request), client: hub)
            var results: [JournalEntry] = []
            for ((index, _, push), outcome) in zip(ready, outcomes) {
                var push = push
                let key = candidates[index].key
                push.httpStatus = outcome.httpStatus
                let at = now()
                switch outcome {
                case .accepted(_, let id, let trackingId, _):
                    push.status = .sent
                    push.notificationId = id
                    decisions[index] = .pushed
                    results.append(JournalEntry(key: key, status: .pushed, at: at, notificationId: id))
                    report.summary.pushesSent += 1
                    logger.info("pushed \(key) to [\(push.tags)]", metadata: [
                        "notification_id": "\(id ?? "-")", "tracking_id": "\(trackingId ?? "-")"])
                case .refused(_, let reason), .notAccepted(_, let reason), .unknown(_, let reason):
                    let failure = Self.failure(outcome, reason: reason)
                    push.status = .failed
                    push.error = failure.report
                    decisions[index] = failure.decision
                    results.append(JournalEntry(key: key, status: failure.status, at: at, error: reason))
                    report.summary.pushesFailed += 1
                    logger.error("push of \(key) \(failure.log): \(reason)")
                }
                report.pushes.append(push)
            }
            for entry in results { entry.apply(to: &state) }
            try journal(results, store)
        }

        report.items = zip(candidates, decisions).map { candidate, decision in
            ItemReport(key: candidate.key, feed: candidate.feedName, title: candidate.item.title, link: candidate.item.link,
                       category: candidate.classification.category, confidence: candidate.classification.confidence,
                       decision: decision)
        }
        if !options.dryRun {
            state.prune(retention: config.stateRetention, now: runTime)
            try save(state, store)
        }
        report.finishedAt = now()
        return RunResult(report: report, requests: requests)
    }

    // MARK: Stages

    private func selectedFeeds(_ names: [String]) throws(RunError) -> [FeedSettings] {
        guard !names.isEmpty else { return config.feeds }
        var selected: [FeedSettings] = []
        for name in names {
            guard let feed = config.feeds.first(where: { $0.name == name || $0.url == name }) else { throw .unknownFeed(name) }
            selected.append(feed)
        }
        return selected
    }

    /// The hub client for the configured hub over libcurl (or the injected transport).
    public func makeHubClient() throws(RunError) -> NotificationHubClient {
        let connection: HubConnectionString
        do {
            connection = try HubConnectionString(parsing: config.hub.connectionString)
        } catch {
            throw .hub(error.description)
        }
        let transport = hubTransport ?? CurlHubTransport(
            userAgent: "newspush/\(NewsPushVersion.current) (NHub/\(config.hub.apiVersion))", timeout: 30)
        return NotificationHubClient(connection: connection, hubName: config.hub.name, endpoint: config.hub.endpoint,
                                     apiVersion: config.hub.apiVersion, transport: transport, retryPolicy: retryPolicy)
    }

    private func record(_ candidate: Candidate, decision: ItemDecision, in state: inout NewsPushState, at time: Date) {
        if var existing = state.stories[candidate.key] {
            existing.lastSeen = time
            // A pending story that is no longer eligible stops being retried.
            if existing.status == .pending, decision != .wouldPush, decision != .sameStory { existing.status = .seen }
            state.stories[candidate.key] = existing
            return
        }
        state.stories[candidate.key] = StoryRecord(
            status: decision == .wouldPush ? .pending : .seen, feed: candidate.feedURL, title: candidate.item.title,
            link: candidate.item.link, category: candidate.classification.category?.rawValue, firstSeen: time,
            lastSeen: time, published: candidate.item.published, pushedAt: nil, notificationId: nil,
            error: nil)
    }

    /// A `sending` record means a run died mid-send: the outcome is unknown, never re-send.
    static func settleInterruptedSends(_ state: inout NewsPushState) {
        for (key, record) in state.stories where record.status == .sending {
            state.stories[key]?.status = .unknown
            state.stories[key]?.error = "the run sending it was interrupted; outcome unknown, not re-sent"
        }
    }

    /// How a send that did not succeed is recorded, reported and logged (SPEC §6): refused for
    /// good → failed; not accepted → pending, retried while fresh; unknown → never re-sent.
    static func failure(_ outcome: SendOutcome, reason: String)
        -> (status: StoryRecord.Status, decision: ItemDecision, report: String, log: String) {
        switch outcome {
        case .notAccepted: return (.pending, .pending, reason, "not accepted, will retry next run while fresh")
        case .unknown: return (.unknown, .failed, "outcome unknown, not retried: \(reason)", "has an unknown outcome; it will not be sent again")
        default: return (.failed, .failed, reason, "refused")
        }
    }

    /// The bundled text model, or none (items of feeds without a category stay unclassified).
    static func loadTextModel(_ logger: Logger) -> TextModel? {
        do { return try TextModel.bundled() } catch {
            logger.warning("text classifier unavailable (\(error)); items of feeds without a category stay unclassified")
            return nil
        }
    }

    static func seconds(since start: Date) -> String {
        String(format: "%.3f s", Date().timeIntervalSince(start))
    }

    private func journal(_ entries: [JournalEntry], _ store: StateStore) throws(RunError) {
        do { try store.appendJournal(entries) } catch { throw .state(error) }
    }

    private func save(_ state: NewsPushState, _ store: StateStore) throws(RunError) {
        do { try store.save(state) } catch { throw .state(error) }
    }
}
