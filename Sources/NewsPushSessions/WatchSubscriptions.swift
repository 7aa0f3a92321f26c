import Foundation
import Logging
import NewsPushCore
import NewsPushLedger
import NewsPushModel

/// The WebSub side of the loop (SPEC §10): the subscriptions live in the ledger, one per feed;
/// the watcher holding a feed notes the hub its documents name, asks the hub when a
/// subscription is due (new, to renew, to retry) off the loop, and marks what the hubs answered.
extension WatchLoop {
    /// Asks the hubs of the held feeds for the subscriptions due, off the loop; notes which held
    /// feeds their hub distributes now, and when a subscription is next due.
    mutating func askSubscriptions(at now: Date) {
        subscriptionsDue = now.addingTimeInterval(settings.interval)
        guard let base = settings.callbackURL else { return }
        let feeds = context.config.feeds.filter { held.contains($0.url) }
        guard let kept = withLedger({ ledger throws(LedgerError) in try ledger.subscriptions(feeds: feeds.map(\.url)) })
        else { return }
        subscribedFeeds = Set(kept.values.filter { $0.isActive(at: now) }.map(\.feed))
        for feed in feeds {
            guard let subscription = kept[feed.url] else { continue }
            guard WebSubPolicy.isDue(subscription, at: now) else {
                subscriptionsDue = min(subscriptionsDue, WebSubPolicy.nextAction(subscription))
                // Awaiting a verification that may reach another watcher: looked at again soon.
                if case .requested = subscription.state { subscriptionsDue = min(subscriptionsDue, now + 5) }
                continue
            }
            let asked = withLedger { ledger throws(LedgerError) in
                try ledger.changeSubscription(feed: feed.url) { current -> WebSubSubscription?? in
                    guard let current, current.token == subscription.token, WebSubPolicy.isDue(current, at: now)
                    else { return nil }
                    return .some(WebSubPolicy.asking(current, at: now))
                }
            }
            guard let asked = asked ?? nil, asked.token == subscription.token else { continue }
            subscriptionsDue = min(subscriptionsDue, WebSubPolicy.nextAction(asked), now + 5)
            if case .requested = asked.state {
                let callback = WebSubPolicy.callback(
                    base: base, feedSegment: WatchFeeds.segment(feed), token: asked.token)
                requests.ask(asked, callback: callback)
            }
        }
    }

    /// What the hubs answered to the requests: a failure is marked on the subscription it was
    /// for (not a newer one of the feed), asked again after its wait.
    mutating func settle(_ answers: [WatchInbox.SubscriptionAnswer], at now: Date) {
        for answer in answers {
            guard let failure = answer.failure else { continue }
            context.logger.warning("watch: WebSub subscription of \(answer.feed) failed: \(failure)")
            _ = withLedger { ledger throws(LedgerError) in
                try ledger.changeSubscription(feed: answer.feed) { current -> WebSubSubscription?? in
                    guard let current, current.token == answer.token, case .requested = current.state else {
                        return nil
                    }
                    return .some(WebSubPolicy.failed(current, reason: failure, at: now))
                }
            }
            subscriptionsDue = now
        }
    }

    /// Notes the hubs the cycle's documents named (or the config names) for the feeds held: a new
    /// hub or topic is a new subscription (new secret and callback token), the same keeps the
    /// one the ledger has, none ends it. A hub over plain http is not subscribed to unless
    /// `watch.hubs.http: allow` (its secret would travel unencrypted).
    mutating func observeHubs(_ result: RunResult) {
        guard settings.callbackURL != nil else { return }
        let feeds = Dictionary(context.config.feeds.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
        for (url, outcome) in result.fetches where held.contains(url) {
            guard let feed = feeds[url] else { continue }
            var links: WebSubLinks?
            switch feed.webSub {
            case .off: links = nil
            case .hub(let hub): links = WebSubLinks(hub: hub, topic: url)
            case nil:
                // A 304 or a failure names no hub: the subscription in hand stays.
                guard settings.webSub, let found = outcome.webSub else { continue }
                links = found
            }
            if let hub = links?.hub, !settings.httpHubs, hub.lowercased().hasPrefix("http:") {
                context.logger.notice(
                    """
                    watch: not subscribing \(url) at \(hub): a hub over plain http would get the secret \
                    unencrypted (watch.hubs: {http: allow} permits it); the feed is polled
                    """)
                links = nil
            }
            let changed = withLedger { ledger throws(LedgerError) in
                try ledger.changeSubscription(feed: url) { WebSubPolicy.observe($0, feed: url, links: links) }
            }
            if changed != nil { subscriptionsDue = context.clock.now() }
        }
    }
}

/// Subscription requests (§5.1), made off the loop on a few threads of their own (a hub that
/// never answers holds one thread for the request's `fetch.timeout`, never the loop); each answer
/// goes to the inbox. A hub is reached only at a public address unless `watch.hubs.private: allow`.
final class SubscriptionRequests: Sendable {
    private let queue: OperationQueue
    private let inbox: WatchInbox
    private let context: SessionContext

    init(inbox: WatchInbox, context: SessionContext) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 4
        queue.name = "newspush-websub-requests"
        self.queue = queue
        self.inbox = inbox
        self.context = context
    }

    /// Asks `subscription`'s hub, with `callback`.
    func ask(_ subscription: WebSubSubscription, callback: String) {
        let (inbox, context) = (inbox, context)
        queue.addOperation {
            let answer = DocumentFetch.postForm(
                subscription.links.hub, fields: WebSubPolicy.form(subscription, callback: callback),
                userAgent: FeedFetcher(settings: context.config.fetch, baseFolder: "").userAgent,
                timeout: context.config.fetch.timeout,
                publicAddressesOnly: !context.config.watch.privateHubs)
            var failure: String?
            switch answer {
            case .success(let answer) where (200..<300).contains(answer.status):
                context.logger.info("watch: asked \(subscription.links.hub) for \(subscription.links.topic)")
            case .success(let answer):
                failure =
                    "the hub answered \(answer.status): \(String(decoding: answer.body.prefix(200), as: UTF8.self))"
            case .failure(.privateAddress(let address)):
                failure =
                    "the hub is at \(address), a loopback, private or link-local address (watch.hubs: "
                    + "{private: allow} permits it)"
            case .failure(let problem):
                failure = problem.description
            }
            inbox.answered(
                WatchInbox.SubscriptionAnswer(feed: subscription.feed, token: subscription.token, failure: failure))
        }
    }
}

/// Keeps this watcher's leases (SPEC §10: counted on the database's clock, renewed on their own
/// schedule, every quarter of `watch.lease`, however long a cycle takes), on a thread and a
/// ledger connection of its own; tells the loop which feeds it holds. A ledger that is corrupt
/// or newer stops the watcher; one out of reach keeps the feeds held (the ledger's own promises
/// keep a story from going out twice meanwhile) and is said by the health.
final class LeaseKeeper: @unchecked Sendable {
    private let session: WatchSession
    private let inbox: WatchInbox
    private let health: WatchHealth
    private let stopped = NSCondition()
    private var stopping = false
    private var finished = false

    init(session: WatchSession, inbox: WatchInbox, health: WatchHealth) {
        self.session = session
        self.inbox = inbox
        self.health = health
    }

    /// Starts renewing (the first renewal now).
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "newspush-watch-leases"
        thread.start()
    }

    /// Stops renewing and gives the feeds back (the others need not wait for the leases to end).
    func stop() {
        stopped.lock()
        stopping = true
        stopped.broadcast()
        while !finished { stopped.wait() }
        stopped.unlock()
    }

    private func run() {
        let context = session.context
        let urls = context.config.feeds.map(\.url)
        let every = max(0.25, context.config.watch.lease / 4)
        var ledger: Ledger?
        var held: Set<String>?
        var wait = 0.0
        while !isStopping(after: wait) {
            wait = every
            do throws(LedgerError) {
                let open: Ledger
                if let ledger {
                    open = ledger
                } else {
                    open = try Ledger.open(configured: context.config.statePath, access: .write)
                }
                ledger = open
                let taken = try open.leaseFeeds(urls, holder: session.holder, lease: context.config.watch.lease)
                if taken != held {
                    context.logger.notice("watch: this watcher holds \(taken.count) of \(urls.count) feeds")
                    held = taken
                }
                inbox.setHeld(taken)
                health.worked("leases", at: context.clock.now())
            } catch {
                ledger = nil
                renewalFailed(error)
            }
        }
        do {
            try (ledger ?? Ledger.open(configured: context.config.statePath, access: .write))
                .releaseLeases(holder: session.holder)
        } catch {
            context.logger.warning(
                "watch: the feeds' leases could not be given back (they end by themselves): \(error)")
        }
        stopped.lock()
        finished = true
        stopped.broadcast()
        stopped.unlock()
    }

    private func renewalFailed(_ error: LedgerError) {
        let failure = SessionError.ledger(error)
        if WatchSession.isFatal(failure) {
            inbox.fail(failure)
        } else {
            session.context.logger.warning("watch: the feeds' leases could not be renewed: \(error)")
            health.failed("leases", "\(error)")
        }
    }

    /// Waits `seconds` (real ones: leases are counted on the database's clock); whether to stop.
    private func isStopping(after seconds: Double) -> Bool {
        stopped.lock()
        defer { stopped.unlock() }
        let deadline = Date().addingTimeInterval(seconds)
        while !stopping && !inbox.isRaised && stopped.wait(until: deadline) {}
        return stopping || inbox.isRaised
    }
}
