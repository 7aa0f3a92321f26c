import Foundation
import NewsPushModel

/// The counters of one alert (SPEC §11): how many received and opened it, by platform and by
/// time since the send. Nothing in it names a reader.
public struct AlertCounts: Sendable, Equatable {
    /// Received (an open counts as received too), by platform (`apns`, `fcmv1`, `wns`, …).
    public var received: [String: Int] = [:]
    /// Opened, by platform.
    public var opened: [String: Int] = [:]
    /// Opened, by bucket of time since the send (`AlertBuckets`): minutes 0–59, then hours.
    public var openedByBucket: [Int: Int] = [:]

    /// No events yet.
    public init() {}

    /// Received on every platform.
    public var receivedTotal: Int { received.values.reduce(0, +) }
    /// Opened on every platform.
    public var openedTotal: Int { opened.values.reduce(0, +) }

    /// The middle time to open, in seconds since the send, to its bucket's middle (a minute in
    /// the first hour, an hour after); nil before any open.
    public var medianSecondsToOpen: Double? {
        let total = openedTotal
        guard total > 0 else { return nil }
        var seen = 0
        for bucket in openedByBucket.keys.sorted() {
            seen += openedByBucket[bucket] ?? 0
            if seen * 2 >= total { return AlertBuckets.middle(of: bucket) }
        }
        return nil
    }
}

/// Events are counted in buckets of time since the send: one per minute over the first hour,
/// one per hour after, until the events stop being taken (7 days): at most 227 per alert,
/// kind and platform, however many phones report.
public enum AlertBuckets {
    /// Events are taken for this long after the send.
    public static let window: Double = 7 * 86400

    /// The bucket of an event `seconds` after the send: its minute below an hour, else the
    /// first minute of its hour.
    public static func bucket(secondsAfterSend seconds: Double) -> Int {
        let minute = max(0, Int(seconds / 60))
        return minute < 60 ? minute : minute / 60 * 60
    }

    /// The middle of `bucket`, in seconds since the send.
    public static func middle(of bucket: Int) -> Double {
        bucket < 60 ? Double(bucket) * 60 + 30 : Double(bucket) * 60 + 1800
    }
}

/// One alert as a report shows it (SPEC §11).
public struct AlertReport: Sendable, Equatable {
    /// The alert id (its outbox id).
    public var id: String
    /// A first push, a repeat or a correction.
    public var kind: OutboxEntry.Kind
    /// For a correction or a repeat: the story's first alert.
    public var replaces: String?
    /// The story.
    public var storyKey: String
    /// Its category.
    public var category: NewsCategory
    /// The headline as pushed.
    public var title: String
    /// The tag expression it went to.
    public var tags: String
    /// When newspush sent it (its last attempt).
    public var sentAt: Date?
    /// When the story was first seen (a run's feed, or the editor's publish).
    public var firstSeen: Date?
    /// When the hub accepted it.
    public var acceptedAt: Date?
    /// Installations of the index its expression matched when it was sent; nil when not counted.
    public var audience: Int?
    /// The hub's count of devices it delivered to, where the tier reports it.
    public var delivered: Int?
    /// The hub's count of devices it could not deliver to (every outcome but success).
    public var failed: Int?
    /// What the apps reported.
    public var counts: AlertCounts

    /// Seconds from first seen to accepted.
    public var latency: Double? {
        guard let firstSeen, let acceptedAt else { return nil }
        return max(0, acceptedAt.timeIntervalSince(firstSeen))
    }

    /// Opened ÷ audience; nil without an audience.
    public var openRate: Double? {
        guard let audience, audience > 0 else { return nil }
        return Double(counts.openedTotal) / Double(audience)
    }
}

/// An event's keyed digests, one per kind it counts (an open brings its receipt along).
public typealias AlertEventKeys = [(kind: AlertEventKind, digest: String)]

extension Ledger {
    // MARK: Reports (SPEC §11)

    /// Notes that the hub accepted alert `id` at `acceptedAt`, reaching `audience` installations
    /// of the index (the report began when it was about to be sent).
    public func noteAlertSent(id: String, acceptedAt: Date, audience: Int?) throws(LedgerError) {
        try writingOne(
            """
            INSERT INTO alert_reports (alert_id, sent_at, audience) VALUES (?, ?, ?)
            ON CONFLICT (alert_id) DO UPDATE SET sent_at = excluded.sent_at, audience = excluded.audience
            """, [.text(id), SQLValue(acceptedAt), SQLValue(audience)], durable: false)
    }

    /// When the hub accepted alert `id` (nil: no such alert of this newsroom's ledger).
    public func alertSentAt(id: String) throws(LedgerError) -> Date? {
        try reading {
            try db.query("SELECT sent_at FROM alert_reports WHERE alert_id = ?", [.text(id)]).first?.date(0)
        }
    }

    /// Counts one event of alert `id` by installation `installation` under each of `keys` not
    /// counted before (each a keyed digest of the installation, alert and kind; an open brings
    /// its receipt along), in `bucket` and in the installation's platform's total: only when
    /// the index holds the installation for `owner` (nil: anonymous). Returns the kinds counted.
    ///
    /// One statement where the engine modifies in a `WITH` (PostgreSQL: one round trip, where
    /// the read, two inserts and a transaction's four statements took six), committed without
    /// waiting for the disk as SQLite's are (a crash may lose the last moments' events, never a
    /// push): a counter row is then held for microseconds rather than an fsync, which 64 phones
    /// reporting one alert otherwise queue behind. Else the installation's read and the two
    /// writes in one turn of the shared connection (SQLite), committed with the next group.
    @discardableResult
    public func countAlertEvent(
        id: String, installation: String, owner: String?, keys: AlertEventKeys,
        bucket: Int, at time: Date
    ) throws(LedgerError) -> [AlertEventKind] {
        if db.modifiesInWith {
            let statement = Self.alertEventStatement(
                id: id, installation: installation, owner: owner, keys: keys, bucket: bucket, at: time,
                commitWithoutWaiting: db.commitWithoutWaitingInSelect)
            return Self.countedKinds(try writingQuery(statement.sql, statement.arguments))
        }
        return try writing(
            redone: true,
            alertEventWrites(id: id, installation: installation, owner: owner, keys: keys, bucket: bucket, at: time))
    }

    /// `countAlertEvent` from a task, on a connection threads share (SQLite's index): its
    /// writes join the next group commit with no thread waiting for them (`GroupCommit`), and
    /// `schedule` runs that commit on a thread that may block when no write's thread is there to.
    /// Else as `countAlertEvent`.
    public func countAlertEvent(
        id: String, installation: String, owner: String?, keys: AlertEventKeys,
        bucket: Int, at time: Date, schedule: @escaping @Sendable (_ commit: @escaping @Sendable () -> Void) -> Void
    ) async throws(LedgerError) -> [AlertEventKind] {
        guard !db.modifiesInWith else {
            return try countAlertEvent(
                id: id, installation: installation, owner: owner, keys: keys, bucket: bucket, at: time)
        }
        return try await writing(
            redone: true, schedule: schedule,
            alertEventWrites(id: id, installation: installation, owner: owner, keys: keys, bucket: bucket, at: time))
    }

    /// `countAlertEvent`'s statements one at a time, for a transaction (SQLite): the
    /// installation's read, then each key's insert and, when it is new, its counts.
    private func alertEventWrites(
        id: String, installation: String, owner: String?, keys: AlertEventKeys,
        bucket: Int, at time: Date
    ) -> () throws -> [AlertEventKind] {
        let (installed, who) = Self.installationOf(installation, owner: owner)
        let db = db
        return { () throws -> [AlertEventKind] in
            guard let platform = try db.query(installed, who).first?.text(0) else { return [] }
            var counted: [AlertEventKind] = []
            for key in keys {
                let fresh = try db.run(
                    "INSERT INTO alert_event_keys (digest, at) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING",
                    [.text(key.digest), SQLValue(time)])
                guard fresh == 1 else { continue }
                try db.run(
                    """
                    INSERT INTO alert_counts (alert_id, kind, minute, platform, count) VALUES (?, ?, -1, ?, 1), (?, ?, ?, '', 1)
                    ON CONFLICT (alert_id, kind, minute, platform) DO UPDATE SET count = alert_counts.count + 1
                    """,
                    [
                        .text(id), .text(key.kind.rawValue), .text(platform), .text(id), .text(key.kind.rawValue),
                        .integer(Int64(bucket)),
                    ])
                counted.append(key.kind)
            }
            return counted
        }
    }

    /// The platform of installation `installation` when the index holds it for `owner`.
    private static func installationOf(_ installation: String, owner: String?) -> SQLStatement {
        (
            "SELECT platform FROM installations WHERE id = ? AND (owner = ? OR (owner IS NULL AND CAST(? AS TEXT) IS NULL))",
            [.text(installation), SQLValue(owner), SQLValue(owner)]
        )
    }

    /// `countAlertEvent` as one statement, for an engine that modifies in a `WITH`:
    /// `commitWithoutWaiting` is what its `SELECT` calls to commit without waiting for the disk.
    /// Its rows name the kinds counted (`countedKinds`).
    static func alertEventStatement(
        id: String, installation: String, owner: String?, keys: AlertEventKeys,
        bucket: Int, at time: Date, commitWithoutWaiting: String
    ) -> SQLStatement {
        let (installed, who) = installationOf(installation, owner: owner)
        let kinds = keys.map { _ in "(?, ?)" }.joined(separator: ", ")
        return (
            """
            WITH i AS (\(installed)), d(kind, digest) AS (VALUES \(kinds)),
            k AS (INSERT INTO alert_event_keys (digest, at) SELECT d.digest, ? FROM d, i
                  ON CONFLICT (digest) DO NOTHING RETURNING digest),
            c AS (SELECT d.kind, i.platform FROM k JOIN d ON d.digest = k.digest, i),
            n AS (INSERT INTO alert_counts (alert_id, kind, minute, platform, count)
                  SELECT ?, c.kind, -1, c.platform, 1 FROM c UNION ALL SELECT ?, c.kind, ?, '', 1 FROM c
                  ON CONFLICT (alert_id, kind, minute, platform) DO UPDATE SET count = alert_counts.count + 1
                  RETURNING kind)
            SELECT kind, \(commitWithoutWaiting) FROM n
            """,
            who + keys.flatMap { [.text($0.kind.rawValue), .text($0.digest)] }
                + [SQLValue(time), .text(id), .text(id), .integer(Int64(bucket))]
        )
    }

    /// The kinds the rows of `alertEventStatement` say were counted.
    static func countedKinds(_ rows: [SQLRow]) -> [AlertEventKind] {
        AlertEventKind.allCases.filter { kind in rows.contains { $0.text(0) == kind.rawValue } }
    }

    /// Keeps the hub's outcome counts of alert `id`.
    public func noteAlertOutcome(id: String, delivered: Int, failed: Int, at time: Date) throws(LedgerError) {
        try writingOne(
            "UPDATE alert_reports SET delivered = ?, failed = ?, outcome_at = ? WHERE alert_id = ?",
            [.integer(Int64(delivered)), .integer(Int64(failed)), SQLValue(time), .text(id)], durable: false)
    }

    /// Alerts accepted between `after` and `before` whose hub outcome is not known yet, with
    /// their notification ids, oldest first, at most `limit`.
    public func alertsAwaitingOutcome(after: Date, before: Date, limit: Int) throws(LedgerError) -> [(
        id: String, notificationId: String
    )] {
        try reading {
            try db.query(
                """
                SELECT r.alert_id, o.notification_id FROM alert_reports r JOIN outbox o ON o.id = r.alert_id
                WHERE r.outcome_at IS NULL AND r.sent_at >= ? AND r.sent_at < ? AND o.notification_id IS NOT NULL
                ORDER BY r.sent_at LIMIT ?
                """, [SQLValue(after), SQLValue(before), .integer(Int64(limit))]
            ).compactMap { row in row.text(0).flatMap { id in row.text(1).map { (id, $0) } } }
        }
    }

    /// The alerts sent since `since` (or alert `id` alone), newest first, at most `limit`, with
    /// what the apps reported of each.
    public func alertReports(since: Date, id: String? = nil, limit: Int = 1000) throws(LedgerError) -> [AlertReport] {
        try reading {
            let rows = try db.query(
                """
                SELECT o.id, o.kind, o.story_key, o.category, o.tags, o.properties, o.last_attempt,
                       o.accepted_at, s.first_seen, r.audience, r.delivered, r.failed, o.created_at
                FROM outbox o JOIN alert_reports r ON r.alert_id = o.id LEFT JOIN stories s ON s.key = o.story_key
                WHERE r.sent_at >= ? AND (CAST(? AS TEXT) IS NULL OR o.id = ?)
                  AND o.status IN ('sent', 'scheduled', 'unknown')
                ORDER BY r.sent_at DESC, o.id DESC LIMIT ?
                """, [SQLValue(since), SQLValue(id), SQLValue(id), .integer(Int64(limit))])
            var reports = rows.compactMap(Self.alertReport)
            try addCounts(to: &reports)
            try addFirstAlerts(to: &reports)
            return reports
        }
    }

    private static func alertReport(_ row: SQLRow) -> AlertReport? {
        guard let id = row.text(0), let kind = row.text(1).flatMap(OutboxEntry.Kind.init(rawValue:)),
            let storyKey = row.text(2), let category = row.text(3).flatMap(NewsCategory.init(rawValue:))
        else { return nil }
        let properties =
            (try? JSONDecoder().decode([String: String].self, from: Data((row.text(5) ?? "{}").utf8))) ?? [:]
        return AlertReport(
            id: id, kind: kind, replaces: nil, storyKey: storyKey, category: category,
            title: properties["title"] ?? "", tags: row.text(4) ?? "", sentAt: row.date(6),
            // A story the editor published has no feed's first sighting: its alert was planned then.
            firstSeen: row.date(8) ?? row.date(12), acceptedAt: row.date(7), audience: row.int(9),
            delivered: row.int(10), failed: row.int(11), counts: AlertCounts())
    }

    /// The counters of each report's alert: each kind's total per platform, and the opens per
    /// bucket of time since the send (a few index ranges per alert).
    private func addCounts(to reports: inout [AlertReport]) throws {
        let index = Dictionary(reports.indices.map { (reports[$0].id, $0) }, uniquingKeysWith: { first, _ in first })
        for chunk in reports.map(\.id).chunked(500) {
            let marks = Self.marks(chunk.count)
            for row in try db.query(
                "SELECT alert_id, kind, platform, count FROM alert_counts WHERE alert_id IN (\(marks)) "
                    + "AND kind IN ('received', 'opened') AND minute = -1", chunk.map(SQLValue.init))
            {
                guard let id = row.text(0), let at = index[id], let kind = row.text(1).flatMap(AlertEventKind.init),
                    let platform = row.text(2), let count = row.int(3)
                else { continue }
                switch kind {
                case .received: reports[at].counts.received[platform, default: 0] += count
                case .opened: reports[at].counts.opened[platform, default: 0] += count
                }
            }
            for row in try db.query(
                "SELECT alert_id, minute, count FROM alert_counts WHERE alert_id IN (\(marks)) AND kind = 'opened' "
                    + "AND minute >= 0 AND platform = ''", chunk.map(SQLValue.init))
            {
                guard let id = row.text(0), let at = index[id], let bucket = row.int(1), let count = row.int(2) else {
                    continue
                }
                reports[at].counts.openedByBucket[bucket, default: 0] += count
            }
        }
    }

    /// For each correction or repeat: the first alert of its story.
    private func addFirstAlerts(to reports: inout [AlertReport]) throws {
        for at in reports.indices where reports[at].kind != .push {
            reports[at].replaces = try db.query(
                """
                SELECT id FROM outbox WHERE story_key = ? AND kind = 'push' AND status IN ('sent', 'scheduled', 'unknown')
                ORDER BY id LIMIT 1
                """, [.text(reports[at].storyKey)]
            ).first?.text(0)
        }
    }
}

/// The report tables as `state export` writes them and `state import` reads them back: each
/// row an object of its columns, times as RFC 3339 (the ledger keeps milliseconds).
public struct ReportTables: Sendable, Equatable {
    /// The tables and their columns, in the order an import inserts them.
    static let tables: [(name: String, columns: [String])] = [
        ("alert_reports", ["alert_id", "sent_at", "audience", "delivered", "failed", "outcome_at"]),
        ("alert_counts", ["alert_id", "kind", "platform", "minute", "count"]),
        ("alert_event_keys", ["digest", "at"]),
    ]
    /// The columns that hold times.
    static let timeColumns: Set<String> = ["sent_at", "outcome_at", "at"]

    /// Each table's rows, in `tables`' columns.
    var rows: [String: [[SQLValue]]] = [:]

    /// The tables as JSON values.
    public var json: [String: Any] {
        var tables: [String: Any] = [:]
        for table in Self.tables {
            tables[table.name] = (rows[table.name] ?? []).map { row -> [String: Any] in
                var object: [String: Any] = [:]
                for (column, value) in zip(table.columns, row) {
                    object[column] = Self.json(value, time: Self.timeColumns.contains(column))
                }
                return object
            }
        }
        return tables
    }

    private static func json(_ value: SQLValue, time: Bool) -> Any {
        switch value {
        case .null: return NSNull()
        case .integer(let n): return time ? Timestamp.format(Date(timeIntervalSince1970: Double(n) / 1000)) : n
        case .real(let d): return d
        case .text(let s): return s
        }
    }

    /// The rows of each table in `export` (a `state export` document), in `tables`' columns.
    static func rows(_ export: [String: Any]) -> [(String, [[SQLValue]])] {
        tables.map { table in
            let objects = export[table.name] as? [[String: Any]] ?? []
            return (
                table.name,
                objects.map { object in
                    table.columns.map { column in
                        if timeColumns.contains(column) {
                            return SQLValue((object[column] as? String).flatMap(Timestamp.parse))
                        }
                        if let number = object[column] as? Int { return .integer(Int64(number)) }
                        return SQLValue(object[column] as? String)
                    }
                }
            )
        }
    }
}

extension Ledger {
    /// The report tables, whole (`state export`).
    public func reportTables() throws(LedgerError) -> ReportTables {
        try reading {
            var tables = ReportTables()
            guard try db.tableExists("alert_reports") else { return tables }
            for table in ReportTables.tables {
                let columns = table.columns.joined(separator: ", ")
                tables.rows[table.name] = try db.query(
                    "SELECT \(columns) FROM \(table.name) ORDER BY \(columns)", []
                ).map(\.values)
            }
            return tables
        }
    }
}
