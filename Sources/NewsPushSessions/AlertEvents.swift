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
            let since = now.timeIntervalSince(sentAt)
            guard since <= AlertBuckets.window else {
                return (.notCounted("alert \(alertId) was sent over 7 days ago"), sentAt)
            }
            let digests = EventDigests.keyed(by: context.config.hub.connectionString)
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
