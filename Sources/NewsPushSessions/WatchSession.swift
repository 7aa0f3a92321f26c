import Foundation
import Logging
import NewsPushCore
import NewsPushLedger
import NewsPushModel

/// `newspush watch` (SPEC §10): the run's stages continuously, each feed fetched when it is due
/// on its own `FeedSchedule`, at once when pinged, and read from its WebSub distributions. A
/// cycle is a run of the due feeds by `RunSession`, the same code, ledger promises and lock as
/// `run` (it waits for a cron run, `publish` or an approval that holds the lock), so they
/// interleave with it. Feeds are leased in the ledger: watchers sharing one take a share each.
public struct WatchSession: Sendable {
    /// The newsroom the watcher works for.
    public var context: SessionContext
    /// How long a cycle waits for another job's lock before trying again later.
    public var lockWait: Double = 30
    /// This watcher's name in the ledger's leases (the host, the process and a random part).
    public var holder: String

    /// A watcher for `context`.
    public init(context: SessionContext) {
        self.context = context
        holder = "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Watches until `inbox` is raised; `cycle` gets each cycle's result. A cycle that cannot
    /// take the lock in `lockWait`, or whose feeds' clocks are too far off, is logged and
    /// tried again; anything else that would stop a run stops the watcher (thrown). The leases
    /// are given back when it stops.
    public func watch(_ inbox: WatchInbox, cycle: (RunResult) -> Void) throws(SessionError) {
        var loop = WatchLoop(session: self, inbox: inbox, start: context.clock.now())
        defer { loop.releaseLeases() }
        if context.config.watch.webSub && context.config.watch.callbackURL == nil {
            context.logger.notice("watch: no watch.callback_url, so no WebSub subscriptions: every feed is polled")
        }
        while !inbox.isRaised {
            try loop.step(cycle: cycle)
        }
    }

    /// One cycle over `due`, with the documents `delivered`; nil when it is to be tried again
    /// (the lock held too long, the feeds' clocks off), after a pause.
    func runCycle(_ due: [String], delivered: [String: FetchedFeed], inbox: WatchInbox) throws(SessionError)
        -> RunResult?
    {
        do {
            return try RunSession(context: context).run(
                RunRequest(feeds: due, lockWait: lockWait, delivered: delivered))
        } catch .ledger(.locked) {
            context.logger.warning(
                "watch: the ledger is still locked by another job after \(Int(lockWait)) s; trying again")
        } catch .clockSkew(let problem) {
            context.logger.error("watch: \(problem); nothing was decided this cycle")
            inbox.wait(until: Date().addingTimeInterval(context.config.watch.minInterval / context.clock.rate))
        }
        return nil
    }

    /// The callback URL of `feed` (the configured base and the feed's path segment).
    static func callback(base: String, feed: FeedSettings) -> String {
        (base.hasSuffix("/") ? base : base + "/") + WatchFeeds.segment(feed)
    }
}

/// The watcher's state between cycles: each feed's schedule, the feeds it holds, when pings
/// were last answered, and when the leases are next renewed.
struct WatchLoop {
    let session: WatchSession
    let inbox: WatchInbox
    var schedules: [String: FeedSchedule]
    var held: Set<String> = []
    var nextHeartbeat: Date
    var lastPinged: [String: Date] = [:]

    private var context: SessionContext { session.context }
    private var settings: WatchSettings { context.config.watch }

    init(session: WatchSession, inbox: WatchInbox, start: Date) {
        self.session = session
        self.inbox = inbox
        let settings = session.context.config.watch
        schedules = Dictionary(
            session.context.config.feeds.map { ($0.url, FeedSchedule.first(at: start, settings: settings)) },
            uniquingKeysWith: { first, _ in first })
        nextHeartbeat = start
    }

    /// Renews the leases when due, answers pings and distributions, asks the hubs for the
    /// subscriptions due, runs the due feeds (or waits until something is due), and notes the
    /// hubs the cycle's documents named.
    mutating func step(cycle: (RunResult) -> Void) throws(SessionError) {
        let now = context.clock.now()
        if now >= nextHeartbeat { heartbeat(at: now) }
        let (pings, delivered) = inbox.take()
        for (feed, at) in pings where schedules[feed] != nil {
            // Pings within a second of a pinged fetch wait for one more, a second after it.
            let earliest = lastPinged[feed].map { $0.addingTimeInterval(1) } ?? at
            let due = schedules[feed]?.due ?? at
            schedules[feed]?.due = min(due, max(at, earliest))
            lastPinged[feed] = max(at, earliest)
        }
        requestSubscriptions(at: now)
        let due = schedules.filter { $0.value.due <= now && held.contains($0.key) }.map(\.key)
        let feeds = Set(due).union(delivered.keys).sorted()
        guard !feeds.isEmpty else {
            inbox.wait(
                until: Date().addingTimeInterval(nextWake(after: now).timeIntervalSince(now) / context.clock.rate))
            return
        }
        guard let result = try session.runCycle(feeds, delivered: delivered, inbox: inbox) else { return }
        reschedule(feeds, after: result, startedAt: now)
        observeHubs(result)
        requestSubscriptions(at: context.clock.now())
        cycle(result)
    }

    /// The next moment something is due: a feed held, the leases' renewal, a subscription.
    private func nextWake(after now: Date) -> Date {
        let feeds = schedules.filter { held.contains($0.key) }.map(\.value.due)
        let subscriptions = inbox.withSubscriptions { $0.nextAction() }
        return (feeds + [nextHeartbeat] + [subscriptions].compactMap { $0 }).min()
            ?? now.addingTimeInterval(settings.interval)
    }

    /// Each fetch was answered somewhere between the cycle's start and its end. The feed's own
    /// interval is counted from the start (a long cycle does not stretch every feed's period),
    /// but never brings the next fetch nearer than `min_interval` to the cycle's end; the
    /// server's limits (counted by the run from its start) are moved by the cycle's length, so
    /// neither is ever overtaken. A feed its hub distributes is polled only at `max_interval`
    /// (the safety net).
    private mutating func reschedule(_ feeds: [String], after result: RunResult, startedAt now: Date) {
        let ended = context.clock.now()
        for url in feeds {
            var outcome = result.fetches[url] ?? FetchOutcome(.failed)
            outcome.notBefore = outcome.notBefore?.addingTimeInterval(max(0, ended.timeIntervalSince(now)))
            let jitter = Double.random(in: 0.9...1.1)
            guard var next = schedules[url]?.next(after: outcome, at: now, settings: settings, jitter: jitter)
            else { continue }
            next.due = max(next.due, ended.addingTimeInterval(settings.minInterval))
            if inbox.withSubscriptions({ $0.isActive(feed: url, at: ended) }) {
                next.due = max(next.due, ended.addingTimeInterval(settings.maxInterval * min(1, jitter)))
            }
            schedules[url] = next
        }
    }

    /// Renews the leases; a ledger that cannot be reached keeps the feeds held until it can
    /// (the ledger's own promises keep a story from going out twice meanwhile).
    private mutating func heartbeat(at now: Date) {
        let urls = context.config.feeds.map(\.url)
        nextHeartbeat = now.addingTimeInterval(max(1, settings.lease / 4))
        do {
            let ledger = try Ledger.open(configured: context.config.statePath, access: .write)
            let taken = try ledger.leaseFeeds(urls, holder: session.holder, lease: settings.lease, now: now)
            if taken != held {
                context.logger.notice("watch: this watcher holds \(taken.count) of \(urls.count) feeds")
                for url in taken.subtracting(held) {
                    let due = schedules[url]?.due ?? now
                    schedules[url]?.due = min(due, now)
                }
            }
            held = taken
        } catch {
            context.logger.warning("watch: the feeds' leases could not be renewed: \(error)")
        }
    }

    /// Gives the feeds back (the watcher stops).
    func releaseLeases() {
        do {
            try Ledger.open(configured: context.config.statePath, access: .write).releaseLeases(holder: session.holder)
        } catch {
            context.logger.warning(
                "watch: the feeds' leases could not be given back (they end by themselves): \(error)")
        }
    }

    /// Notes the hubs the cycle's documents named (or the config names) for the feeds held.
    private func observeHubs(_ result: RunResult) {
        guard settings.callbackURL != nil else { return }
        let feeds = Dictionary(context.config.feeds.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
        inbox.withSubscriptions { subscriptions in
            for (url, outcome) in result.fetches {
                guard let feed = feeds[url], held.contains(url) else { continue }
                switch feed.webSub {
                case .off:
                    subscriptions.observe(feed: url, links: nil, secret: WebSubSubscriptions.newSecret)
                case .hub(let hub):
                    subscriptions.observe(
                        feed: url, links: WebSubLinks(hub: hub, topic: url), secret: WebSubSubscriptions.newSecret)
                case nil:
                    // A 304 or a failure names no hub: the subscription in hand stays.
                    guard settings.webSub, let links = outcome.webSub else { continue }
                    subscriptions.observe(feed: url, links: links, secret: WebSubSubscriptions.newSecret)
                }
            }
        }
    }

    /// Asks each hub for the subscriptions that are due: new, to renew, after a denial or a
    /// failure.
    private func requestSubscriptions(at now: Date) {
        guard let base = settings.callbackURL else { return }
        let due = inbox.withSubscriptions { $0.due(at: now) }
        guard !due.isEmpty else { return }
        let feeds = Dictionary(context.config.feeds.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
        for subscription in due {
            guard let feed = feeds[subscription.feed] else { continue }
            request(subscription, callback: WatchSession.callback(base: base, feed: feed), at: now)
        }
    }

    /// One subscription request (§5.1): a 202 means the hub will verify; anything else is a
    /// failure, tried again later.
    private func request(_ subscription: WebSubSubscription, callback: String, at now: Date) {
        let answer = DocumentFetch.postForm(
            subscription.links.hub, fields: WebSubSubscriptions.form(subscription, callback: callback),
            userAgent: FeedFetcher(settings: context.config.fetch, baseFolder: "").userAgent, timeout: 10)
        let reason: String
        switch answer {
        case .success(let answer) where (200..<300).contains(answer.status):
            context.logger.info("watch: asked \(subscription.links.hub) for \(subscription.links.topic)")
            return
        case .success(let answer):
            reason = "the hub answered \(answer.status): \(String(decoding: answer.body.prefix(200), as: UTF8.self))"
        case .failure(let failure):
            reason = failure.description
        }
        context.logger.warning("watch: WebSub subscription to \(subscription.links.topic) failed: \(reason)")
        inbox.withSubscriptions { $0.failed(feed: subscription.feed, reason: reason, at: context.clock.now()) }
    }
}
