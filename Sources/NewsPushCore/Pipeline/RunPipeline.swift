import Foundation
import Logging
import NotificationHubs

/// Options of one `newspush run`.
public struct RunOptions: Sendable {
    public var dryRun = false
    /// Only these feeds (by name or URL); empty means all.
    public var feeds: [String] = []
    /// Feeds read for the first time push their N newest eligible items instead of a baseline.
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

/// Why a run could not be done at all.
public enum RunError: Error, Sendable, CustomStringConvertible {
    case ledger(LedgerError)
    case connectionString(HubError)
    /// A push that cannot be made into a request (a bad `--tags` expression, a message too large).
    case request(HubError)
    case unknownFeed(String, known: [String])
    /// `publish --replace KEY` names no story that was pushed.
    case unknownStory(String, reason: String)

    public var description: String {
        switch self {
        case .ledger(let error): return error.description
        case .connectionString(let error), .request(let error): return error.description
        case .unknownFeed(let name, let known):
            return "no feed named '\(name)' in the config; feeds: \(known.joined(separator: ", "))"
        case .unknownStory(let key, let reason):
            return "cannot correct '\(key)': \(reason)"
        }
    }
}

/// How far a run has got, for a progress line.
public enum RunProgress: Sendable, Equatable {
    case fetching(done: Int, total: Int)
    case sending(done: Int, total: Int)
}

/// What a run produced.
public struct RunResult: Sendable {
    public var report: RunReport
    /// The hub requests built (sent or, in a dry run, not), when asked for.
    public var requests: [HubRequest]
}

/// The scheduled job. Each stage is a function that takes values and returns values; only
/// `run` knows their order.
public struct RunPipeline: Sendable {
    public var config: NewsPushConfig
    public var logger: Logger
    /// Replaces the libcurl transport to the hub (tests only).
    public var hubTransport: (any HubTransport)?
    /// Replaces the wait between retries (tests record instead of sleeping).
    public var retrySleep: (@Sendable (Double) -> Void)?
    public var now: @Sendable () -> Date = { Date() }
    /// Told how fetching and sending advance (the command line shows it on a terminal).
    public var progress: (@Sendable (RunProgress) -> Void)?

    public init(config: NewsPushConfig, logger: Logger) {
        self.config = config
        self.logger = logger
    }

    public func run(_ options: RunOptions) throws(RunError) -> RunResult {
        let feeds = try selectedFeeds(options.feeds)
        let client = try makeHubClient()
        do { return try run(feeds, client: client, options: options) } catch { throw .ledger(error) }
    }

    private func run(_ feeds: [FeedSettings], client: NotificationHubClient, options: RunOptions) throws(LedgerError) -> RunResult {
        let startedAt = now()
        let lock = options.dryRun ? nil : try LedgerLock(ledgerPath: LedgerLocation(configured: config.statePath).databasePath)
        defer { withExtendedLifetime(lock) {} }
        let ledger = try Ledger.open(configured: config.statePath, access: options.dryRun ? .read : .write)
        if !options.dryRun {
            try ledger.settleInterruptedSends(at: now())
            try ledger.settleScheduledSends(at: now())
        }
        let records = try ledger.feeds(feeds.map(\.url))

        let fetched = FeedFetcher(settings: config.fetch, baseFolder: config.folder).fetch(feeds, records: records, now: now()) {
            progress?(.fetching(done: $0, total: $1))
        }
        let reads = read(feeds, fetched)
        let identified = try StoryIdentifier.identify(reads, records: records, policy: config.policy, ledger: ledger, now: now())
        announceBaselines(identified, ledger: ledger, options: options)
        let evidence = identified.map { ItemClassifier.evidence($0.item, feedCategory: $0.sectionCategory) }
        let candidates = ItemClassifier(text: Self.loadTextClassifier(for: identified, evidence: evidence, logger))
            .classified(identified, evidence: evidence)
        let matches = StoryMatcher.match(candidates, recentPushes: try ledger.recentPushes(since: now().addingTimeInterval(-TitleFingerprint.window)))
        let plan = RunPlanner.plan(candidates, matches: matches, waiting: try ledger.outbox(),
                                   sentInWindow: try ledger.pushesSent(since: now().addingTimeInterval(-config.policy.budgetWindow)),
                                   sendInitial: options.sendInitial, config: config, now: now())
        let requests = options.keepRequests ? plan.toSend.compactMap { try? PushRequests.request($0, client: client, now: now()) } : []

        var sent: SendResult?
        if !options.dryRun {
            try ledger.record(RunRecord.make(reads: reads, records: records, candidates: candidates, plan: plan, at: now()))
            var sender = OutboxSender(client: client, concurrency: config.hub.concurrency, logger: logger, now: now)
            sender.progress = { progress?(.sending(done: $0, total: $1)) }
            sent = sender.send(plan.toSend, ledger: ledger)
            try ledger.prune(retention: config.stateRetention, now: now())
        }
        let handled: [OutboxEntry] = plan.due + plan.held + plan.expired
        let outboxStories = try ledger.stories(keys: Set(handled.map(\.storyKey)).subtracting(candidates.map(\.key)))
        let facts = RunFacts(dryRun: options.dryRun, startedAt: startedAt, reads: reads, candidates: candidates, plan: plan,
                             matches: matches, policy: config.policy, now: now(), sent: sent, outboxStories: outboxStories)
        return RunResult(report: RunReport.make(facts, finishedAt: now()), requests: requests)
    }

    // MARK: Stages and their helpers

    private func selectedFeeds(_ names: [String]) throws(RunError) -> [FeedSettings] {
        guard !names.isEmpty else { return config.feeds }
        var selected: [FeedSettings] = []
        for name in names {
            guard let feed = config.feeds.first(where: { $0.name == name || $0.url == name }) else {
                throw .unknownFeed(name, known: config.feeds.map { $0.name ?? $0.url })
            }
            selected.append(feed)
        }
        return selected
    }

    /// The parse stage: each fetched document read as a feed; failures are named in the report
    /// (and logged at info level, for `-v`).
    private func read(_ feeds: [FeedSettings], _ fetched: [FetchedFeed]) -> [(settings: FeedSettings, read: FeedRead)] {
        zip(feeds, fetched).map { settings, fetched in
            let read = FeedRead.read(fetched, base: fetched.finalURL, budget: config.fetch.parseBudget)
            let name = settings.name ?? read.feed?.title ?? settings.url
            for problem in read.feed?.problems ?? [] { logger.info("\(name) (\(settings.url)): \(problem)") }
            if let movedTo = fetched.movedTo { logger.info("feed \(settings.url) moved permanently to \(movedTo): update the config") }
            if fetched.httpStatus == 410 { logger.info("feed \(settings.url) is GONE (410): the publisher removed it; take it out of the config") }
            if let error = read.error { logger.info("feed \(name) failed: \(error)") }
            return (settings, read)
        }
    }

    /// Says which feeds record a baseline this run, and why nothing of theirs is pushed.
    private func announceBaselines(_ candidates: [Candidate], ledger: Ledger, options: RunOptions) {
        let baseline = Dictionary(grouping: candidates.filter(\.inBaselineFeed), by: \.feedURL)
        guard !baseline.isEmpty else { return }
        let what = options.sendInitial.map { "sending at most \($0) eligible item(s) of them" } ?? "recording every item as a baseline and sending nothing"
        if ledger.isNew {
            logger.info("no ledger at \(ledger.path): first run, \(what)")
            return
        }
        for (url, items) in baseline.sorted(by: { $0.key < $1.key }) {
            logger.info("feed \(items[0].feedName) (\(url)) is read for the first time: \(items.count) item(s), \(what) (first_run: send on the feed pushes them)")
        }
    }

    /// The hub client for the configured hub over libcurl (or the injected transport).
    public func makeHubClient() throws(RunError) -> NotificationHubClient {
        let connection: HubConnectionString
        do { connection = try HubConnectionString(parsing: config.hub.connectionString) } catch { throw .connectionString(error) }
        let transport = hubTransport ?? CurlHubTransport(
            userAgent: "newspush/\(NewsPushVersion.current) (NHub/\(config.hub.apiVersion))", timeout: config.hub.timeout)
        var retry = RetryPolicy(maxRetries: config.hub.retries, baseDelay: config.hub.retryDelay)
        if let retrySleep { retry.sleep = retrySleep }
        return NotificationHubClient(connection: connection, hubName: config.hub.name, endpoint: config.hub.endpoint,
                                     apiVersion: config.hub.apiVersion, transport: transport, retryPolicy: retry)
    }

    /// Whether a candidate needs the sentence encoder: new, outside a baseline, and without
    /// feed or section evidence (`evidence`: `ItemClassifier.evidence` of each).
    static func wantsTextEncoder(_ candidates: [Candidate], evidence: [Classification?]) -> Bool {
        zip(candidates, evidence).contains { $0.wantsEncoder && $1 == nil }
    }

    /// The bundled text models, or none (items of feeds without a category stay unclassified).
    /// The sentence encoder is loaded only when a new item (not a baseline) has no feed or
    /// section evidence: otherwise the bag-of-words model alone classifies the rest.
    static func loadTextClassifier(for candidates: [Candidate], evidence: [Classification?], _ logger: Logger) -> TextClassifier? {
        do {
            let (classifier, warning) = try TextClassifier.bundled(wantsTextEncoder(candidates, evidence: evidence) ? .full : .none)
            if let warning { logger.warning("\(warning)") }
            return classifier
        } catch {
            logger.warning("text classifier unavailable (\(error)); items of feeds without a category stay unclassified")
            return nil
        }
    }
}

extension NewsPushConfig {
    /// The folder of the config file: relative feed paths and the ledger are found from here.
    public var folder: String { (file as NSString).deletingLastPathComponent }
}

extension Candidate {
    /// Only a new item outside a baseline may be pushed: the sentence encoder runs for no other.
    var wantsEncoder: Bool { isNew && !inBaselineFeed }
}

extension ItemClassifier {
    /// The classify stage: every candidate with its category and confidence (`evidence`: each
    /// one's `ItemClassifier.evidence`, when already known).
    func classified(_ candidates: [Candidate], evidence: [Classification?]? = nil) -> [Candidate] {
        let classifications = classify(candidates.map { ($0.item, $0.sectionCategory) }, evidence: evidence,
                                       withEncoder: candidates.map(\.wantsEncoder))
        return zip(candidates, classifications).map { candidate, classification in
            var candidate = candidate
            candidate.classification = classification
            return candidate
        }
    }
}
