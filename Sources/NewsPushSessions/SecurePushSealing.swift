import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel

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
}
