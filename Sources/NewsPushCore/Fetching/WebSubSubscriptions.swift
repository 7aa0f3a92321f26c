import Crypto
import Foundation
import NewsPushModel

/// What a WebSub subscription does next, as functions of values (the ledger keeps the
/// subscriptions; the watcher that holds a feed asks its hub, and whichever watcher a hub calls
/// answers it): when to ask, which verification of intent to confirm, how long a lease runs,
/// how long to wait after a failure.
public enum WebSubPolicy {
    /// How long a request may wait for the hub's verification before it counts as failed.
    public static let verificationPatience: TimeInterval = 60
    /// The first wait after a denial, a failure or a request left unverified (doubling, at
    /// most `longestWait`).
    public static let firstWait: TimeInterval = 30
    /// The longest wait between two tries.
    public static let longestWait: TimeInterval = 3600
    /// The longest lease taken, whatever a hub grants (SPEC §10: 10 days); renewed at four
    /// fifths of it.
    public static let longestLease: TimeInterval = 10 * 86400
    /// The lease assumed when a hub names none.
    public static let defaultLease: TimeInterval = 86400

    /// What a fetch found for `feed` against the subscription the ledger has: nil when it is to
    /// be kept as it is, `.some(nil)` when it ends (the feed names no hub any more: the lease
    /// runs out by itself), or a new subscription (new hub or topic, new secret and token).
    public static func observe(_ existing: WebSubSubscription?, feed: String, links: WebSubLinks?)
        -> WebSubSubscription??
    {
        guard let links else { return existing == nil ? nil : .some(nil) }
        if existing?.links == links { return nil }
        return .some(WebSubSubscription(feed: feed, links: links, secret: newSecret(), token: newToken()))
    }

    /// Whether `subscription` is to be asked for at `now` (new, to renew, or to retry).
    public static func isDue(_ subscription: WebSubSubscription, at now: Date) -> Bool {
        nextAction(subscription) <= now
    }

    /// When `subscription` is next to be acted on: asked for, or, when a request went
    /// unverified, counted as failed.
    public static func nextAction(_ subscription: WebSubSubscription) -> Date {
        switch subscription.state {
        case .wanted: return .distantPast
        case .requested(_, let at): return at.addingTimeInterval(verificationPatience)
        case .active(_, let renewAt): return renewAt
        case .retrying(let retryAt, _): return retryAt
        }
    }

    /// The subscription once it is asked for at `now` (a verification that arrives while the
    /// request is on its way finds it so); a request left unverified for too long is instead a
    /// failure, waited on like any other.
    public static func asking(_ subscription: WebSubSubscription, at now: Date) -> WebSubSubscription {
        if case .requested = subscription.state {
            return failed(subscription, reason: "the hub never verified the request", at: now)
        }
        var asked = subscription
        asked.state = .requested(mode: "subscribe", at: now)
        return asked
    }

    /// The hub's verification of intent (§5.3): the subscription as verified, or nil (answer
    /// 404, change nothing) unless it was requested in this `mode` for this `topic`. The lease
    /// runs for `leaseSeconds` (at most `longestLease`) and is renewed `renewalMargin` before it
    /// ends.
    public static func verify(
        _ subscription: WebSubSubscription, mode: String, topic: String, leaseSeconds: Double?, at now: Date
    ) -> WebSubSubscription? {
        guard subscription.links.topic == topic, case .requested(let requested, _) = subscription.state,
            requested == mode
        else { return nil }
        let lease = min(longestLease, max(1, leaseSeconds ?? defaultLease))
        var verified = subscription
        verified.state = .active(
            until: now.addingTimeInterval(lease), renewAt: now.addingTimeInterval(lease - renewalMargin(lease)))
        verified.failures = 0
        return verified
    }

    /// How long before a lease ends it is renewed: a fifth of it, but at least a minute (or half
    /// of a lease shorter than two minutes). Hubs count leases in whole seconds from when they
    /// store them (flask-websub's `strftime('%s')`), and a renewal takes a request and a
    /// verification: a short lease renewed at four fifths lapsed on a loaded machine, and a
    /// distribution published in the gap went to no one.
    public static func renewalMargin(_ lease: TimeInterval) -> TimeInterval {
        max(lease / 5, min(lease / 2, 60))
    }

    /// The hub denied the subscription (§5.2), the request failed or went unverified: asked
    /// again after a wait that doubles with each failure in a row.
    public static func failed(_ subscription: WebSubSubscription, reason: String, at now: Date) -> WebSubSubscription {
        var failed = subscription
        failed.failures += 1
        let wait = min(longestWait, firstWait * pow(2, Double(min(failed.failures - 1, 16))))
        failed.state = .retrying(retryAt: now.addingTimeInterval(wait), reason: reason)
        return failed
    }

    /// A hub's `hub.lease_seconds`: a whole number of seconds (at most twelve digits, so no
    /// value can overflow), or nil when absent; `.some(nil)` when it is there but no such
    /// number (`1e308`, `inf`, `nan`, `-5`): such a verification is refused.
    public static func leaseSeconds(_ text: String?) -> Double?? {
        guard let text else { return .some(nil) }
        guard (1...12).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return .some(Double(text))
    }

    /// The form of a subscription request (§5.1) with callback `callback`.
    public static func form(_ subscription: WebSubSubscription, callback: String) -> [(String, String)] {
        [
            ("hub.callback", callback), ("hub.mode", "subscribe"), ("hub.topic", subscription.links.topic),
            ("hub.secret", subscription.secret), ("hub.lease_seconds", String(Int(longestLease))),
        ]
    }

    /// The callback URL of a subscription: the configured base, the feed's path segment and the
    /// subscription's token.
    public static func callback(base: String, feedSegment: String, token: String) -> String {
        (base.hasSuffix("/") ? base : base + "/") + feedSegment + "/" + token
    }

    /// A new `hub.secret`: 32 random bytes in hex (the Recommendation allows up to 200).
    public static func newSecret() -> String {
        Hex.string(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    /// A new callback token: 128 random bits in hex (SPEC §10: at least 128).
    public static func newToken() -> String {
        Hex.string(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) })
    }

    /// Whether `token` has a callback token's form (32 lower-case hex digits).
    public static func isToken(_ token: String) -> Bool {
        token.utf8.count == 32 && token.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
