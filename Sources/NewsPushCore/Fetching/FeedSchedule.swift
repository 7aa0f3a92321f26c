import Foundation
import NewsPushModel

/// What one fetch of a feed tells the watcher's schedule.
public struct FetchOutcome: Sendable, Equatable {
    /// How the fetch went.
    public enum Kind: Sendable, Equatable {
        /// The feed listed stories no run had seen.
        case changed
        /// Nothing new (a 304, or the same stories again).
        case unchanged
        /// No answer, an error status, a document that could not be read, or a pause the server
        /// asked for.
        case failed
    }

    /// How the fetch went.
    public var kind: Kind
    /// The server's limit: not to be fetched before (its `Cache-Control: max-age`, `Expires`,
    /// `Retry-After` or RSS `<ttl>`, whichever ends last).
    public var notBefore: Date?
    /// The WebSub hub and topic the document named, when it was read (nil: none, or not read).
    public var webSub: WebSubLinks?

    /// An outcome of `kind`, with the server's limit.
    public init(_ kind: Kind, notBefore: Date? = nil) {
        self.kind = kind
        self.notBefore = notBefore
    }

    /// The outcome of a fetch at `now`: `changed` when it brought new stories, `failed` when it
    /// brought no usable document; the server's limits from its headers and the feed's `<ttl>`
    /// (minutes).
    public static func of(
        fetched: FetchedFeed, failed: Bool, newItems: Int, ttlMinutes: Int?, at now: Date
    ) -> FetchOutcome {
        let ttl = ttlMinutes.map { now.addingTimeInterval(min(Double($0) * 60, HTTPFreshness.longest)) }
        let limits = [fetched.freshUntil, fetched.retryAfter, ttl].compactMap { $0 }
        let kind: Kind = failed ? .failed : newItems > 0 ? .changed : .unchanged
        return FetchOutcome(kind, notBefore: limits.max())
    }
}

/// A feed's place in the watcher's schedule: when it is due, and what its history says about
/// how often it changes. The interval shrinks toward a quarter of the smoothed gap between
/// changes when the feed changes, grows by half when it does not (never past half the time it
/// has been quiet, once it has been seen to change), doubles the wait per failure in a row,
/// always within `min_interval`…`max_interval`, with the jitter given; a server's own limit
/// is never overtaken, even past `max_interval` (it is the publisher's rule, honoured up to a
/// day). A function of values: the watcher keeps one per feed.
public struct FeedSchedule: Sendable, Equatable {
    /// When the feed is next fetched.
    public var due: Date
    /// The interval the feed's changes have earned (seconds).
    public var interval: TimeInterval
    /// When a fetch last brought new stories.
    public var lastChange: Date?
    /// The smoothed gap between changes (seconds), once two were seen.
    public var changeGap: TimeInterval?
    /// Failures in a row.
    public var failures = 0

    /// A feed not fetched yet: due at `now`, at the usual interval.
    public static func first(at now: Date, settings: WatchSettings) -> FeedSchedule {
        FeedSchedule(due: now, interval: settings.interval)
    }

    /// The schedule after a fetch at `now` that went as `outcome`; `jitter` (0.9…1.1, say)
    /// scales the wait so that feeds fetched together drift apart.
    public func next(after outcome: FetchOutcome, at now: Date, settings: WatchSettings, jitter: Double)
        -> FeedSchedule
    {
        var next = self
        let bounds = settings.minInterval...max(settings.minInterval, settings.maxInterval)
        func clamped(_ seconds: TimeInterval) -> TimeInterval {
            min(max(seconds, bounds.lowerBound), bounds.upperBound)
        }
        var wait: TimeInterval
        switch outcome.kind {
        case .changed:
            if let lastChange {
                let gap = now.timeIntervalSince(lastChange)
                next.changeGap = changeGap.map { 0.5 * $0 + 0.5 * gap } ?? gap
            }
            next.interval = clamped(next.changeGap.map { $0 / 4 } ?? interval / 2)
            next.lastChange = now
            next.failures = 0
            wait = next.interval
        case .unchanged:
            let quiet = lastChange.map { now.timeIntervalSince($0) } ?? .infinity
            let ceiling = changeGap.map { max($0, quiet) / 2 } ?? .infinity
            next.interval = clamped(min(interval * 1.5, max(ceiling, interval)))
            next.failures = 0
            wait = next.interval
        case .failed:
            next.failures = failures + 1
            wait = interval * pow(2, Double(min(next.failures, 16)))
        }
        wait = clamped(wait * jitter)
        next.due = max(now.addingTimeInterval(wait), outcome.notBefore ?? now)
        return next
    }
}
