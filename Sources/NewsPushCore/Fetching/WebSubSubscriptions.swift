import Crypto
import Foundation
import NewsPushModel

/// One feed's WebSub subscription (W3C WebSub §5): at which hub, for which topic, with which
/// secret, and where it stands.
public struct WebSubSubscription: Sendable, Equatable {
    /// Where a subscription stands.
    public enum State: Sendable, Equatable {
        /// Not asked for yet (or to be asked again now).
        case wanted
        /// Asked for at `at`; the hub's verification of intent (`mode`) is awaited.
        case requested(mode: String, at: Date)
        /// Verified: the hub distributes until `until`; renewed from `renewAt`.
        case active(until: Date, renewAt: Date)
        /// Denied by the hub, or the request failed: asked again from `retryAt`.
        case retrying(retryAt: Date, reason: String)
    }

    /// The feed's URL (as configured).
    public var feed: String
    /// The hub and topic.
    public var links: WebSubLinks
    /// The `hub.secret` the hub signs distributions with (made for this subscription).
    public var secret: String
    /// Where it stands.
    public var state: State = .wanted
    /// Requests in a row that failed or were denied (the wait doubles with each).
    public var failures = 0

    /// Whether the hub distributes this feed now (the poll is only a safety net then).
    public func isActive(at now: Date) -> Bool {
        if case .active(let until, _) = state { return until > now }
        return false
    }
}

/// Every WebSub subscription of a watcher, as values: what to ask the hubs for and when, which
/// verification of intent to confirm, which secret checks a distribution. The watcher keeps one
/// behind a lock (its listener answers the hubs while its loop subscribes).
public struct WebSubSubscriptions: Sendable, Equatable {
    /// By feed URL.
    public private(set) var byFeed: [String: WebSubSubscription] = [:]
    /// How long a request may wait for the hub's verification before it is asked again.
    public static let verificationPatience: TimeInterval = 60
    /// The first wait after a denial or a failure (doubling, at most `longestWait`).
    public static let firstWait: TimeInterval = 30
    /// The longest wait between two tries.
    public static let longestWait: TimeInterval = 3600

    /// No subscriptions.
    public init() {}

    /// What the feed named this time: a new hub or topic starts a new subscription with a new
    /// secret; the same keeps the one in hand; none ends it (the hub's lease runs out).
    public mutating func observe(feed: String, links: WebSubLinks?, secret: () -> String) {
        guard let links else {
            byFeed[feed] = nil
            return
        }
        if byFeed[feed]?.links == links { return }
        byFeed[feed] = WebSubSubscription(feed: feed, links: links, secret: secret())
    }

    /// The subscriptions to ask for now (new, to renew, to retry, or unverified for too long),
    /// marked as requested: a verification that arrives while the request is on its way finds
    /// them so.
    public mutating func due(at now: Date) -> [WebSubSubscription] {
        var due: [WebSubSubscription] = []
        for (feed, subscription) in byFeed.sorted(by: { $0.key < $1.key }) {
            let ask: Bool
            switch subscription.state {
            case .wanted: ask = true
            case .requested(_, let at): ask = now.timeIntervalSince(at) >= Self.verificationPatience
            case .active(_, let renewAt): ask = now >= renewAt
            case .retrying(let retryAt, _): ask = now >= retryAt
            }
            guard ask else { continue }
            byFeed[feed]?.state = .requested(mode: "subscribe", at: now)
            due.append(byFeed[feed] ?? subscription)
        }
        return due
    }

    /// The hub's verification of intent (§5.3) for `feed`: true (answer with the challenge) only
    /// for a subscription requested in this `mode` for this `topic`; a subscription then runs
    /// for `leaseSeconds` and is renewed at four fifths of it.
    public mutating func verify(feed: String, mode: String, topic: String, leaseSeconds: Double?, at now: Date)
        -> Bool
    {
        guard let subscription = byFeed[feed], subscription.links.topic == topic,
            case .requested(let requested, _) = subscription.state, requested == mode
        else { return false }
        let lease = max(1, leaseSeconds ?? 86400)
        byFeed[feed]?.state = .active(
            until: now.addingTimeInterval(lease), renewAt: now.addingTimeInterval(lease * 0.8))
        byFeed[feed]?.failures = 0
        return true
    }

    /// The hub denied the subscription (§5.2) or the request failed: asked again after a wait
    /// that doubles with each failure in a row. False when `topic` is not this feed's.
    @discardableResult
    public mutating func failed(feed: String, topic: String? = nil, reason: String, at now: Date) -> Bool {
        guard let subscription = byFeed[feed], topic == nil || subscription.links.topic == topic else { return false }
        let failures = subscription.failures + 1
        let wait = min(Self.longestWait, Self.firstWait * pow(2, Double(min(failures - 1, 16))))
        byFeed[feed]?.failures = failures
        byFeed[feed]?.state = .retrying(retryAt: now.addingTimeInterval(wait), reason: reason)
        return true
    }

    /// When the next subscription is to be asked for (nil: none waits for a time).
    public func nextAction() -> Date? {
        byFeed.values.compactMap { subscription -> Date? in
            switch subscription.state {
            case .wanted: return .distantPast
            case .requested(_, let at): return at.addingTimeInterval(Self.verificationPatience)
            case .active(_, let renewAt): return renewAt
            case .retrying(let retryAt, _): return retryAt
            }
        }.min()
    }

    /// The secret that signs `feed`'s distributions, while it has a subscription.
    public func secret(feed: String) -> String? { byFeed[feed]?.secret }

    /// Whether the hub distributes `feed` now.
    public func isActive(feed: String, at now: Date) -> Bool { byFeed[feed]?.isActive(at: now) ?? false }

    /// The form of a subscription request (§5.1) with callback `callback`.
    public static func form(_ subscription: WebSubSubscription, callback: String) -> [(String, String)] {
        [
            ("hub.callback", callback), ("hub.mode", "subscribe"), ("hub.topic", subscription.links.topic),
            ("hub.secret", subscription.secret),
        ]
    }

    /// A new `hub.secret`: 32 random bytes in hex (the Recommendation allows up to 200).
    public static func newSecret() -> String {
        Hex.string(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }
}
