import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel

/// What the watcher's listener asks the ledger of WebSub (SPEC §10): a hub's verification of
/// intent, a denial, the secret a distribution is signed with. Any watcher sharing the ledger
/// answers for any feed, whoever asked the hub: the subscriptions are the ledger's. A callback
/// is found by its token (and its feed segment must agree); any other path finds nothing and
/// changes nothing. One connection of its own, taken in turns, opened again after a failure.
public final class WebSubCallbacks: @unchecked Sendable {
    private let context: SessionContext
    private let changed: @Sendable () -> Void
    private let lock = NSLock()
    private var ledger: Ledger?

    /// The callbacks of `context`'s watcher; `changed` is called when a verification or a
    /// denial changed a subscription.
    public init(context: SessionContext, changed: @escaping @Sendable () -> Void = {}) {
        self.context = context
        self.changed = changed
    }

    /// What a callback path names: the feed (when its segment is the subscription's feed) and
    /// the subscription.
    public struct Callback: Sendable {
        /// The feed's URL.
        public var feed: String
        /// The subscription.
        public var subscription: WebSubSubscription
    }

    /// The subscription whose callback is `…/{segment}/{token}`; nil for any other path.
    public func callback(segment: String, token: String) throws(SessionError) -> Callback? {
        guard WebSubPolicy.isToken(token), let feed = WatchFeeds.find(segment, in: context.config.feeds) else {
            return nil
        }
        guard let found = try withLedger({ ledger throws(LedgerError) in try ledger.subscription(token: token) }),
            found.feed == feed.url
        else { return nil }
        return Callback(feed: feed.url, subscription: found)
    }

    /// A hub's verification of intent (§5.3) at `…/{segment}/{token}`: true (answer with the
    /// challenge) only for a subscription requested in this `mode` for this `topic`; its lease
    /// (capped at 10 days) then starts, on the session's clock.
    public func verify(segment: String, token: String, mode: String, topic: String, leaseSeconds: Double?)
        throws(SessionError) -> Bool
    {
        guard try callback(segment: segment, token: token) != nil else { return false }
        let now = context.clock.now()
        let verified = try withLedger { ledger throws(LedgerError) in
            try ledger.changeSubscription(token: token) {
                WebSubPolicy.verify($0, mode: mode, topic: topic, leaseSeconds: leaseSeconds, at: now)
            }
        }
        if verified != nil { changed() }
        return verified != nil
    }

    /// The hub denied the subscription at `…/{segment}/{token}` (§5.2): asked again after a wait
    /// that doubles; false when the path names no subscription of `topic`.
    public func denied(segment: String, token: String, topic: String, reason: String) throws(SessionError) -> Bool {
        guard try callback(segment: segment, token: token) != nil else { return false }
        let now = context.clock.now()
        let changed = try withLedger { ledger throws(LedgerError) in
            try ledger.changeSubscription(token: token) { current in
                current.links.topic == topic ? WebSubPolicy.failed(current, reason: "denied: \(reason)", at: now) : nil
            }
        }
        if changed != nil { self.changed() }
        return changed != nil
    }

    /// How many of the configured feeds a hub distributes now (verified leases not yet ended).
    public func activeCount() throws(SessionError) -> Int {
        let now = context.clock.now()
        let all = try withLedger { ledger throws(LedgerError) in
            try ledger.subscriptions(feeds: context.config.feeds.map(\.url))
        }
        return all.values.filter { $0.isActive(at: now) }.count
    }

    private func withLedger<T>(_ body: (Ledger) throws(LedgerError) -> T) throws(SessionError) -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            let open: Ledger
            if let ledger {
                open = ledger
            } else {
                open = try Ledger.open(configured: context.config.statePath, access: .write)
            }
            ledger = open
            return try body(open)
        } catch {
            ledger = nil
            throw .ledger(error)
        }
    }
}
