import Foundation
import NewsPushCore
import NewsPushSessions
import Prometheus

/// What the watcher's `/metrics` says (Prometheus text format): how fast alerts reach the hub
/// (`newspush_alert_latency_seconds`, from the cycle that first saw the story to the hub's
/// accept; `newspush_alert_age_seconds`, from the story's own `pubDate`), and counts of
/// cycles, fetches, pings and WebSub distributions.
public final class WatchMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let latency: ValueHistogram
    private let age: ValueHistogram
    private let cycles: Counter
    private let pushes: Counter
    private let fetches: Counter
    private let pings: Counter
    private let distributions: Counter
    private let ignored: Counter
    private let subscriptions: Gauge

    /// Latency buckets: sub-second up to the cron-like minutes.
    static let buckets: [Double] = [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900]

    /// `newspush_<name>_<unit>`, with its help line.
    private static func name(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "newspush", metricName: name, unitName: unit, helpText: help)
    }

    /// Empty metrics.
    public init() {
        latency = registry.makeValueHistogram(
            descriptor: Self.name(
                "alert_latency", "seconds",
                "Seconds from the watcher first seeing a story to the hub accepting its push"),
            buckets: Self.buckets)
        age = registry.makeValueHistogram(
            descriptor: Self.name(
                "alert_age", "seconds", "Seconds from a story's own date (pubDate) to the hub accepting its push"),
            buckets: Self.buckets + [3600, 86400])
        cycles = registry.makeCounter(descriptor: Self.name("watch_cycles", "total", "Cycles the watcher ran"))
        pushes = registry.makeCounter(descriptor: Self.name("watch_pushes", "total", "Pushes the hub accepted"))
        fetches = registry.makeCounter(
            descriptor: Self.name("watch_fetches", "total", "Feed documents fetched or distributed"))
        pings = registry.makeCounter(descriptor: Self.name("watch_pings", "total", "Publish pings taken"))
        distributions = registry.makeCounter(
            descriptor: Self.name("websub_distributions", "total", "WebSub distributions with a valid signature"))
        ignored = registry.makeCounter(
            descriptor: Self.name(
                "websub_ignored", "total",
                "WebSub distributions acknowledged and ignored (no valid signature, too large, unknown feed)"))
        subscriptions = registry.makeGauge(
            descriptor: Self.name(
                "websub_subscriptions", "active", "Feeds a WebSub hub distributes now (verified leases)"))
    }

    /// A cycle's pushes and fetches.
    public func record(_ result: RunResult) {
        cycles.increment()
        fetches.increment(by: Int64(result.fetches.count))
        for push in result.report.pushes {
            guard let accepted = push.acceptedAt else { continue }
            pushes.increment()
            if let seen = push.firstSeen { latency.record(max(0, accepted.timeIntervalSince(seen))) }
            if let published = push.published { age.record(max(0, accepted.timeIntervalSince(published))) }
        }
    }

    /// A ping was taken.
    public func pinged() { pings.increment() }

    /// A distribution was taken (`valid`) or acknowledged and ignored.
    public func distributed(valid: Bool) {
        if valid { distributions.increment() } else { ignored.increment() }
    }

    /// The metrics in Prometheus text format, with `active` WebSub subscriptions.
    public func text(subscriptions active: Int) -> String {
        subscriptions.set(Double(active))
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
