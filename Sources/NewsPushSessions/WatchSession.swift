import Foundation
import Logging
import NewsPushCore
import NewsPushLedger
import NewsPushModel

/// `newspush watch` (SPEC §10): the run's stages continuously, each feed fetched when it is due
/// on its own `FeedSchedule`, at once when pinged, and read from its WebSub distributions. A
/// cycle is a run of the due feeds by `RunSession`, the same code, ledger promises and lock as
/// `run` (it waits for a cron run, `publish` or an approval that holds the lock), so they
/// interleave with it. Feeds are leased in the ledger, on its clock, by a keeper of their own
/// (`LeaseKeeper`): watchers sharing one poll a share each, and any of them reads a feed it was
/// pinged for or sent a distribution of, under the ledger's lock, whoever holds it.
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
    /// take the lock in `lockWait`, whose feeds' clocks are too far off, or whose ledger is out
    /// of reach for a while is logged, said by `health` and tried again later (what it had in
    /// hand waits for it); a ledger that is corrupt or newer than this newspush stops the
    /// watcher (thrown: exit 1, as for `run`). The leases are given back when it stops.
    public func watch(_ inbox: WatchInbox, health: WatchHealth, cycle: (RunResult) -> Void) throws(SessionError) {
        if context.config.watch.webSub && context.config.watch.callbackURL == nil {
            context.logger.notice("watch: no watch.callback_url, so no WebSub subscriptions: every feed is polled")
        }
        let keeper = LeaseKeeper(session: self, inbox: inbox, health: health)
        keeper.start()
        defer { keeper.stop() }
        var loop = WatchLoop(session: self, inbox: inbox, health: health, start: context.clock.now())
        while !inbox.isRaised {
            try loop.step(cycle: cycle)
        }
    }

    /// Whether `error` means the watcher must stop (the ledger is damaged or newer: going on
    /// could re-send old news), not wait and try again.
    static func isFatal(_ error: SessionError) -> Bool {
        switch error {
        case .ledger(.corrupt), .ledger(.newerSchema), .config, .missingConfig, .connectionString: return true
        default: return false
        }
    }
}

/// The watcher's state between cycles: each feed's schedule, the feeds it holds, the one-off
/// fetches pings asked for, when pings were last answered, and its own handle on the ledger for
/// the subscriptions.
struct WatchLoop {
    let session: WatchSession
    let inbox: WatchInbox
    let health: WatchHealth
    var schedules: [String: FeedSchedule]
    var held: Set<String> = []
    /// Feeds this watcher does not hold but was pinged for: fetched once, when due.
    var oneOff: [String: Date] = [:]
    var lastPinged: [String: Date] = [:]
    /// When the subscriptions are next looked at.
    var subscriptionsDue: Date = .distantPast
    /// Cycles in a row that could not run for a ledger out of reach (the pause doubles).
    var troubles = 0
    /// Whether a cycle found the ledger whole: later cycles skip the check of its pages.
    var checked = false
    let requests: SubscriptionRequests
    /// The loop's own connection to the ledger (the subscriptions, the feeds' records), opened
    /// when first needed and again after it failed; the cycles open theirs under the lock.
    var ledger: Ledger?
    /// The held feeds whose hub distributes them now (as last read from the ledger).
    var subscribedFeeds: Set<String> = []

    var context: SessionContext { session.context }
    var settings: WatchSettings { context.config.watch }

    init(session: WatchSession, inbox: WatchInbox, health: WatchHealth, start: Date) {
        self.session = session
        self.inbox = inbox
        self.health = health
        let settings = session.context.config.watch
        schedules = Dictionary(
            session.context.config.feeds.map { ($0.url, FeedSchedule.first(at: start, settings: settings)) },
            uniquingKeysWith: { first, _ in first })
        requests = SubscriptionRequests(inbox: inbox, context: session.context)
    }

    /// Takes what arrived and the leases' news, asks the hubs for the subscriptions due, runs
    /// the feeds due (or waits until something is), and notes the hubs the cycle's documents
    /// named.
    mutating func step(cycle: (RunResult) -> Void) throws(SessionError) {
        if let failure = inbox.failure { throw failure }
        let now = context.clock.now()
        takeLeases(at: now)
        let (pings, documents, answers) = inbox.take()
        settle(answers, at: now)
        if inbox.takeSubscriptionChange() { subscriptionsDue = now }
        schedule(pings)
        if now >= subscriptionsDue { askSubscriptions(at: now) }
        let due = schedules.filter { $0.value.due <= now && held.contains($0.key) }.map(\.key)
        let pinged = oneOff.filter { $0.value <= now }.map(\.key)
        let feeds = Set(due).union(pinged).union(documents.keys).sorted()
        guard !feeds.isEmpty else { return pause(until: nextWake(after: now), from: now) }
        for url in pinged { oneOff[url] = nil }
        switch runCycle(feeds, documents: documents) {
        case .ran(let result):
            troubles = 0
            checked = true
            health.worked("loop", at: context.clock.now())
            reschedule(feeds, after: result, startedAt: now)
            observeHubs(result)
            cycle(result)
        case .later(let pause):
            inbox.putBack(pings: Dictionary(uniqueKeysWithValues: pinged.map { ($0, now) }), documents: documents)
            self.pause(until: now.addingTimeInterval(pause), from: now)
        case .stop(let error):
            throw error
        }
    }

    /// What a cycle came to.
    enum CycleEnd {
        case ran(RunResult)
        /// Not run (the lock held too long, the clocks off, the ledger out of reach): tried again
        /// after this many seconds, with what it had in hand.
        case later(Double)
        case stop(SessionError)
    }

    /// One cycle over `feeds`, with the `documents` distributed.
    private mutating func runCycle(_ feeds: [String], documents: [String: FetchedFeed]) -> CycleEnd {
        do {
            var request = RunRequest(feeds: feeds, lockWait: session.lockWait, delivered: documents)
            request.ledgerChecked = checked
            return .ran(try RunSession(context: context).run(request))
        } catch .ledger(.locked) {
            context.logger.warning(
                "watch: the ledger is still locked by another job after \(Int(session.lockWait)) s; trying again")
            return .later(1)
        } catch .clockSkew(let problem) {
            context.logger.error("watch: \(problem); nothing was decided this cycle")
            health.failed("loop", problem)
            return .later(settings.minInterval)
        } catch {
            guard !WatchSession.isFatal(error) else { return .stop(error) }
            troubles += 1
            let pause = min(60, pow(2, Double(min(troubles - 1, 6))))
            context.logger.warning("watch: \(error); trying again in \(Int(pause)) s")
            health.failed("loop", "\(error)")
            return .later(pause)
        }
    }

    /// Waits until `deadline` on the session's clock, or until something arrives.
    private func pause(until deadline: Date, from now: Date) {
        inbox.wait(until: Date().addingTimeInterval(max(0, deadline.timeIntervalSince(now)) / context.clock.rate))
    }

    /// The feeds the lease keeper says this watcher holds; one newly taken is due at once, unless
    /// its server's limits (kept in the ledger) say later.
    private mutating func takeLeases(at now: Date) {
        let (feeds, new) = inbox.heldFeeds()
        held = feeds
        guard !new.isEmpty else { return }
        subscriptionsDue = now
        let records = withLedger { ledger throws(LedgerError) in try ledger.feeds(Array(new)) } ?? [:]
        for url in new {
            let limit = [records[url]?.freshUntil, records[url]?.retryAfter].compactMap { $0 }.max()
            schedules[url]?.due = max(now, limit ?? now)
        }
    }

    /// Pings: a feed held is fetched at once (pings within a second of a pinged fetch wait for one
    /// more, a second after it); one held elsewhere is fetched here once, all the same.
    private mutating func schedule(_ pings: [String: Date]) {
        for (feed, at) in pings where schedules[feed] != nil {
            let earliest = lastPinged[feed].map { $0.addingTimeInterval(1) } ?? at
            let when = max(at, earliest)
            lastPinged[feed] = when
            if held.contains(feed) {
                let due = schedules[feed]?.due ?? when
                schedules[feed]?.due = min(due, when)
            } else {
                oneOff[feed] = min(oneOff[feed] ?? when, when)
            }
        }
    }

    /// The next moment something is due: a feed held, a one-off fetch, a subscription.
    private func nextWake(after now: Date) -> Date {
        let feeds = schedules.filter { held.contains($0.key) }.map(\.value.due)
        return (feeds + Array(oneOff.values) + [subscriptionsDue]).min() ?? now.addingTimeInterval(settings.interval)
    }

    /// Each fetch was answered somewhere between the cycle's start and its end. The feed's own
    /// interval is counted from the start (a long cycle does not stretch every feed's period),
    /// but never brings the next fetch nearer than `min_interval` to the cycle's end; the
    /// server's limits (counted by the run from its start) are moved by the cycle's length, so
    /// neither is ever overtaken. A feed its hub distributes is polled only at `max_interval`
    /// (the safety net).
    private mutating func reschedule(_ feeds: [String], after result: RunResult, startedAt now: Date) {
        let ended = context.clock.now()
        let active = Set(result.fetches.keys.filter { subscribedFeeds.contains($0) })
        for url in feeds where held.contains(url) {
            var outcome = result.fetches[url] ?? FetchOutcome(.failed)
            outcome.notBefore = outcome.notBefore?.addingTimeInterval(max(0, ended.timeIntervalSince(now)))
            let jitter = Double.random(in: 0.9...1.1)
            guard var next = schedules[url]?.next(after: outcome, at: now, settings: settings, jitter: jitter)
            else { continue }
            next.due = max(next.due, ended.addingTimeInterval(settings.minInterval))
            if active.contains(url) {
                next.due = max(next.due, ended.addingTimeInterval(settings.maxInterval * min(1, jitter)))
            }
            schedules[url] = next
        }
    }

    /// `body` with the loop's ledger connection; nil (logged, said by the health, the connection
    /// let go) when the ledger cannot be used now.
    mutating func withLedger<T>(_ body: (Ledger) throws(LedgerError) -> T) -> T? {
        do {
            let open = try ledger ?? Ledger.open(configured: context.config.statePath, access: .write)
            ledger = open
            return try body(open)
        } catch {
            ledger = nil
            context.logger.warning("watch: \(error)")
            health.failed("loop", "\(error)")
            return nil
        }
    }
}
