import Foundation
import Logging
import NewsClassifier
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// What one `newspush run` (or `preview`) is asked to do.
public struct RunRequest: Sendable {
    /// A preview: fetch, parse, classify and plan, send and write nothing.
    public var dryRun = false
    /// Only these feeds (by name or URL); empty means all.
    public var feeds: [String] = []
    /// Feeds read for the first time push their N newest eligible items instead of a baseline.
    public var sendInitial: Int?
    /// Keep every hub request (with its token) for `--show-requests`.
    public var keepRequests = false
    /// Seconds to wait for another job's lock on the ledger (nil: not at all; the watcher waits).
    public var lockWait: Double?
    /// Documents already in hand, by feed URL (a WebSub distribution): read instead of fetched.
    public var delivered: [String: FetchedFeed] = [:]
    /// This process found the ledger whole before (a watcher's earlier cycle): its pages are not
    /// checked again (a `PRAGMA quick_check` of a large ledger on every cycle of a resident
    /// watcher, whenever the back-end or the desk keeps a `-wal` file, was its slowest part).
    public var ledgerChecked = false

    /// A run (or, with `dryRun`, a preview) of `feeds` (all when empty).
    public init(
        dryRun: Bool = false, feeds: [String] = [], sendInitial: Int? = nil, keepRequests: Bool = false,
        lockWait: Double? = nil, delivered: [String: FetchedFeed] = [:]
    ) {
        self.delivered = delivered
        self.dryRun = dryRun
        self.feeds = feeds
        self.sendInitial = sendInitial
        self.keepRequests = keepRequests
        self.lockWait = lockWait
    }
}

/// How far a run has got, for a progress line.
public enum RunProgress: Sendable, Equatable {
    case fetching(done: Int, total: Int)
    case sending(done: Int, total: Int)
}

/// What a run produced.
public struct RunResult: Sendable {
    /// The report (SPEC §3).
    public var report: RunReport
    /// The hub request of each push (sent or, in a dry run, not), when asked for; a push whose
    /// request cannot be built holds the reason instead.
    public var requests: [Result<HubRequest, HubError>]
    /// How long the run waited for the ledger's lock, in seconds.
    public var lockWait: Double = 0
    /// How each feed's fetch went, by URL, for the watcher's schedule.
    public var fetches: [String: FetchOutcome] = [:]
}

/// The scheduled job, as one session: the lock, the ledger, every stage in order, the record
/// and the report. Each stage is a function of the core that takes values and returns values;
/// only this session knows their order and talks to the ledger.
public struct RunSession: Sendable {
    /// The newsroom the run works for.
    public var context: SessionContext
    /// Told how fetching and sending advance (the command line shows it on a terminal).
    public var progress: (@Sendable (RunProgress) -> Void)?

    /// A run session for `context`.
    public init(context: SessionContext) {
        self.context = context
    }

    private var config: NewsPushConfig { context.config }
    private var logger: Logger { context.logger }

    /// Runs (or previews) once: exit-worthy failures are thrown, everything else is reported.
    public func run(_ request: RunRequest) throws(SessionError) -> RunResult {
        guard !config.feeds.isEmpty else {
            // As `check` says: a run would fetch nothing (exit 78, not a silent success).
            throw .config(
                ConfigError(problems: [
                    ConfigProblem(
                        file: config.file, line: 0, key: "feeds",
                        message: "the feed list is empty: a run would fetch nothing")
                ]))
        }
        for warning in ConfigCheck.warnings(config) where warning.check.hasPrefix("policy.") {
            logger.warning("\(warning.check) \(warning.detail)")
        }
        let feeds = try selectedFeeds(request.feeds)
        let client = try context.hubClient()
        let now = context.clock.now()
        return try context.withLedger(
            request.dryRun ? .read : .write, wait: request.lockWait, checked: request.ledgerChecked
        ) { ledger, lock in
            var result = try run(feeds, ledger: ledger, client: client, request: request, now: now)
            result.lockWait = lock?.waited ?? 0
            return result
        }
    }

    /// The machine's clock against the feeds' servers: too far off, a run stops before deciding
    /// anything (nothing recorded: the items are new again once the clock is right); a preview
    /// says so and goes on.
    private func checkClock(_ feeds: [FeedTally], dryRun: Bool) throws(SessionError) {
        let readings = feeds.compactMap { $0.read.fetched.clock }
        guard let problem = ClockCheck.problem(readings, of: "the feeds' servers") else { return }
        guard dryRun else { throw .clockSkew(problem) }
        logger.warning("\(problem) (a preview: shown as judged by this clock)")
    }

    /// The plan with each new story's push to everyone excluding the readers it already went
    /// to by name (`PersonalExclusions`); those it cannot exclude are logged.
    private func excludingPersonalRecipients(_ plan: RunPlan, recipients: [String: [String]]) -> RunPlan {
        guard !recipients.isEmpty else { return plan }
        var plan = plan
        func exclude(_ entry: inout OutboxEntry) {
            let readers = Self.personalKeys(of: entry).flatMap { recipients[$0] ?? [] }
            let twice = PersonalExclusions.apply(to: &entry, readers: readers)
            if !twice.isEmpty { logger.warning("\(entry.storyKey): \(PersonalExclusions.note(twice))") }
        }
        for index in plan.newEntries.indices { exclude(&plan.newEntries[index]) }
        for index in plan.newHolds.indices { exclude(&plan.newHolds[index]) }
        return plan
    }

    /// The keys a personal push of `entry`'s story was recorded under: its own, and the key
    /// `publish --user --url` gives the story's link.
    static func personalKeys(of entry: OutboxEntry) -> [String] {
        let link = entry.properties["url"].flatMap(StoryKey.canonicalLink).map { "link:" + $0 }
        return [entry.storyKey] + (link.map { [$0] } ?? [])
    }

    /// The stages in order, with the ledger open (and locked, unless a preview). Each feed is
    /// read, identified, classified and settled as it arrives (`list`); what the plan needs
    /// stays in memory, the rest goes to the run's item log.
    private func run(
        _ feeds: [FeedSettings], ledger: Ledger, client: NotificationHubClient, request: RunRequest,
        now: Date
    ) throws -> RunResult {
        let interrupted = request.dryRun ? [] : try RunLoad.settle(ledger, now: now)
        let records = try ledger.feeds(feeds.map(\.url))
        let history = try RunLoad.history(ledger, policy: config.policy, now: now)
        var models = TextModels(logger: logger)
        let listing = try list(
            feeds, records: records, ledger: ledger, waiting: Set(history.waiting.map(\.storyKey)), request: request,
            models: &models, now: now)
        logProblems(listing.feeds)
        try checkClock(listing.feeds, dryRun: request.dryRun)
        announceBaselines(listing.feeds, ledgerIsNew: ledger.isNew, ledgerPath: ledger.path, request: request)
        let open = models.classified(listing.open)
        let names = listing.feeds.map { (name: $0.name, url: $0.settings.url) }
        let pulled = StoryMatcher.neighbours(of: open, in: listing.log, feeds: names)
        // The walk read every feed's chunk back: one that could not be read stops the run here,
        // before anything is decided on items that went missing.
        if let failure = listing.log.readFailure { throw SessionError.unreadable(path: "item log", reason: failure) }
        let decided = (open + pulled).sorted { $0.position < $1.position }
        let matches = StoryMatcher.match(decided, recentPushes: history.recentPushes)
        var plan = RunPlanner.plan(
            decided, matches: matches, waiting: history.waiting, sentInWindow: history.sentInWindow,
            sendInitial: request.sendInitial, config: config, now: now)
        let recipients = try ledger.personalRecipients(
            of: (plan.newEntries + plan.newHolds).flatMap { Self.personalKeys(of: $0) })
        plan = excludingPersonalRecipients(plan, recipients: recipients)
        let requests = request.keepRequests ? Self.requests(plan.toSend, client: client) : []
        let sent =
            request.dryRun
            ? nil
            : try recordAndSend(
                RunRecord.make(
                    feeds: listing.feeds, records: records, log: listing.log,
                    open: Dictionary(open.map { ($0.position, $0) }, uniquingKeysWith: { a, _ in a }), plan: plan,
                    at: now), plan: plan, ledger: ledger, client: client, now: now)
        let handled: [OutboxEntry] = plan.due + plan.held + plan.expired
        let outboxStories = try ledger.stories(keys: Set(handled.map(\.storyKey)).subtracting(listing.listedOutboxKeys))
        let facts = RunFacts(
            dryRun: request.dryRun, startedAt: now, feeds: listing.feeds, log: listing.log, decided: decided,
            pulled: Dictionary(
                pulled.compactMap { candidate in
                    ItemSettling.settledDecision(candidate, sendInitial: request.sendInitial).map {
                        (candidate.position, $0)
                    }
                }, uniquingKeysWith: { a, _ in a }),
            plan: plan, matches: matches, policy: config.policy, now: now, sent: sent, outboxStories: outboxStories,
            listedOutboxKeys: listing.listedOutboxKeys, itemsNew: listing.newKeys.count)
        var report = RunReport.make(facts, finishedAt: context.clock.now())
        report.interruptedSends = interrupted.isEmpty ? nil : interrupted.map(PushReport.interrupted)
        var result = RunResult(report: report, requests: requests)
        result.fetches = Self.outcomes(listing.feeds, at: now)
        return result
    }

    /// How each feed's fetch went, for the watcher: a first read's stories are a baseline, not a change.
    static func outcomes(_ feeds: [FeedTally], at now: Date) -> [String: FetchOutcome] {
        Dictionary(
            feeds.map { tally in
                var outcome = FetchOutcome.of(
                    fetched: tally.read.fetched, failed: tally.read.failure != nil,
                    newItems: tally.firstRead ? 0 : tally.newItems, ttlMinutes: tally.read.feed?.ttl, at: now)
                if tally.read.fetched.status == .ok {
                    outcome.webSub = WebSubLinks.discover(
                        linkHeader: tally.read.fetched.linkHeader, documentLinks: tally.read.feed?.links ?? [],
                        fetchedURL: tally.read.fetched.finalURL)
                }
                return (tally.settings.url, outcome)
            }, uniquingKeysWith: { first, _ in first })
    }

    /// The hub requests the plan's pushes would make (`--show-requests`), signed now.
    private static func requests(_ entries: [OutboxEntry], client: NotificationHubClient) -> [Result<
        HubRequest, HubError
    >] {
        entries.map { entry in
            Result { () throws(HubError) -> HubRequest in
                try PushRequests.request(entry, client: client, now: SessionClock.signingTime())
            }
        }
    }

    /// The record stage in one transaction, then the send, the editors' notices of new holds,
    /// the hub's outcome counts of earlier alerts, and the prune.
    private func recordAndSend(
        _ record: RunRecord, plan: RunPlan, ledger: Ledger, client: NotificationHubClient, now: Date
    ) throws -> SendResult {
        try ledger.record(record)
        var sender = OutboxSender(client: client, concurrency: config.hub.concurrency, logger: logger, now: now)
        sender.progress = { progress?(.sending(done: $0, total: $1)) }
        let sent = sender.send(plan.toSend, journal: ledger)
        if sent.stop == nil {
            try tellEditors(plan.newHolds, sender: sender, ledger: ledger, now: now)
            AlertOutcomes.collect(client: client, ledger: ledger, now: now, logger: logger)
        }
        try ledger.prune(retention: config.stateRetention, now: now)
        return sent
    }

    /// What reading every feed left: each feed's tally, its items in the log, the candidates the
    /// plan decides, and the counts the report needs of the rest.
    struct Listing {
        var feeds: [FeedTally]
        var log: ItemLog
        var open: [Candidate] = []
        /// The keys of new items (the summary counts distinct stories).
        var newKeys = Set<String>()
        /// The story keys of waiting outbox entries that an item listed.
        var listedOutboxKeys = Set<String>()

        /// One feed's identified and classified items settled and logged; returns its tally.
        mutating func add(
            _ identified: [Candidate], feed index: Int, tally: FeedTally, waiting: Set<String>, sendInitial: Int?
        ) -> FeedTally {
            var tally = tally
            let (listed, open) = ItemSettling.settle(identified, sendInitial: sendInitial)
            log.append(feed: index, listed)
            self.open += open
            for candidate in identified {
                if candidate.isNew {
                    tally.newItems += 1
                    newKeys.insert(candidate.key)
                }
                if waiting.contains(candidate.key) { listedOutboxKeys.insert(candidate.key) }
            }
            tally.baselines = listed.filter { $0.decision == .baseline }.count
            tally.firstRead = identified.first?.inBaselineFeed ?? false
            return tally
        }
    }

    /// The read, identify, classify and settle stages, pulled in batches as the feeds arrive
    /// (the fetch loop runs on a thread of its own): the ledger is asked about a whole batch's
    /// keys in one round of queries, each feed's items go to the log, and the documents and
    /// items are let go before the next batch. A ledger error stops the fetches still to come.
    /// `waiting`: the story keys of the outbox.
    private func list(
        _ feeds: [FeedSettings], records: [String: FeedRecord], ledger: Ledger, waiting: Set<String>,
        request: RunRequest, models: inout TextModels, now: Date
    ) throws(LedgerError) -> Listing {
        var listing = Listing(
            feeds: feeds.map { FeedTally(settings: $0, read: FeedRead(notFetched: $0.url)) },
            log: ItemLog(feedCount: feeds.count))
        try FeedReading.readEach(
            feeds, records: records, delivered: request.delivered, settings: config.fetch, baseFolder: config.folder,
            now: now,
            progress: { progress?(.fetching(done: $0, total: $1)) }
        ) { (batch) throws(LedgerError) in
            let candidates = batch.map { index, read in
                StoryIdentifier.candidates(
                    feeds[index], read: read, feedIndex: index, record: records[feeds[index].url],
                    policy: config.policy, now: now)
            }
            let all = candidates.flatMap { $0 }
            let known = all.isEmpty ? KnownStories() : try RunLoad.known(all, in: ledger)
            for (feed, feedCandidates) in zip(batch, candidates) {
                let identified = models.settledClassified(
                    StoryIdentifier.identify(feedCandidates, known: known, now: now))
                listing.feeds[feed.index] = listing.add(
                    identified, feed: feed.index,
                    tally: FeedTally(settings: feeds[feed.index], read: feed.read.withoutItems()),
                    waiting: waiting, sendInitial: request.sendInitial)
            }
        }
        return listing
    }

    // MARK: Steps of the session

    /// `review.notify`: one push to the editors' tag expression when this run held something,
    /// saying how many wait and the newest headline; journalled like any push, as a notice.
    private func tellEditors(_ held: [OutboxEntry], sender: OutboxSender, ledger: Ledger, now: Date)
        throws(LedgerError)
    {
        guard let tags = config.review.notifyTags, let newest = held.last else { return }
        let waiting = try ledger.heldPushes().count
        let headline = newest.properties["title"] ?? newest.storyKey
        let text =
            "\(waiting) alert\(waiting == 1 ? "" : "s") \(waiting == 1 ? "waits" : "wait") for review. Newest: \(headline)"
        var settings = config.settings(for: newest.category)
        settings.format = .template
        let content = PushContent(
            category: newest.category, title: headline, url: "", source: "newspush", id: "review:\(newest.id)",
            message: text)
        let notice = OutboxEntry(
            storyKey: "review:\(newest.id)", kind: .notice, origin: .run, category: newest.category, format: .template,
            tags: tags, properties: PushRequests.properties(content, settings: settings), createdAt: now,
            freshUntil: now.addingTimeInterval(config.policy.maxAge), expiresAfter: settings.expiry)
        try ledger.enqueue(notice, story: nil)
        var outcome = sender.send([notice], journal: ledger).outcomes.first
        if var unsent = outcome, unsent.status == .pending {
            // A notice is never retried: the next run that holds something tells the editors.
            unsent.status = .failed
            try ledger.record([unsent])
            outcome = unsent
        }
        logger.info("told the editors (\(tags)): \(text) [\(outcome?.status.rawValue ?? "not sent")]")
    }

    private func selectedFeeds(_ names: [String]) throws(SessionError) -> [FeedSettings] {
        guard !names.isEmpty else { return config.feeds }
        var selected: [FeedSettings] = []
        for name in names {
            guard let feed = config.feeds.first(where: { $0.name == name || $0.url == name }) else {
                let known = config.feeds.map { $0.name ?? $0.url }.joined(separator: ", ")
                throw .usage("no feed named '\(name)' in the config; feeds: \(known)")
            }
            selected.append(feed)
        }
        return selected
    }

    /// Names what went wrong with each feed in the log (at info level, for `-v`).
    private func logProblems(_ feeds: [FeedTally]) {
        for feed in feeds {
            let (settings, read) = (feed.settings, feed.read)
            for problem in read.feed?.problems ?? [] { logger.info("\(feed.name) (\(settings.url)): \(problem)") }
            if let movedTo = read.fetched.movedTo {
                logger.info("feed \(settings.url) moved permanently to \(movedTo): update the config")
            }
            if read.fetched.httpStatus == 410 {
                logger.info("feed \(settings.url) is GONE (410): the publisher removed it; take it out of the config")
            }
            if let error = read.error { logger.info("feed \(feed.name) failed: \(error)") }
        }
    }

    /// Says which feeds record a baseline this run, and why nothing of theirs is pushed.
    private func announceBaselines(_ feeds: [FeedTally], ledgerIsNew: Bool, ledgerPath: String, request: RunRequest) {
        let baseline = feeds.filter { $0.firstRead && $0.read.itemCount > 0 }
        guard !baseline.isEmpty else { return }
        let what =
            request.sendInitial.map { "sending at most \($0) eligible item(s) of them" }
            ?? "recording every item as a baseline and sending nothing"
        if ledgerIsNew {
            logger.info("no ledger at \(ledgerPath): first run, \(what)")
            return
        }
        for feed in baseline.sorted(by: { $0.settings.url < $1.settings.url }) {
            let message =
                "feed \(feed.name) (\(feed.settings.url)) is read for the first time: \(feed.read.itemCount) item(s), "
                + "\(what) (first_run: send on the feed pushes them)"
            logger.info("\(message)")
        }
    }

    /// Whether a candidate needs the sentence encoder: new, outside a baseline, and without
    /// feed or section evidence (`evidence`: `ItemClassifier.evidence` of each).
    static func wantsTextEncoder(_ candidates: [Candidate], evidence: [Classification?]) -> Bool {
        zip(candidates, evidence).contains { $0.wantsEncoder && $1 == nil }
    }

    /// The bundled text models, or none (items of feeds without a category stay unclassified).
    /// The sentence encoder is loaded only when a new item (not a baseline) has no feed or
    /// section evidence: otherwise the bag-of-words model alone classifies the rest.
    static func loadTextClassifier(for candidates: [Candidate], evidence: [Classification?], _ logger: Logger)
        -> TextClassifier?
    {
        do {
            let (classifier, warning) = try TextClassifier.bundled(
                wantsTextEncoder(candidates, evidence: evidence) ? .full : .none)
            if let warning { logger.warning("\(warning)") }
            return classifier
        } catch {
            logger.warning(
                "text classifier unavailable (\(error)); items of feeds without a category stay unclassified")
            return nil
        }
    }
}

/// The text models of a run, each loaded when an item first needs it: the bag of words while
/// the feeds are read (for items without feed or section evidence), the sentence encoder at the
/// end when a new item outside a baseline needs it. A model that cannot be loaded is said once.
struct TextModels {
    let logger: Logger
    private var bagOfWords: TextClassifier?
    private var unavailable = false

    init(logger: Logger) {
        self.logger = logger
    }

    /// The classify stage of a feed's items as it is read: feed or section evidence, else the
    /// bag of words (the new items that want the sentence encoder are classified again, together,
    /// by `classified`).
    mutating func settledClassified(_ candidates: [Candidate]) -> [Candidate] {
        let evidence = candidates.map { ItemClassifier.evidence($0.item, feedCategory: $0.sectionCategory) }
        let text = evidence.contains { $0 == nil } ? loadBagOfWords() : nil
        return ItemClassifier(text: text).classified(candidates, evidence: evidence)
    }

    /// The classify stage of the plan's candidates, the sentence encoder loaded when one of them
    /// needs it.
    mutating func classified(_ open: [Candidate]) -> [Candidate] {
        guard !open.isEmpty else { return open }
        let evidence = open.map { ItemClassifier.evidence($0.item, feedCategory: $0.sectionCategory) }
        let text: TextClassifier?
        if unavailable || !RunSession.wantsTextEncoder(open, evidence: evidence) {
            text = evidence.contains { $0 == nil } ? loadBagOfWords() : nil
        } else {
            text = RunSession.loadTextClassifier(for: open, evidence: evidence, logger)
        }
        return ItemClassifier(text: text).classified(open, evidence: evidence)
    }

    private mutating func loadBagOfWords() -> TextClassifier? {
        if let bagOfWords { return bagOfWords }
        guard !unavailable else { return nil }
        do {
            bagOfWords = try TextClassifier.bundled(.none).classifier
        } catch {
            unavailable = true
            logger.warning(
                "text classifier unavailable (\(error)); items of feeds without a category stay unclassified")
        }
        return bagOfWords
    }
}
