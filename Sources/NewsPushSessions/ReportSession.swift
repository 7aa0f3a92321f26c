import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel

/// One alert as `newspush report --format json` prints it (SPEC §11); unknown values are null.
public struct ReportRow: Sendable, Encodable {
    /// The alert as the ledger reports it.
    public var report: AlertReport

    /// A row of `report`.
    public init(_ report: AlertReport) { self.report = report }

    enum CodingKeys: String, CodingKey {
        case id, kind, replaces, story, sentAt = "sent_at", accepted, firstSeen = "first_seen", category, title, tags
        case audience, delivered, failed, received, opened, openRate = "open_rate", latency
        case medianTimeToOpen = "median_time_to_open", platforms
    }

    /// Received and opened on one platform.
    struct PlatformCounts: Encodable {
        var received: Int
        var opened: Int
    }

    /// The row with every field, null where unknown.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let r = report
        try c.encode(r.id, forKey: .id)
        try c.encode(r.kind.rawValue, forKey: .kind)
        try c.encode(r.replaces, forKey: .replaces)
        try c.encode(r.storyKey, forKey: .story)
        try c.encode(r.sentAt.map(Timestamp.format), forKey: .sentAt)
        try c.encode(r.acceptedAt.map(Timestamp.format), forKey: .accepted)
        try c.encode(r.firstSeen.map(Timestamp.format), forKey: .firstSeen)
        try c.encode(r.category.rawValue, forKey: .category)
        try c.encode(r.title, forKey: .title)
        try c.encode(r.tags, forKey: .tags)
        try c.encode(r.audience, forKey: .audience)
        try c.encode(r.delivered, forKey: .delivered)
        try c.encode(r.failed, forKey: .failed)
        try c.encode(r.counts.receivedTotal, forKey: .received)
        try c.encode(r.counts.openedTotal, forKey: .opened)
        try c.encode(r.openRate.map { ($0 * 10000).rounded() / 10000 }, forKey: .openRate)
        try c.encode(r.latency.map { ($0 * 1000).rounded() / 1000 }, forKey: .latency)
        try c.encode(r.counts.medianSecondsToOpen, forKey: .medianTimeToOpen)
        let platforms = Set(r.counts.received.keys).union(r.counts.opened.keys)
        try c.encode(
            Dictionary(
                uniqueKeysWithValues: platforms.map {
                    ($0, PlatformCounts(received: r.counts.received[$0] ?? 0, opened: r.counts.opened[$0] ?? 0))
                }), forKey: .platforms)
    }
}

/// `newspush report` and the desk's Reports page (SPEC §11): what each alert did.
public struct ReportSession: Sendable {
    /// The ledger reported on (`state:`, or `--state`).
    public var location: String
    /// When the session runs.
    public var clock: SessionClock

    /// A report session of the ledger configured as `location`.
    public init(location: String, clock: SessionClock = .system) {
        self.location = location
        self.clock = clock
    }

    /// A report session of `context`'s ledger.
    public init(context: SessionContext) { self.init(location: context.config.statePath, clock: context.clock) }

    /// The alerts sent in the last `since` seconds (or alert `id` alone, whenever it went),
    /// newest first, at most `limit`.
    public func alerts(since: Double, id: String? = nil, limit: Int = 1000) throws(SessionError) -> [AlertReport] {
        let from = id == nil ? clock.now().addingTimeInterval(-since) : Date(timeIntervalSince1970: 0)
        return try SessionLedger.with(location, .read) { ledger, _ in
            try ledger.alertReports(since: from, id: id, limit: limit)
        }
    }

    /// The rows as `report` prints them for people: one line per alert.
    public static func text(_ reports: [AlertReport]) -> String {
        guard !reports.isEmpty else { return "no alert was sent in this period" }
        let header = [
            "ALERT", "SENT", "CATEGORY", "AUDIENCE", "DELIVERED", "RECEIVED", "OPENED", "RATE", "LATENCY",
            "TO OPEN", "TITLE",
        ]
        let rows = reports.map { r -> [String] in
            [
                r.id, r.acceptedAt.map(Timestamp.format) ?? "-", r.category.rawValue,
                r.audience.map(String.init) ?? "-",
                r.delivered.map { "\($0)\(r.failed.map { " (\($0) failed)" } ?? "")" } ?? "-",
                String(r.counts.receivedTotal), String(r.counts.openedTotal),
                r.openRate.map { String(format: "%.1f%%", $0 * 100) } ?? "-",
                r.latency.map(Self.duration) ?? "-", r.counts.medianSecondsToOpen.map(Self.duration) ?? "-",
                (r.kind == .push ? "" : "[\(r.kind.rawValue)] ") + r.title,
            ]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.indices.map {
                $0 == row.count - 1 ? row[$0] : row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0)
            }
            .joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// `42 s`, `3.5 min`, `2.0 h`.
    public static func duration(_ seconds: Double) -> String {
        if seconds < 100 { return String(format: "%.1f s", seconds) }
        if seconds < 6000 { return String(format: "%.1f min", seconds / 60) }
        return String(format: "%.1f h", seconds / 3600)
    }
}
