import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// What became of an app's report of an alert (SPEC §11): the phone is told `204` either way.
public enum AlertEventOutcome: Sendable, Equatable {
    /// Counted: these kinds were new for the installation (an open brings its receipt).
    case counted([AlertEventKind])
    /// Not counted, and why (for the log, never for the phone).
    case notCounted(String)
}

extension DeviceSession {
    /// Counts `caller`'s report that installation `installationId` `kind` alert `alertId`: only
    /// for an installation of the index registered by this caller (anonymous for an anonymous
    /// one), an alert of this ledger sent within the last 7 days, once per installation,
    /// alert and kind, under a keyed digest that names no one. `known`: when the alert went, if
    /// the back-end has it already; the time read is returned for the next report.
    public func report(
        _ kind: AlertEventKind, alert alertId: String, installation installationId: String, caller: Caller,
        sentAt known: Date? = nil
    ) throws(SessionError) -> (outcome: AlertEventOutcome, sentAt: Date?) {
        let now = context.clock.now()
        do {
            var sentAt = known
            if sentAt == nil { sentAt = try ledger.alertSentAt(id: alertId) }
            guard let sentAt else { return (.notCounted("no alert \(alertId)"), nil) }
            switch AlertEventReport(
                kind: kind, alert: alertId, installation: installationId, sentAt: sentAt, now: now, context: context)
            {
            case .notCounted(let outcome): return (outcome, sentAt)
            case .count(let keys, let bucket):
                let counted = try ledger.countAlertEvent(
                    id: alertId, installation: installationId, owner: caller.name, keys: keys, bucket: bucket, at: now)
                return (AlertEventReport.outcome(counted, installation: installationId), sentAt)
            }
        } catch {
            throw .ledger(error)
        }
    }
}

/// An app's report of an alert worked out before the ledger is asked (SPEC §11): the keyed
/// digests it counts under (an open brings its receipt along) and the minute since the send,
/// or why it is not counted (sent over 7 days ago).
enum AlertEventReport {
    case count(keys: AlertEventKeys, bucket: Int)
    case notCounted(AlertEventOutcome)

    init(kind: AlertEventKind, alert: String, installation: String, sentAt: Date, now: Date, context: SessionContext) {
        let since = now.timeIntervalSince(sentAt)
        guard since <= AlertBuckets.window else {
            self = .notCounted(.notCounted("alert \(alert) was sent over 7 days ago"))
            return
        }
        let digests = EventDigests.keyed(by: context.config.hub.connectionString)
        let kinds: [AlertEventKind] = kind == .opened ? [.opened, .received] : [.received]
        let keys = kinds.map { ($0, digests.event(alert: alert, kind: $0.rawValue, installation: installation)) }
        self = .count(keys: keys, bucket: AlertBuckets.bucket(secondsAfterSend: since))
    }

    /// The outcome once the ledger counted `counted` for `installation`.
    static func outcome(_ counted: [AlertEventKind], installation: String) -> AlertEventOutcome {
        counted.isEmpty
            ? .notCounted("no installation \(installation) of this caller, or counted before") : .counted(counted)
    }
}

/// An app's report counted without a session, when the back-end knows when the alert went:
/// on PostgreSQL in one statement on the request's event loop (`LedgerConnections.countAlertEvent`:
/// no session's thread, no lease held for a session); on SQLite in the shared connection's next
/// group commit, no thread waiting for it (`SessionPool.countOnSharedLedger`). Else, or when the
/// server does not answer, the caller is told to ask a session (`DeviceSession.report`): an
/// event counted already is never counted twice.
public struct AlertEventCounter: Sendable {
    /// What became of a report.
    public enum Answer: Sendable {
        case answered(AlertEventOutcome)
        case askASession
    }

    private let context: SessionContext
    private let sessions: SessionPool

    /// For `context`'s ledger, counted through `sessions`' connections.
    public init(context: SessionContext, sessions: SessionPool) {
        self.context = context
        self.sessions = sessions
    }

    /// Counts `caller`'s report that installation `installation` `kind` alert `alert`, sent at
    /// `sentAt`. A ledger that fails on SQLite throws (a session would fail alike).
    public func count(
        _ kind: AlertEventKind, alert: String, installation: String, caller: Caller, sentAt: Date?
    ) async throws(SessionError) -> Answer {
        guard let sentAt else { return .askASession }
        let now = context.clock.now()
        let keys: AlertEventKeys
        let bucket: Int
        switch AlertEventReport(
            kind: kind, alert: alert, installation: installation, sentAt: sentAt, now: now, context: context)
        {
        case .notCounted(let outcome): return .answered(outcome)
        case .count(let counting, let minute): (keys, bucket) = (counting, minute)
        }
        if let reader = sessions.connections {
            do {
                let counted = try await reader.countAlertEvent(
                    id: alert, installation: installation, owner: caller.name, keys: keys, bucket: bucket, at: now)
                return .answered(AlertEventReport.outcome(counted, installation: installation))
            } catch {
                // A session asks again, and its failure is the one the log records.
                return .askASession
            }
        }
        do {
            let counted = try await sessions.countOnSharedLedger(
                id: alert, installation: installation, owner: caller.name, keys: keys, bucket: bucket, at: now)
            return counted.map { .answered(AlertEventReport.outcome($0, installation: installation)) } ?? .askASession
        } catch {
            throw .ledger(error)
        }
    }
}

extension Ledger {
    /// Starts the report of each alert of a story the hub accepted (trials, tests, notices and
    /// personal alerts have none; `SendJournal`): when it went (a scheduled one: when it is to
    /// be delivered) and its audience, the installations of the index its expression matches now
    /// (nil without an index: the devices were registered elsewhere).
    public func noteAccepted(_ entries: [OutboxEntry]) throws(LedgerError) {
        let alerts = entries.filter { !$0.kind.isTrial }
        guard !alerts.isEmpty else { return }
        let indexed = try hasInstallations()
        var audiences: [String: Int] = [:]
        for entry in alerts {
            guard let accepted = entry.acceptedAt else { continue }
            var audience = audiences[entry.tags]
            if audience == nil && indexed, let node = try? TagExpression.parse(entry.tags) {
                audience = try installationCount(matching: node)
                audiences[entry.tags] = audience
            }
            try noteAlertSent(id: entry.id, acceptedAt: entry.scheduledAt ?? accepted, audience: audience)
        }
    }

    /// How many installations of the index tag expression `node` reaches; nil when it names
    /// more than 16 tags (reach is counted for at most 16).
    func installationCount(matching node: TagExpression.Node) throws(LedgerError) -> Int? {
        let tags = node.tags.sorted()
        guard tags.count <= 16 else { return nil }
        return try installationCount(tags: tags, matches: node.matches)
    }
}
