import FeedParsing
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// A push waiting for an editor, as `review list` shows it.
public struct HeldPush: Sendable {
    /// The held outbox entry (its id is what `review approve` takes).
    public var entry: OutboxEntry
    /// The rule that held it.
    public var rule: String
    /// How long it has waited, in seconds.
    public var waitedSeconds: Int
    /// Whether it is no longer fresh (the next run expires it; it cannot be approved).
    public var stale: Bool
    /// The feeds (URLs) that listed its story: the same story from several feeds is one push.
    public var listedBy: [String] = []
}

/// What an editor changes when approving (nil: as held).
public struct ReviewEdit: Sendable {
    /// A new headline: the category's message is rendered again with it.
    public var title: String?
    /// The exact message text instead.
    public var message: String?
    /// major or minor instead of the held push's.
    public var importance: Importance?

    /// An edit (nothing given: approved as held).
    public init(title: String? = nil, message: String? = nil, importance: Importance? = nil) {
        self.title = title
        self.message = message
        self.importance = importance
    }

    var isEmpty: Bool { title == nil && message == nil && importance == nil }
}

/// How an approval or rejection ended.
public enum ReviewOutcome: Sendable {
    /// Approved and sent (or tried: the outcome says how it went, `stop` why sending stopped).
    case approved(OutboxEntry, OutboxOutcome, stop: SendStop?)
    /// Rejected: never sent.
    case rejected(OutboxEntry)
    /// Nothing was done: the entry is not waiting for an editor (already decided, expired, or
    /// no such entry); `why` says what happened to it.
    case notHeld(id: String, why: String)
}

extension ReviewOutcome {
    /// What the decision came to, in the words every front end shows the editor.
    public var sentence: String {
        switch self {
        case .approved(let entry, let result, let stop):
            let text = "[\(entry.tags)] \(entry.properties["messageParam"] ?? "")"
            switch result.status {
            case .sent: return "approved and sent \(text) (\(result.notificationId ?? "no id"))"
            case .pending:
                return "approved, not sent yet: \(stop?.reason ?? result.error ?? "the hub did not take it"); it waits "
                    + "in the outbox and the next run sends it while it is fresh"
            default: return "approved, but not delivered (\(result.status.rawValue)): \(result.error ?? "")"
            }
        case .rejected(let entry): return "rejected \(entry.id): it will never be sent"
        case .notHeld(let id, let why): return "nothing done with \(id): \(why)"
        }
    }

    /// Whether it was done as asked: rejected, or approved and sent.
    public var isDone: Bool {
        switch self {
        case .approved(_, let result, _): return result.status == .sent
        case .rejected: return true
        case .notHeld: return false
        }
    }
}

/// The review queue as one session: the held pushes, the editorial history, and the decisions,
/// each taken under the run lock so exactly one push goes out however many editors approve.
public struct ReviewSession: Sendable {
    /// The config, logger and clock.
    public var context: SessionContext
    /// Who decides (`--editor`, else the login name).
    public var editor: String

    /// A session deciding as `editor` (nil: the login name).
    public init(context: SessionContext, editor: String? = nil) {
        self.context = context
        self.editor = editor ?? Self.loginName()
    }

    /// The login name of the user running the command.
    public static func loginName() -> String {
        let environment = ProcessInfo.processInfo.environment
        return environment["LOGNAME"] ?? environment["USER"] ?? NSUserName()
    }

    /// The pushes held for an editor, oldest first, each with the feeds that listed its story.
    public func list() throws(SessionError) -> [HeldPush] {
        let now = context.clock.now()
        return try context.withLedger(.read) { ledger, _ in
            let held = try ledger.heldPushes()
            let listing = try ledger.feedsListing(held.map(\.entry.storyKey))
            return held.map {
                HeldPush(
                    entry: $0.entry, rule: $0.hold?.rule ?? "review.rules",
                    waitedSeconds: Int(now.timeIntervalSince($0.entry.createdAt).rounded()),
                    stale: $0.entry.freshUntil < now, listedBy: listing[$0.entry.storyKey] ?? [])
            }
        }
    }

    /// Every editorial decision since `since` seconds ago (all when nil), newest first.
    public func history(since: Double?) throws(SessionError) -> [AuditRecord] {
        let from = since.map { context.clock.now().addingTimeInterval(-$0) }
        return try context.withLedger(.read) { ledger, _ in try ledger.audit(since: from) }
    }

    /// The pushes on record as `filter` selects, and the editorial decisions about them (the
    /// desk's Sent page).
    public func pushes(_ filter: PushHistoryFilter) throws(SessionError) -> (
        pushes: [OutboxEntry], audit: [AuditRecord]
    ) {
        try context.withLedger(.read) { ledger, _ in
            let pushes = try ledger.pushHistory(filter)
            return (pushes, try ledger.audit(entryIDs: pushes.map(\.id)))
        }
    }

    /// The ledger's change mark: it moves whenever anything is written (the desk's pages reload
    /// when it does).
    public func changeMark() throws(SessionError) -> String {
        try context.withLedger(.read) { ledger, _ in try ledger.changeMark() }
    }

    /// Approves the held push `id` (edited if asked) and sends it at once through the outbox;
    /// when sending must stop it waits in the outbox and the next run sends it while fresh.
    public func approve(_ id: String, edit: ReviewEdit, wait: Double?) throws(SessionError) -> ReviewOutcome {
        let client = try context.hubClient()
        return try deciding(id, wait: wait) { ledger, entry, hold, now throws(SessionError) in
            var approved = entry
            var audit = [
                AuditRecord(
                    at: now, editor: editor, action: .approved, entryID: id, storyKey: entry.storyKey,
                    category: entry.category, title: entry.properties["title"], detail: hold?.rule)
            ]
            if !edit.isEmpty {
                approved.properties = try edited(entry, hold: hold, edit: edit)
                audit.append(
                    AuditRecord(
                        at: now, editor: editor, action: .edited, entryID: id, storyKey: entry.storyKey,
                        category: entry.category, title: approved.properties["title"],
                        detail: "was: \(entry.properties["messageParam"] ?? ""); now: "
                            + (approved.properties["messageParam"] ?? "")))
            }
            approved.status = .pending
            do throws(LedgerError) {
                // The same-story rules again, now: the story may have gone out meanwhile (a publish
                // of the same link, a copy with a near-identical headline).
                if let repeated = try pushedMeanwhile(entry, ledger: ledger, now: now) {
                    let closed = AuditRecord(
                        at: now, editor: editor, action: .cancelled, entryID: id, storyKey: entry.storyKey,
                        category: entry.category, title: entry.properties["title"],
                        detail: "not sent: \(repeated.description)")
                    _ = try ledger.endHold(id, as: .cancelled, audit: closed)
                    return .notHeld(id: id, why: "not sent, and closed: \(repeated.description)")
                }
                guard try ledger.approve(id, properties: approved.properties, audit: audit) else {
                    return .notHeld(id: id, why: try whatHappened(id, ledger: ledger))
                }
            } catch {
                throw .ledger(error)
            }
            let sender = OutboxSender(client: client, concurrency: 1, logger: context.logger, now: now)
            let sent = sender.send([approved], journal: ledger)
            let outcome =
                sent.outcomes.last
                ?? OutboxOutcome(entryID: id, storyKey: entry.storyKey, status: .pending, at: now)
            return .approved(approved, outcome, stop: sent.stop)
        }
    }

    /// Rejects the held push `id`: never sent, recorded with the reason.
    public func reject(_ id: String, reason: String, wait: Double?) throws(SessionError) -> ReviewOutcome {
        try deciding(id, wait: wait) { ledger, entry, _, now throws(SessionError) in
            let audit = AuditRecord(
                at: now, editor: editor, action: .rejected, entryID: id, storyKey: entry.storyKey,
                category: entry.category, title: entry.properties["title"], detail: reason)
            do throws(LedgerError) {
                guard try ledger.endHold(id, as: .rejected, audit: audit) else {
                    return .notHeld(id: id, why: try whatHappened(id, ledger: ledger))
                }
            } catch {
                throw .ledger(error)
            }
            return .rejected(entry)
        }
    }

    // MARK: Steps

    /// Runs `decide` on the held entry `id` under the run lock; an entry that is not held, or no
    /// longer fresh (then expired, on the record), is reported instead.
    private func deciding(
        _ id: String, wait: Double?,
        _ decide: (Ledger, OutboxEntry, ReviewHold?, Date) throws(SessionError) -> ReviewOutcome
    ) throws(SessionError) -> ReviewOutcome {
        try context.withLedger(.write, wait: wait) { ledger, _ in
            let now = context.clock.now()
            guard let (entry, hold) = try ledger.outboxEntry(id) else {
                return .notHeld(id: id, why: "no push with this id (`newspush review list` shows the held ones)")
            }
            guard entry.status == .held else { return .notHeld(id: id, why: try whatHappened(id, ledger: ledger)) }
            guard entry.freshUntil >= now else {
                // Expired for good only when the machine's clock agrees with the hub's.
                if let problem = clockProblem() { throw SessionError.clockSkew(problem) }
                let audit = AuditRecord(
                    at: now, editor: AuditRecord.runEditor, action: .expired, entryID: id, storyKey: entry.storyKey,
                    category: entry.category, title: entry.properties["title"],
                    detail: "no longer fresh (policy.max_age) when an editor came to it")
                _ = try ledger.endHold(id, as: .expired, audit: audit)
                return .notHeld(
                    id: id, why: "it is no longer fresh (held since \(FeedDates.format(entry.createdAt))): expired")
            }
            return try decide(ledger, entry, hold, now)
        }
    }

    /// The load step of the approval's same-story check (`PublishPlanner.pushedSince`): the held
    /// story and the stories pushed in the last 36 hours but it.
    private func pushedMeanwhile(_ entry: OutboxEntry, ledger: Ledger, now: Date) throws(LedgerError)
        -> PublishRefusal?
    {
        let story = try ledger.stories(keys: [entry.storyKey])[entry.storyKey]
        let recent = try ledger.recentPushes(since: now.addingTimeInterval(-TitleFingerprint.window)).filter {
            $0.key != entry.storyKey && ![.held, .rejected].contains($0.status)
        }
        return PublishPlanner.pushedSince(held: entry, story: story, recent: recent, now: now)
    }

    /// What is wrong with the machine's clock by the hub's word (its `Date`); nil when it is
    /// right or the hub cannot say.
    private func clockProblem() -> String? {
        guard let client = try? context.hubClient(), let reading = client.serverClock() else { return nil }
        return ClockCheck.problem([ClockReading(server: reading.server, local: reading.local)], of: "the hub")
    }

    /// The entry's properties rendered again from its held content with the editor's changes.
    private func edited(_ entry: OutboxEntry, hold: ReviewHold?, edit: ReviewEdit) throws(SessionError)
        -> [String: String]
    {
        guard let data = hold?.content.data(using: .utf8),
            var content = try? JSONDecoder().decode(PushContent.self, from: data)
        else {
            throw .usage("push \(entry.id) has no content on record to edit: approve it as held, or reject it")
        }
        if let title = edit.title {
            guard !AlertText.isBlank(title) else { throw .usage("--title is blank once cleaned: a push needs words") }
            content.title = AlertText.normalized(title)
        }
        if let message = edit.message {
            guard !AlertText.isBlank(message) else {
                throw .usage("--message is blank once cleaned: a push needs words")
            }
            content.message = message
        }
        if let importance = edit.importance { content.importance = importance }
        let config = context.config
        return PushRequests.properties(
            content, settings: config.settings(for: entry.category), languages: config.languages,
            linkParams: config.linkParams)
    }

    /// What became of an entry that is not held: the last decision on the record, or its status.
    private func whatHappened(_ id: String, ledger: Ledger) throws(LedgerError) -> String {
        let status = try ledger.outboxEntry(id)?.entry.status.rawValue ?? "unknown"
        let decisive: Set<AuditRecord.Action> = [.approved, .rejected, .expired]
        guard let last = try ledger.audit(entryID: id).first(where: { decisive.contains($0.action) }) else {
            return "it is not held (\(status))"
        }
        let reason = last.action == .rejected ? " (\(last.detail ?? ""))" : ""
        return "already \(last.action.rawValue) by \(last.editor) at \(FeedDates.format(last.at))\(reason); "
            + "its push is \(status)"
    }
}
