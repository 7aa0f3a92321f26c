import Foundation
import NewsPushCore

/// What reaches the watcher from outside its loop: the stop (SIGTERM), publish pings, WebSub
/// distributions, and the hubs' verifications of its subscriptions. The listener's handlers
/// and the signal handler write; the loop waits on it and takes what arrived.
public final class WatchInbox: @unchecked Sendable {
    // Guarded by `condition` (NSCondition: the loop sleeps until a deadline or an event).
    private let condition = NSCondition()
    private var raised = false
    private var pings: [String: Date] = [:]
    private var distributions: [(feed: String, document: FetchedFeed)] = []
    private var subscriptions = WebSubSubscriptions()

    /// An empty inbox.
    public init() {}

    /// Stops the watcher: a wait in progress ends now, a cycle in progress finishes first.
    public func raise() {
        locked { raised = true }
    }

    /// Whether the watcher is to stop.
    public var isRaised: Bool { locked { raised } }

    /// A publish ping for `feed` (its URL): fetched at once (pings within a second of a
    /// pinged fetch coalesce into the next one).
    public func ping(feed: String, at now: Date) {
        locked { pings[feed] = pings[feed] ?? now }
    }

    /// A WebSub distribution of `feed` whose signature was checked: read in the next cycle.
    public func deliver(feed: String, document: FetchedFeed) {
        locked { distributions.append((feed, document)) }
    }

    /// The hub's verification of intent for `feed`: whether to answer with the challenge.
    public func verify(feed: String, mode: String, topic: String, leaseSeconds: Double?, at now: Date) -> Bool {
        locked { subscriptions.verify(feed: feed, mode: mode, topic: topic, leaseSeconds: leaseSeconds, at: now) }
    }

    /// The hub denied `feed`'s subscription to `topic`; false when no such subscription exists.
    public func denied(feed: String, topic: String, reason: String, at now: Date) -> Bool {
        locked { subscriptions.failed(feed: feed, topic: topic, reason: "denied: \(reason)", at: now) }
    }

    /// The secret `feed`'s distributions are signed with, while it is subscribed.
    public func secret(feed: String) -> String? { locked { subscriptions.secret(feed: feed) } }

    /// How many feeds the hubs distribute now (verified leases not yet ended).
    public func activeSubscriptions(at now: Date) -> Int {
        locked { subscriptions.byFeed.keys.filter { subscriptions.isActive(feed: $0, at: now) }.count }
    }

    /// Reads or changes the subscriptions under the lock.
    func withSubscriptions<T>(_ body: (inout WebSubSubscriptions) -> T) -> T {
        locked { body(&subscriptions) }
    }

    /// Waits until `deadline` (the machine's time), the stop, or a ping or distribution.
    func wait(until deadline: Date) {
        condition.lock()
        while !raised && pings.isEmpty && distributions.isEmpty && condition.wait(until: deadline) {}
        condition.unlock()
    }

    /// The pings that arrived (feed → first ping) and the oldest distribution of each feed
    /// (a later one waits for the next cycle, so none is lost).
    func take() -> (pings: [String: Date], distributions: [String: FetchedFeed]) {
        locked {
            let taken = pings
            pings = [:]
            var first: [String: FetchedFeed] = [:]
            var rest: [(feed: String, document: FetchedFeed)] = []
            for distribution in distributions {
                if first[distribution.feed] == nil {
                    first[distribution.feed] = distribution.document
                } else {
                    rest.append(distribution)
                }
            }
            distributions = rest
            return (taken, first)
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
