import Foundation
import Logging
import NewsPushModel
import NotificationHubs
import Synchronization

/// Where the sender writes each intent before its request goes out and each outcome after it
/// came back (the ledger, for the run and `publish` alike).
public protocol SendJournal {
    /// The intent: these entries are about to be sent. If it cannot be written, nothing is sent.
    func markSending(_ entries: [OutboxEntry], at time: Date) throws(LedgerError)
    /// What the hub answered for each entry (or `pending` for entries put back unsent).
    func record(_ outcomes: [OutboxOutcome]) throws(LedgerError)
    /// Seals the id-only entries among `entries` (`SecurePush`): their texts kept as secure
    /// pushes under fresh ids, the entries left with only the id. Returns every entry as it
    /// is to be sent.
    func seal(_ entries: [OutboxEntry], at time: Date) throws(LedgerError) -> [OutboxEntry]
    /// Keeps what a report of each alert the hub accepted starts from (SPEC §11): when it went
    /// and the audience its expression had. Called once a drain is over: it never holds a send back.
    func noteAccepted(_ entries: [OutboxEntry]) throws(LedgerError)
}

/// Why sending stopped before the outbox was empty.
public enum SendStop: Sendable, Equatable, CustomStringConvertible {
    /// A failure that concerns the hub, not one push (credentials, hub name, out of reach,
    /// throttled): the rest would fail the same way.
    case hub(status: Int?, reason: String)
    /// The ledger could not record an intent or an outcome (disk full, I/O error).
    case ledger(LedgerError)

    /// What went wrong and what to fix.
    public var reason: String {
        switch self {
        case .hub(_, let reason): return reason
        case .ledger(let error): return error.description
        }
    }

    /// `sending stopped: ` and the reason.
    public var description: String { "sending stopped: \(reason)" }
}

/// What a drain of the outbox did.
public struct SendResult: Sendable {
    /// One per entry that was attempted or settled (built but refused, sent, put back).
    public var outcomes: [OutboxOutcome] = []
    /// Why sending stopped, when it did.
    public var stop: SendStop?
}

/// The one way a push leaves newspush, for the scheduled run and `publish` alike: entries are
/// marked `sending` in the ledger (synced) before their requests go out, sent `concurrency` at a
/// time (the first alone), and their outcomes recorded right after. A push counts as sent only after a 2xx; a
/// refusal that concerns this push (400, 413) is `failed`; a failure that concerns the hub stops
/// the drain and leaves that push and the rest `pending`; a push whose outcome is unknown is
/// never sent again. Every outcome is in the result (and the run's report); the log repeats them
/// at info level only.
public struct OutboxSender {
    /// The hub the pushes go to.
    public var client: NotificationHubClient
    /// Pushes in flight at once (`hub.concurrency`).
    public var concurrency: Int
    /// Where each outcome is logged at info level.
    public var logger: Logger
    /// The run's clock reading: the time of every intent and outcome it records.
    public var now: Date
    /// Told after each chunk how many of the entries have been attempted.
    public var progress: (_ done: Int, _ total: Int) -> Void = { _, _ in }

    /// A sender to `client`, `concurrency` pushes at a time, at the run's time `now`.
    public init(client: NotificationHubClient, concurrency: Int, logger: Logger, now: Date) {
        self.client = client
        self.concurrency = concurrency
        self.logger = logger
        self.now = now
    }

    /// Sends `entries` in order and records every intent and outcome in `journal`, then what
    /// the reports of the alerts accepted start from.
    public func send(_ entries: [OutboxEntry], journal: some SendJournal) -> SendResult {
        let result = drain(entries, journal: journal)
        let accepted = Dictionary(
            result.outcomes.compactMap { outcome in outcome.acceptedAt.map { (outcome.entryID, $0) } },
            uniquingKeysWith: { first, _ in first })
        let noted = entries.filter { accepted[$0.id] != nil }.map { entry in
            var entry = entry
            entry.acceptedAt = accepted[entry.id]
            return entry
        }
        do throws(LedgerError) { try journal.noteAccepted(noted) } catch {
            logger.info("the reports of \(noted.count) alerts were not started: \(error.description)")
        }
        return result
    }

    private func drain(_ entries: [OutboxEntry], journal: some SendJournal) -> SendResult {
        var result = SendResult()
        guard !entries.isEmpty else { return result }
        let pool = SendPool(width: min(concurrency, entries.count))
        defer { pool.close() }
        // The first push goes alone: when the key is wrong or the hub is out of reach, one
        // request finds out, not a whole chunk.
        let chunks = [entries.prefix(1)] + Array(entries.dropFirst()).chunked(concurrency)
        // Formats the hub has no credential for: their pushes wait, the others go on.
        var uncredentialed: [PushFormat: String] = [:]
        var keptForCredential = 0
        for chunk in chunks where !chunk.isEmpty {
            let waiting = chunk.filter { uncredentialed[$0.format] != nil }.map { entry in
                OutboxOutcome(
                    entryID: entry.id, storyKey: entry.storyKey, status: .pending, at: now,
                    error: "not sent: \(uncredentialed[entry.format] ?? "")")
            }
            keptForCredential += waiting.count
            // An id-only push tries each of its platforms: one without a credential is skipped.
            let going = chunk.filter { $0.format == .idOnly || uncredentialed[$0.format] == nil }
            var ready: [(entry: OutboxEntry, requests: [PlatformRequest])] = []
            var refused: [OutboxOutcome] = []
            do throws(LedgerError) {
                (ready, refused) = requests(for: try journal.seal(going, at: now))
                try journal.record(refused + waiting)
                try journal.markSending(ready.map(\.entry), at: now)
            } catch {
                logger.info("\(error.description)")
                result.outcomes += refused + waiting
                result.stop = .ledger(error)
                return result
            }
            result.outcomes += refused + waiting
            let (outcomes, stop, noCredential, kept) = sendAll(ready, pool: pool)
            for (format, why) in noCredential { uncredentialed[format] = why }
            keptForCredential += kept
            do throws(LedgerError) { try journal.record(outcomes) } catch {
                // The entries stay `sending`: the next run settles them as unknown, never re-sent.
                logger.info("\(error.description)")
                result.outcomes += outcomes
                result.stop = .ledger(error)
                return result
            }
            result.outcomes += outcomes
            progress(result.outcomes.count, entries.count)
            if let stop {
                result.stop = stop
                return result
            }
        }
        if !uncredentialed.isEmpty { result.stop = Self.credentialStop(uncredentialed, kept: keptForCredential) }
        return result
    }

    /// One sentence for every format the hub lacks a credential for (said once, not per push).
    static func credentialStop(_ formats: [PushFormat: String], kept: Int) -> SendStop {
        let names = formats.keys.map(\.rawValue).sorted().joined(separator: ", ")
        let detail = formats.values.sorted().first ?? ""
        return .hub(
            status: 400,
            reason:
                "the hub has no platform credential for \(names) pushes (\(detail)): add the platform's credential "
                + "to the hub (the Azure portal: the hub's Settings), then the next run sends the \(kept) "
                + "push\(kept == 1 ? "" : "es") kept pending")
    }

    /// Sends the requests of one push that a run never retries (a trial, a personal alert),
    /// with the same outcome rules; the outcome and each request's answer.
    public func sendOnce(_ entry: OutboxEntry, requests: [PlatformRequest]) -> (OutboxOutcome, [SendOutcome]) {
        let answers = requests.map { client.send($0.request) }
        return (outcome(of: entry, zip(requests.map(\.format), answers).map { ($0, $1) }), answers)
    }

    /// The requests of each entry; an entry whose request cannot be built (too large, a bad tag
    /// expression) is refused for good.
    private func requests(for entries: [OutboxEntry]) -> (
        ready: [(entry: OutboxEntry, requests: [PlatformRequest])], refused: [OutboxOutcome]
    ) {
        var ready: [(entry: OutboxEntry, requests: [PlatformRequest])] = []
        var refused: [OutboxOutcome] = []
        for entry in entries {
            do {
                // The request carries the wall clock, not the run's: the hub checks the token's
                // expiry and devices the alert's against their own clocks.
                ready.append((entry, try PushRequests.requests(entry, client: client, now: Date())))
            } catch {
                logger.info("push of \(entry.storyKey) not built: \(error.description)")
                refused.append(
                    OutboxOutcome(
                        entryID: entry.id, storyKey: entry.storyKey, status: .failed, at: now, error: error.description)
                )
            }
        }
        return (ready, refused)
    }

    /// Sends one chunk on the pool; once a failure concerns the hub, nothing more starts and the
    /// entries not started go back to `pending`.
    /// `noCredential`: the format and the hub's words of each push refused for want of that
    /// format's platform credential (`SendOutcome.formatWithoutCredential`); `kept`: how many
    /// pushes wait for a credential.
    private func sendAll(_ ready: [(entry: OutboxEntry, requests: [PlatformRequest])], pool: SendPool) -> (
        outcomes: [OutboxOutcome], stop: SendStop?, noCredential: [(PushFormat, String)], kept: Int
    ) {
        // Every request of every entry, flat: an id-only push's platforms go side by side.
        let flat = ready.indices.flatMap { entry in ready[entry].requests.map { (entry: entry, request: $0) } }
        let answers = Mutex([SendOutcome?](repeating: nil, count: flat.count))
        let client = self.client
        pool.run(count: flat.count) { index in
            let outcome = client.send(flat[index].request.request)
            answers.withLock { $0[index] = outcome }
            if Self.stopsSending(ready[flat[index].entry].entry, outcome) { pool.stop() }
        }
        let results = answers.withLock { $0 }
        let stop = zip(flat, results).lazy.compactMap { item, answer -> SendStop? in
            guard let answer, Self.stopsSending(ready[item.entry].entry, answer) else { return nil }
            return SendStop.hub(status: answer.httpStatus, reason: answer.failureReason ?? "hub failure")
        }.first
        var answered = [[(PushFormat, SendOutcome?)]](repeating: [], count: ready.count)
        for (item, answer) in zip(flat, results) { answered[item.entry].append((item.request.format, answer)) }
        var noCredential: [(PushFormat, String)] = []
        var kept = 0
        let outcomes = ready.indices.map { entry in
            // A push waits for a credential only when none of its formats had one.
            let formats = answered[entry]
            if !formats.isEmpty && formats.allSatisfy({ $0.1?.formatWithoutCredential != nil }) {
                noCredential += formats.map { ($0.0, $0.1?.failureReason ?? "") }
                kept += 1
            }
            return outcome(of: ready[entry].entry, formats)
        }
        return (outcomes, stop, noCredential, kept)
    }

    /// The outcome of a push from each of its requests' answers (nil: not sent, sending had
    /// stopped). A push of one request takes that request's outcome. An id-only push is `sent`
    /// once every platform took it or refused it for good (a platform without a credential has
    /// no device to reach); it stays `pending` for the platforms still owed (the others are not
    /// sent again); its outcome is `unknown` when one platform's is.
    private func outcome(of entry: OutboxEntry, _ answered: [(PushFormat, SendOutcome?)]) -> OutboxOutcome {
        let each = answered.map { format, answer in
            (
                format: format,
                outcome: answer.map { outcome(of: entry, $0) }
                    ?? OutboxOutcome(
                        entryID: entry.id, storyKey: entry.storyKey, status: .pending, at: now,
                        error: "not sent: sending stopped after a hub failure"),
                noCredential: answer?.formatWithoutCredential != nil
            )
        }
        guard entry.format == .idOnly, let first = each.first else {
            return each.first?.outcome
                ?? OutboxOutcome(
                    entryID: entry.id, storyKey: entry.storyKey, status: .failed, at: now, error: "no request")
        }
        let sent = each.filter { [.sent, .scheduled].contains($0.outcome.status) }
        let unknown = each.filter { $0.outcome.status == .unknown }
        let owed = each.filter { $0.outcome.status == .pending && !$0.noCredential }
        let notes = each.filter { ![.sent, .scheduled].contains($0.outcome.status) }.map {
            "\($0.format.rawValue): \($0.outcome.error ?? $0.outcome.status.rawValue)"
        }
        var result = (sent.first ?? unknown.first ?? owed.first ?? first).outcome
        result.error = notes.isEmpty ? nil : notes.joined(separator: "; ")
        if !unknown.isEmpty {
            result.status = .unknown
        } else if !owed.isEmpty {
            result.status = .pending
            if !sent.isEmpty { result.properties = SecurePush.remaining(owed.map(\.format), of: entry.properties) }
        } else if sent.isEmpty {
            result.status = each.allSatisfy(\.noCredential) ? .pending : .failed
        }
        return result
    }

    /// Whether an answer concerns the hub, so nothing more is sent now. A 403 to a scheduled
    /// send concerns that send only (the tier lacks scheduled sends; immediate sends still work).
    static func stopsSending(_ entry: OutboxEntry, _ answer: SendOutcome) -> Bool {
        answer.concernsHub && !(entry.scheduledAt != nil && answer.httpStatus == 403)
    }

    /// How an answer is recorded (SPEC §6), and logged.
    private func outcome(of entry: OutboxEntry, _ answer: SendOutcome) -> OutboxOutcome {
        let at = now
        switch answer {
        case .accepted(let status, let id, let trackingId, _):
            logger.info(
                "\(entry.scheduledAt == nil ? "pushed" : "scheduled") \(entry.storyKey) to [\(entry.tags)]",
                metadata: [
                    "notification_id": "\(id ?? "-")", "tracking_id": "\(trackingId ?? "-")",
                ])
            // The machine's clock, not the session's: the alert's latency is real time.
            return OutboxOutcome(
                entryID: entry.id, storyKey: entry.storyKey, status: entry.scheduledAt == nil ? .sent : .scheduled,
                at: at, httpStatus: status, notificationId: id, acceptedAt: Date())
        case .refused(403, let reason) where entry.scheduledAt != nil:
            // Scheduled sends need the Standard tier: a refusal of this push, not of every send.
            let why =
                "the hub refused the scheduled send (403): scheduled sends need the Standard tier, or the policy "
                + "lacks Send (\(reason))"
            logger.info("push of \(entry.storyKey) refused: \(why)")
            return OutboxOutcome(
                entryID: entry.id, storyKey: entry.storyKey, status: .failed, at: at, httpStatus: 403, error: why)
        case .refused(let status, let reason) where answer.formatWithoutCredential != nil:
            // The hub's set-up, not this push: it waits for the credential.
            logger.info("push of \(entry.storyKey) not sent; it stays pending: \(reason)")
            return OutboxOutcome(
                entryID: entry.id, storyKey: entry.storyKey, status: .pending, at: at, httpStatus: status,
                error: reason)
        case .refused(let status, let reason) where !answer.concernsHub:
            logger.info("push of \(entry.storyKey) refused: \(reason)")
            return OutboxOutcome(
                entryID: entry.id, storyKey: entry.storyKey, status: .failed, at: at, httpStatus: status, error: reason)
        case .refused, .notAccepted:
            let reason = answer.failureReason ?? ""
            logger.info("push of \(entry.storyKey) not accepted; it stays pending: \(reason)")
            return OutboxOutcome(
                entryID: entry.id, storyKey: entry.storyKey, status: .pending, at: at, httpStatus: answer.httpStatus,
                error: reason)
        case .unknown(let status, let reason):
            logger.info("push of \(entry.storyKey) has an unknown outcome; it will not be sent again: \(reason)")
            return OutboxOutcome(
                entryID: entry.id, storyKey: entry.storyKey, status: .unknown, at: at, httpStatus: status,
                error: "outcome unknown, not retried: \(reason)")
        }
    }
}
