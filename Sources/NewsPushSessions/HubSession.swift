import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// One notification's telemetry as `hub status` shows it.
public struct HubStatusRow: Sendable, Encodable {
    /// The notification asked about.
    public var notificationId: String
    /// Its story, when it came from the ledger.
    public var storyKey: String?
    /// Its message, when it came from the ledger.
    public var message: String?
    /// What the hub reported.
    public var telemetry: NotificationDetails?
    /// Why the hub reported nothing.
    public var error: String?
    /// How the hub refused, for the exit status: its HTTP status, or nil when unreachable.
    public var failedStatus: Int?
    /// Set when the hub could not be reached at all.
    public var unreachable = false
    /// Set when the hub has not processed the notification yet (404 within 30 minutes of the send).
    public var notProcessedYet = false
    /// When the notification was sent, when the ledger says.
    var sentAt: Date?

    enum CodingKeys: String, CodingKey {
        case telemetry, error, message, notificationId = "notification_id", storyKey = "story_key"
        case notProcessedYet = "not_processed_yet"
    }
}

/// What `hub status` found: one row per notification asked about.
public struct HubStatusOutcome: Sendable {
    /// One row per notification.
    public var rows: [HubStatusRow]
    /// `--last N` found no push with a notification id in the ledger.
    public var nothingInLedger: Bool
}

extension HubStatusRow {
    /// The row as `hub status` prints it (and the desk shows it): the id, the ledger's message,
    /// the hub's state and times, and each platform's outcome counts.
    public var text: String {
        var lines = ["\(notificationId)\(message.map { "  \($0)" } ?? "")"]
        if let error { lines.append("  \(error)") }
        if let t = telemetry {
            lines.append(
                "  state \(t.state ?? "?"); enqueued \(t.enqueueTime ?? "-"), started \(t.startTime ?? "-"), "
                    + "ended \(t.endTime ?? "-")"
            )
            if t.outcomeCounts.isEmpty { lines.append("  no device outcomes yet") }
            for (platform, counts) in t.outcomeCounts.sorted(by: { $0.key < $1.key }) {
                lines.append(
                    "  \(platform): "
                        + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// What `hub cancel` did.
public enum HubCancelOutcome: Sendable, Equatable {
    /// Cancelled at the hub; `recorded` is false when the ledger had no record of the send.
    case cancelled(recorded: Bool)
    /// The hub answered; nothing was cancelled.
    case refused(CancelOutcome)
    /// Cancelled at the hub, but the ledger could not record it.
    case notRecorded(LedgerError)
}

/// The `hub` commands as sessions: tokens, telemetry and cancelling scheduled sends.
public struct HubSession: Sendable {
    /// The newsroom whose hub it talks to.
    public var context: SessionContext

    /// A hub session for `context`.
    public init(context: SessionContext) {
        self.context = context
    }

    /// The `Authorization` header value for `uri` (default: the hub's resource URI), expiring at
    /// `expiry` (Unix seconds) or `lifetime` seconds from now (default an hour).
    public func token(uri: String?, expiry: Int?, lifetime: Double?) throws(SessionError) -> String {
        let connection: HubConnectionString
        do { connection = try HubConnectionString(parsing: context.config.hub.connectionString) } catch {
            throw .connectionString(error)
        }
        let se = expiry ?? Int(Date().timeIntervalSince1970 + (lifetime ?? 3600))
        let resource = uri ?? SharedAccessSignature.hubResourceURI(host: connection.host, hub: context.config.hub.name)
        return SharedAccessSignature.token(
            resourceURI: resource, keyName: connection.keyName, key: connection.key, expiry: se)
    }

    /// The hub's telemetry of `notificationId`, or of the ledger's `last` notifications; a
    /// notification the hub has not processed yet is asked again every 10 s for up to `wait`
    /// seconds.
    public func status(notificationId: String?, last: Int?, wait: Double? = nil) throws(SessionError)
        -> HubStatusOutcome
    {
        let client = try context.hubClient()
        var rows: [HubStatusRow] = []
        if let notificationId {
            rows = [HubStatusRow(notificationId: notificationId)]
        } else if let last {
            let entries = try context.withLedger(.read) { ledger, _ in try ledger.latestNotifications(last) }
            rows = entries.map {
                var row = HubStatusRow(
                    notificationId: $0.notificationId ?? "", storyKey: $0.storyKey,
                    message: $0.properties["messageParam"] ?? $0.properties["url"])
                row.sentAt = $0.lastAttempt
                return row
            }
        }
        var asked = rows.indices.map { $0 }
        let deadline = Date().addingTimeInterval(wait ?? 0)
        while true {
            for index in asked { Self.ask(client, about: &rows[index]) }
            asked = rows.indices.filter { rows[$0].notProcessedYet }
            // The service asks for 10 s between tries while it has not processed a send.
            let left = deadline.timeIntervalSinceNow
            guard !asked.isEmpty, left > 0 else { break }
            Thread.sleep(forTimeInterval: min(Self.retryInterval, left))
        }
        return HubStatusOutcome(rows: rows, nothingInLedger: last != nil && rows.isEmpty)
    }

    /// Seconds between tries of a notification the hub has not processed yet.
    static let retryInterval: Double = 10

    /// The hub's telemetry of one row, in place.
    private static func ask(_ client: NotificationHubClient, about row: inout HubStatusRow) {
        row.notProcessedYet = false
        row.error = nil
        row.failedStatus = nil
        switch client.telemetry(id: row.notificationId, sentAt: row.sentAt) {
        case .details(let details): row.telemetry = details
        case .notProcessedYet(let sent):
            row.notProcessedYet = true
            row.error =
                "not processed yet: sent \(Int(Date().timeIntervalSince(sent).rounded())) s ago, and the hub answers "
                + "404 until it has processed a send (up to 30 minutes); ask again (hub status --wait 2m retries)"
        case .failed(let status, let reason):
            row.error = reason
            row.failedStatus = status
        case .unreachable(let reason):
            row.error = reason
            row.unreachable = true
        }
    }

    /// Cancels scheduled send `scheduledId` at the hub and records it, under the run lock
    /// (taken first, waiting up to `wait` seconds for a running job); `editor` is on the record
    /// (nil: the login name).
    public func cancel(_ scheduledId: String, wait: Double?, editor: String? = nil) throws(SessionError)
        -> HubCancelOutcome
    {
        let client = try context.hubClient()
        // Not `SessionLedger.with`: the hub's cancel goes out even when the ledger then cannot
        // be opened (an embargoed push must not go out because the record is broken); that is
        // reported as `.notRecorded`.
        let lock: LedgerLock
        do {
            lock = try LedgerLock(configured: context.config.statePath, wait: wait)
        } catch {
            throw .ledger(error)
        }
        defer { withExtendedLifetime(lock) {} }
        let answer = client.cancelScheduled(id: scheduledId)
        guard answer == .cancelled else { return .refused(answer) }
        do {
            let ledger = try Ledger.open(configured: context.config.statePath, access: .write, lock: lock)
            let now = context.clock.now()
            let recorded = try ledger.cancelScheduled(notificationId: scheduledId, at: now)
            try ledger.recordAudit([
                AuditRecord(
                    at: now, editor: editor ?? ReviewSession.loginName(), action: .cancelled,
                    detail: "scheduled send \(scheduledId)")
            ])
            return .cancelled(recorded: recorded)
        } catch {
            return .notRecorded(error)
        }
    }
}
