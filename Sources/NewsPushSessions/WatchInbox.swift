import Foundation
import NewsPushCore

/// What reaches the watcher's loop from outside it: the stop (SIGTERM), publish pings, WebSub
/// distributions, the feeds its leases hold (from the lease keeper's thread), what the hubs
/// answered to its subscription requests, and a ledger the keeper found unusable. The listener's
/// handlers, the signal handler and those threads write; the loop waits on it and takes.
public final class WatchInbox: @unchecked Sendable {
    // Guarded by `condition` (NSCondition: the loop sleeps until a deadline or an event).
    private let condition = NSCondition()
    private var raised = false
    private var fatal: SessionError?
    private var pings: [String: Date] = [:]
    private var documents: [String: Arrival] = [:]
    private var held: Set<String> = []
    private var newlyHeld: Set<String> = []
    private var answers: [SubscriptionAnswer] = []
    private var subscriptionsChanged = false
    private var arrivals = 0

    /// A distribution, and its place among those that arrived (a later one replaces it).
    private struct Arrival {
        var document: FetchedFeed
        var order: Int
    }

    /// What a hub answered to a subscription request (nil `failure`: it took it and will verify).
    public struct SubscriptionAnswer: Sendable {
        /// The feed's URL.
        public var feed: String
        /// The subscription's callback token (a newer subscription of the feed is left alone).
        public var token: String
        /// Why the request failed, or nil.
        public var failure: String?
    }

    /// An empty inbox.
    public init() {}

    /// Stops the watcher: a wait in progress ends now, a cycle in progress finishes first.
    public func raise() {
        locked { raised = true }
    }

    /// Whether the watcher is to stop.
    public var isRaised: Bool { locked { raised } }

    /// Stops the watcher with `error` (a ledger it must not go on with: corrupt, or newer).
    func fail(_ error: SessionError) {
        locked { fatal = fatal ?? error }
    }

    /// The error the watcher stops with, once one is set.
    var failure: SessionError? { locked { fatal } }

    /// A publish ping for `feed` (its URL): fetched at once (pings within a second of a
    /// pinged fetch coalesce into the next one).
    public func ping(feed: String, at now: Date) {
        locked { pings[feed] = min(pings[feed] ?? now, now) }
    }

    /// A WebSub distribution of `feed` whose signature was checked: read in the next cycle. Only
    /// the latest document of a feed waits (it lists what the earlier ones did, and more).
    public func deliver(feed: String, document: FetchedFeed) {
        locked {
            arrivals += 1
            documents[feed] = Arrival(document: document, order: arrivals)
        }
    }

    /// How many distributions wait (the listener refuses more bodies when the loop falls behind).
    public var waitingDocuments: Int { locked { documents.count } }

    /// The feeds this watcher's leases hold now, from the lease keeper; the loop fetches those
    /// it did not hold at once.
    func setHeld(_ feeds: Set<String>) {
        locked {
            newlyHeld.formUnion(feeds.subtracting(held))
            newlyHeld.formIntersection(feeds)
            held = feeds
        }
    }

    /// The feeds held, and those taken since the last call.
    func heldFeeds() -> (held: Set<String>, new: Set<String>) {
        locked {
            defer { newlyHeld = [] }
            return (held, newlyHeld)
        }
    }

    /// What a hub answered to a subscription request made off the loop.
    func answered(_ answer: SubscriptionAnswer) {
        locked { answers.append(answer) }
    }

    /// A hub verified or denied a subscription (through this watcher's listener): the loop reads
    /// the subscriptions again (a renewal is due before the lease just granted ends: `WebSubPolicy.renewalMargin`).
    public func subscriptionChanged() {
        locked { subscriptionsChanged = true }
    }

    /// Whether a subscription changed since the last call.
    func takeSubscriptionChange() -> Bool {
        locked {
            defer { subscriptionsChanged = false }
            return subscriptionsChanged
        }
    }

    /// Waits until `deadline` (the machine's time), the stop, a failure, or a ping, distribution,
    /// lease change or hub answer.
    func wait(until deadline: Date) {
        condition.lock()
        while !raised && fatal == nil && pings.isEmpty && documents.isEmpty && newlyHeld.isEmpty && answers.isEmpty
            && !subscriptionsChanged && condition.wait(until: deadline)
        {}
        condition.unlock()
    }

    /// What arrived: the pings (feed → first ping), the latest distribution of each feed, and
    /// the hubs' answers.
    func take() -> (pings: [String: Date], documents: [String: FetchedFeed], answers: [SubscriptionAnswer]) {
        locked {
            defer {
                pings = [:]
                documents = [:]
                answers = []
            }
            return (pings, documents.mapValues(\.document), answers)
        }
    }

    /// What `take` would take (the tests of the listener look at what it handed over).
    public func takeForTests() -> (pings: [String: Date], documents: [String: FetchedFeed]) {
        let taken = take()
        return (taken.pings, taken.documents)
    }

    /// Gives back what a cycle that could not run took (the ledger busy with a cron run or an
    /// approval, or out of reach): read in a later cycle, unless a newer distribution of the
    /// feed arrived meanwhile.
    func putBack(pings taken: [String: Date], documents kept: [String: FetchedFeed]) {
        locked {
            for (feed, at) in taken { pings[feed] = min(pings[feed] ?? at, at) }
            for (feed, document) in kept where documents[feed] == nil {
                documents[feed] = Arrival(document: document, order: 0)
            }
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body()
    }
}

/// What `/healthz` says of a watcher: what its loop and its lease keeper last found, not a
/// constant. Healthy while the ledger answered the last time either asked it and no cycle
/// since failed; else the reason.
public final class WatchHealth: @unchecked Sendable {
    private let lock = NSLock()
    private var problems: [String: String] = [:]
    private var lastGood: Date?

    /// Nothing known yet (healthy).
    public init() {}

    /// `part` (`loop`, `leases`) worked at `now`.
    public func worked(_ part: String, at now: Date) {
        lock.withLock {
            problems[part] = nil
            lastGood = now
        }
    }

    /// `part` failed: `problem` says why.
    public func failed(_ part: String, _ problem: String) {
        lock.withLock { problems[part] = problem }
    }

    /// Nil when healthy, else what is wrong.
    public var problem: String? {
        lock.withLock { problems.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.first }
    }

    /// When something last worked.
    public var lastWorked: Date? { lock.withLock { lastGood } }
}
