import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// The ledger is the send journal of every push, and seals id-only pushes before they go.
extension Ledger: SendJournal {
    /// Seals each id-only entry (`SecurePush`): its texts become a secure push under a freshly
    /// drawn id (another is drawn if the id is taken), kept until the push expires, and the
    /// entry keeps only the id, in one transaction. Expired secure pushes are deleted first.
    public func seal(_ entries: [OutboxEntry], at time: Date) throws(LedgerError) -> [OutboxEntry] {
        guard entries.contains(where: SecurePush.needsSealing) else { return entries }
        try deleteExpiredSecurePushes(now: time)
        var sealed: [OutboxEntry] = []
        for entry in entries {
            guard SecurePush.needsSealing(entry) else {
                sealed.append(entry)
                continue
            }
            let texts = SecurePush.texts(of: entry)
            let expires = (entry.scheduledAt ?? time).addingTimeInterval(entry.expiresAfter)
            while true {
                let id = SecurePush.drawID()
                let record = SecurePushRecord(
                    id: id, tags: entry.tags, texts: texts, sender: entry.properties["from"], created: time,
                    expires: expires)
                let candidate = SecurePush.sealed(entry, id: id)
                if try sealSecurePush(record, entryID: entry.id, properties: candidate.properties) {
                    sealed.append(candidate)
                    break
                }
            }
        }
        return sealed
    }

    /// Starts the report of each alert of a story the hub accepted (trials, tests, notices and
    /// personal alerts have none): when it went (a scheduled one: when it is to be delivered)
    /// and its audience, the installations of the index its expression matches now (nil
    /// without an index: the devices were registered elsewhere).
    public func noteAccepted(_ entries: [OutboxEntry]) throws(LedgerError) {
        let alerts = entries.filter { !$0.kind.isTrial }
        guard !alerts.isEmpty else { return }
        let indexed = try installationTotal() > 0
        var audiences: [String: Int] = [:]
        for entry in alerts {
            guard let accepted = entry.acceptedAt else { continue }
            var audience = audiences[entry.tags]
            if audience == nil && indexed {
                audience = try self.audience(of: entry.tags)
                audiences[entry.tags] = audience
            }
            try noteAlertSent(id: entry.id, acceptedAt: entry.scheduledAt ?? accepted, audience: audience)
        }
    }

    /// How many installations of the index `expression` matches (nil when it cannot be
    /// counted: more than 16 tags).
    private func audience(of expression: String) throws(LedgerError) -> Int? {
        guard let node = try? TagExpression.parse(expression) else { return nil }
        let tags = node.tags.sorted()
        guard tags.count <= 16 else { return nil }
        return try installationCount(tags: tags, matches: node.matches)
    }
}
