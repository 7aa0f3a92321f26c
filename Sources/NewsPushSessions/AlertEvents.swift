import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel

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
            let since = now.timeIntervalSince(sentAt)
            guard since <= AlertBuckets.window else {
                return (.notCounted("alert \(alertId) was sent over 7 days ago"), sentAt)
            }
            let digests = EventDigests(secret: context.config.hub.connectionString)
            let kinds: [AlertEventKind] = kind == .opened ? [.opened, .received] : [.received]
            let counted = try ledger.countAlertEvent(
                id: alertId, installation: installationId, owner: caller.name,
                keys: kinds.map {
                    ($0, digests.event(alert: alertId, kind: $0.rawValue, installation: installationId))
                },
                bucket: AlertBuckets.bucket(secondsAfterSend: since), at: now)
            let outcome: AlertEventOutcome =
                counted.isEmpty
                ? .notCounted("no installation \(installationId) of this caller, or counted before") : .counted(counted)
            return (outcome, sentAt)
        } catch {
            throw .ledger(error)
        }
    }
}
