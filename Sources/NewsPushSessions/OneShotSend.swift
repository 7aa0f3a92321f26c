import FeedParsing
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// A push sent once and never retried by a run (a trial, a test, a personal alert, a message
/// through the app back-end), journalled like any push: the intent before the request, the
/// outcome after.
enum OneShotSend {
    /// What a one-shot send came to.
    struct Sent {
        /// The outcome as recorded.
        var outcome: OutboxOutcome
        /// The entry as sent (an id-only push sealed: its `secureId`).
        var entry: OutboxEntry
        /// The hub's answer to each request.
        var answers: [SendOutcome]
        /// Why sending had to stop, if it did.
        var stop: SendStop?
    }

    /// Records `entry`, seals it when it is id-only, sends the requests `requests` builds from
    /// it as sealed, and records the outcome (a pending one as failed: a run would not send it).
    static func send(
        _ entry: OutboxEntry, ledger: Ledger, sender: OutboxSender, now: Date,
        requests: (OutboxEntry) throws(HubError) -> [PlatformRequest]
    ) throws(SessionError) -> Sent {
        let sealed: OutboxEntry
        do {
            try ledger.enqueue(entry, story: nil)
            sealed = try ledger.seal([entry], at: now).first ?? entry
        } catch {
            throw .ledger(error)
        }
        let built: [PlatformRequest]
        do { built = try requests(sealed) } catch {
            let refused = OutboxOutcome(
                entryID: entry.id, storyKey: entry.storyKey, status: .failed, at: now, error: error.description)
            do { try ledger.record([refused]) } catch { throw .ledger(error) }
            return Sent(outcome: refused, entry: sealed, answers: [], stop: nil)
        }
        do { try ledger.markSending([sealed], at: now) } catch { throw .ledger(error) }
        var (outcome, answers) = sender.sendOnce(sealed, requests: built)
        if outcome.status == .pending { outcome.status = .failed }
        let stop = answers.first(where: \.concernsHub).map {
            SendStop.hub(status: $0.httpStatus, reason: $0.failureReason ?? "")
        }
        do { try ledger.record([outcome]) } catch {
            return Sent(outcome: outcome, entry: sealed, answers: answers, stop: .ledger(error))
        }
        return Sent(outcome: outcome, entry: sealed, answers: answers, stop: stop)
    }
}
