import Foundation

/// Where a feed's changes are announced (W3C WebSub §4, discovery): the hub to subscribe at and
/// the topic, the feed's own canonical URL.
public struct WebSubLinks: Sendable, Equatable, Hashable, Codable {
    /// The hub's URL.
    public var hub: String
    /// The topic: the feed's `rel="self"` URL (the fetched URL when it names none).
    public var topic: String

    /// A hub and topic.
    public init(hub: String, topic: String) {
        self.hub = hub
        self.topic = topic
    }
}

/// One feed's WebSub subscription (W3C WebSub §5, SPEC §10), as the ledger keeps it for every
/// watcher sharing it: at which hub, for which topic, the secret the hub signs with, the token
/// of its callback path, and where it stands. One per feed; renewed with the same secret and
/// token by whichever watcher holds the feed.
public struct WebSubSubscription: Sendable, Equatable, Codable {
    /// Where a subscription stands.
    public enum State: Sendable, Equatable, Codable {
        /// Not asked for yet (or to be asked again now).
        case wanted
        /// Asked for at `at`; the hub's verification of intent (`mode`) is awaited.
        case requested(mode: String, at: Date)
        /// Verified: the hub distributes until `until`; renewed from `renewAt`.
        case active(until: Date, renewAt: Date)
        /// Denied by the hub, or the request failed or went unverified: asked again from `retryAt`.
        case retrying(retryAt: Date, reason: String)
    }

    /// The feed's URL (as configured).
    public var feed: String
    /// The hub and topic.
    public var links: WebSubLinks
    /// The `hub.secret` the hub signs distributions with (made for this subscription; never
    /// printed, exported or logged).
    public var secret: String
    /// The random part of the callback's path (`…/websub/{feed}/{token}`): whoever does not
    /// know it cannot answer a verification or send a distribution.
    public var token: String
    /// Where it stands.
    public var state: State = .wanted
    /// Requests in a row that failed, were denied or went unverified (the wait doubles with each).
    public var failures = 0

    /// A subscription not asked for yet.
    public init(feed: String, links: WebSubLinks, secret: String, token: String) {
        self.feed = feed
        self.links = links
        self.secret = secret
        self.token = token
    }

    /// Whether the hub distributes this feed now (the poll is only a safety net then).
    public func isActive(at now: Date) -> Bool {
        if case .active(let until, _) = state { return until > now }
        return false
    }
}
