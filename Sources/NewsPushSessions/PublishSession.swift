import FeedParsing
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// What an editor asks `publish` (or `hub test-send`, or the desk's publish form) to do: the
/// push's content as asked (its fields read as the request's own: `request.title`), and what
/// only the asking has.
@dynamicMemberLookup
public struct PublishRequest: Sendable {
    /// The push; its category may be left to the corrected story's (`replacing`).
    public var category: NewsCategory?
    /// What the push says and to whom; `tags` is the story's push when it can reach the
    /// category's readers, else a trial (recorded as one, never the story's push).
    public var content: EditorsPush
    /// `--at`: an RFC 3339 time or `+DURATION` (checked against the session's clock).
    public var at: String?
    /// Say what would happen, refusal included; send and record nothing.
    public var dryRun = false
    /// Seconds to wait for a running job's lock instead of giving up at once.
    public var wait: Double?
    /// Who publishes, for the audit trail (nil: the login name).
    public var editor: String?

    /// A request for a push to `category` (or to the corrected story's when nil).
    public init(
        category: NewsCategory?, title: String? = nil, message: String? = nil, url: String? = nil, tags: String? = nil,
        test: Bool = false, force: Bool = false, importance: Importance? = nil, at: String? = nil,
        replacing: String? = nil, language: String = "en", dryRun: Bool = false, wait: Double? = nil
    ) {
        self.category = category
        content = EditorsPush(
            title: title, message: message, url: url, tags: tags, test: test, force: force, importance: importance,
            replacing: replacing, language: language)
        self.at = at
        self.dryRun = dryRun
        self.wait = wait
    }

    /// A field of the content.
    public subscript<T>(dynamicMember path: WritableKeyPath<EditorsPush, T>) -> T {
        get { content[keyPath: path] }
        set { content[keyPath: path] = newValue }
    }

    /// What is wrong with the request before anything is planned (every front end asks the
    /// same, and says it in its own words): nil when nothing is.
    public func problem(now: Date) -> PublishProblem? {
        let c = content
        if (c.title == nil) == (c.message == nil) { return .titleOrMessage }
        if let text = c.title ?? c.message, AlertText.isBlank(text) {
            return .blank(c.title != nil ? "title" : "message")
        }
        if c.test && at != nil { return .scheduledTest }
        if let url = c.url, !FeedURL.isHTTP(url) { return .notHTTP }
        if !Languages.isWellFormed(c.language) { return .language(c.language) }
        if category == nil && c.replacing == nil { return .noCategory }
        if let user = c.user {
            if user.isEmpty { return .noUser }
            if c.tags != nil { return .userAndTags }
            if c.replacing != nil { return .userCorrection }
            if c.test { return .userTest }
        }
        if let at {
            do { _ = try ScheduleTime.parse(at, now: now) } catch { return .time(error) }
        }
        return nil
    }
}

extension OutboxOutcome {
    /// Why a manual push was not sent, in the words every front end shows the editor; nil when
    /// it was sent or scheduled. A trial (`trial`) is not kept for the next run.
    public func notSentReason(trial: Bool) -> String? {
        switch status {
        case .sent, .scheduled:
            return nil
        case .cancelled:
            return "not sent: cancelled"
        case .pending:
            let kept = trial ? "" : "; it waits in the outbox and the next run sends it while it is fresh"
            return "not sent: \(error ?? "the hub did not take it")\(kept)"
        case .failed, .expired, .held, .rejected:
            return "not sent: \(error ?? "refused")"
        case .unknown, .sending:
            return "outcome unknown (it may have been delivered; it will not be re-sent): \(error ?? "")"
        }
    }
}

/// What became of a manual push that was sent (or tried).
public struct PublishResult: Sendable {
    /// Its outbox outcome.
    public var outcome: OutboxOutcome
    /// Set when the failure concerns the hub or the ledger: the push stays pending (exit 1).
    public var stop: SendStop?
    /// Per-device outcomes of a test send.
    public var testOutcome: TestSendOutcome?
}

/// How a publish ended.
public enum PublishOutcome: Sendable {
    /// Not sent: the story was pushed before (or waits), and `force` was not given.
    case refused(PublishPlan, PublishRefusal)
    /// A dry run: what would be sent.
    case dryRun(PublishPlan)
    /// The editor did not confirm: nothing sent.
    case notConfirmed(PublishPlan)
    /// Sent, or tried: what the hub said.
    case attempted(PublishPlan, PublishResult)
}

/// `publish` as one session: plans the push against the ledger, refuses a repeat, takes the run
/// lock, plans again under it (a run may have pushed the story meanwhile), asks for
/// confirmation, and sends through the same outbox and sender as the scheduled run, so the run
/// recognises the story and never repeats it. Trials (`--test`, `--tags` that reach no reader of the
/// category) are recorded as trials, never as the story's push.
public struct PublishSession: Sendable {
    /// The newsroom it publishes for.
    public var context: SessionContext

    /// A publish session for `context`.
    public init(context: SessionContext) {
        self.context = context
    }

    /// Publishes `request`. `planned` is told the plan before the lock is taken (the command
    /// line shows it); `confirm` is asked, under the lock, before anything is sent.
    public func publish(
        _ request: PublishRequest, planned: (PublishPlan) -> Void = { _ in },
        confirm: (PublishPlan) -> Bool = { _ in true }
    ) throws(SessionError) -> PublishOutcome {
        let now = context.clock.now()
        let push = try manualPush(request, now: now)
        let client = try context.hubClient()
        let preview = try context.withLedger(.read) { ledger, _ in
            try plan(push, ledger: ledger, client: client, now: now)
        }
        planned(preview)
        if let refusal = preview.refusal { return .refused(preview, refusal) }
        if request.dryRun { return .dryRun(preview) }
        // The lock first, so a running job is reported before anyone is asked to confirm.
        return try context.withLedger(.write, wait: request.wait) { ledger, _ in
            try publish(
                push, preview: preview, request: request, ledger: ledger, client: client, now: now, confirm: confirm)
        }
    }

    /// The publish under the run lock: planned again against the ledger as it is now,
    /// confirmed, then sent (or a trial sent).
    private func publish(
        _ push: ManualPush, preview: PublishPlan, request: PublishRequest, ledger: Ledger,
        client: NotificationHubClient,
        now: Date, confirm: (PublishPlan) -> Bool
    ) throws(SessionError) -> PublishOutcome {
        if push.isTrial && !push.isPersonal {
            guard confirm(preview) else { return .notConfirmed(preview) }
            return .attempted(preview, try sendTrial(preview, ledger: ledger, client: client, now: now))
        }
        if push.isPersonal {
            let plan = try plan(push, ledger: ledger, client: client, now: now)
            if let refusal = plan.refusal { return .refused(plan, refusal) }
            guard confirm(plan) else { return .notConfirmed(plan) }
            try audit(plan, editor: request.editor, ledger: ledger, now: now)
            return .attempted(plan, try sendTrial(plan, ledger: ledger, client: client, now: now))
        }
        var plan = try plan(push, ledger: ledger, client: client, now: now)
        if let refusal = plan.refusal { return .refused(plan, refusal) }
        guard confirm(plan) else { return .notConfirmed(plan) }
        if let refusal = try cancelReplacedSchedule(
            &plan, editor: request.editor, ledger: ledger, client: client, now: now)
        {
            return .refused(plan, refusal)
        }
        return .attempted(plan, try send(plan, editor: request.editor, ledger: ledger, client: client, now: now))
    }

    /// The push the request describes, its category found from the corrected story when not
    /// given and its time checked against the session's clock.
    private func manualPush(_ request: PublishRequest, now: Date) throws(SessionError) -> ManualPush {
        let category: NewsCategory
        if let given = request.category {
            category = given
        } else if let replacing = request.replacing {
            category = try correctedCategory(replacing)
        } else {
            throw .usage("give --category (or --replace KEY to correct a story)")
        }
        let at: Date?
        do {
            at = try request.at.map { text throws(ScheduleTimeError) in try ScheduleTime.parse(text, now: now) }
        } catch {
            throw .usage(error.description)
        }
        var push = ManualPush(category: category, content: request.content, at: at)
        push.language = Languages.normalized(request.language)
        push.tagsReachReaders =
            request.tags.map { PublishPlanner.reachesReaders(tags: $0, category: category, config: context.config) }
            ?? false
        if let user = request.user {
            push.user = user
            push.tags = context.config.api.tag(forUser: user)
        }
        return push
    }

    /// The category of the story `--replace` corrects.
    private func correctedCategory(_ key: String) throws(SessionError) -> NewsCategory {
        let story = try context.withLedger(.read) { ledger, _ in try ledger.stories(keys: [key])[key] }
        guard let story else { throw .unknownStory(key, reason: "the ledger has no story with this key") }
        guard let category = story.category.flatMap(NewsCategory.init(rawValue:)) else {
            throw .unknownStory(key, reason: "it has no category: give --category")
        }
        return category
    }

    /// The plan against what the ledger knows now.
    private func plan(_ push: ManualPush, ledger: Ledger, client: NotificationHubClient, now: Date) throws(SessionError)
        -> PublishPlan
    {
        let knowledge: PublishKnowledge
        do { knowledge = try Self.knowledge(of: push, in: ledger, now: now) } catch { throw .ledger(error) }
        do {
            return try PublishPlanner.plan(
                push, knowledge: knowledge, config: context.config, client: client, now: now,
                requestTime: SessionClock.signingTime())
        } catch {
            throw SessionError(error)
        }
    }

    /// The load stage of a publish: what the ledger knows about the push's story.
    static func knowledge(of push: ManualPush, in ledger: Ledger, now: Date) throws(LedgerError) -> PublishKnowledge {
        var knowledge = PublishKnowledge()
        if let corrected = push.replacing {
            knowledge.corrected = try ledger.stories(keys: [corrected])[corrected]
            (knowledge.lastPush, knowledge.scheduled) = try ledger.lastPush(of: corrected)
            return knowledge
        }
        guard !push.isTrial || push.isPersonal else { return knowledge }
        let key = PublishPlanner.key(for: push)
        if push.isPersonal, let tags = push.tags { knowledge.toUser = try ledger.personalPush(of: key, tags: tags) }
        knowledge.byKey = try ledger.stories(keys: [key])[key]
        if knowledge.byKey == nil, let link = push.url.flatMap(StoryKey.canonicalLink) {
            knowledge.byLink = try ledger.stories(linkKeys: [link])[link]
        }
        knowledge.tombstoned = try !ledger.tombstoned([key]).isEmpty
        knowledge.scheduled = try ledger.lastPush(of: (knowledge.byKey ?? knowledge.byLink)?.key ?? key).scheduled
        knowledge.recentPushes = try ledger.recentPushes(since: now.addingTimeInterval(-TitleFingerprint.window))
        if !push.isPersonal { knowledge.personalRecipients = try ledger.personalRecipients(of: [key])[key] ?? [] }
        return knowledge
    }

    /// Records the push in the outbox of `ledger` (held under the run lock) and sends it.
    private func send(_ plan: PublishPlan, editor: String?, ledger: Ledger, client: NotificationHubClient, now: Date)
        throws(SessionError) -> PublishResult
    {
        let decision = AuditRecord(
            at: now, editor: editor ?? ReviewSession.loginName(),
            action: plan.entry.kind == .correction ? .corrected : .published,
            entryID: plan.entry.id, storyKey: plan.entry.storyKey, category: plan.entry.category,
            title: plan.entry.properties["title"],
            detail: plan.entry.scheduledAt.map { "scheduled for \(FeedDates.format($0))" })
        do {
            try closeHolds(of: plan, editor: decision.editor, ledger: ledger, now: now)
            try ledger.enqueue(plan.entry, story: plan.story)
            try ledger.recordAudit([decision])
        } catch {
            throw .ledger(error)
        }
        let sent = sender(client, now: now).send([plan.entry], journal: ledger)
        let outcome =
            sent.outcomes.last
            ?? OutboxOutcome(entryID: plan.entry.id, storyKey: plan.entry.storyKey, status: .pending, at: now)
        return PublishResult(outcome: outcome, stop: sent.stop, testOutcome: nil)
    }

    /// The audit record of a personal alert (`publish --user`), written before it is sent.
    private func audit(_ plan: PublishPlan, editor: String?, ledger: Ledger, now: Date) throws(SessionError) {
        let record = AuditRecord(
            at: now, editor: editor ?? ReviewSession.loginName(), action: .published, entryID: plan.entry.id,
            storyKey: plan.entry.storyKey, category: plan.entry.category, title: plan.entry.properties["title"],
            detail: "to one reader: \(plan.entry.tags)")
        do { try ledger.recordAudit([record]) } catch { throw .ledger(error) }
    }

    /// Cancels the scheduled send of the old text a correction replaces (recorded and audited);
    /// the refusal when it cannot be cancelled. A send already gone (404) is reported, not refused.
    private func cancelReplacedSchedule(
        _ plan: inout PublishPlan, editor: String?, ledger: Ledger, client: NotificationHubClient, now: Date
    ) throws(SessionError) -> PublishRefusal? {
        guard let scheduled = plan.replacedSchedule, let at = scheduled.scheduledAt else { return nil }
        guard let id = scheduled.notificationId else {
            return .scheduleNotCancelled(id: scheduled.id, at: at, reason: "the hub gave it no id to cancel it by")
        }
        let answer = client.cancelScheduled(id: id)
        switch answer {
        case .cancelled:
            do {
                _ = try ledger.cancelScheduled(notificationId: id, at: now)
                try ledger.recordAudit([
                    AuditRecord(
                        at: now, editor: editor ?? ReviewSession.loginName(), action: .cancelled, entryID: scheduled.id,
                        storyKey: scheduled.storyKey, category: scheduled.category,
                        title: scheduled.properties["title"], detail: "replaced by a correction")
                ])
            } catch {
                throw .ledger(error)
            }
            plan.done.append("cancelled the story's scheduled send \(id) of the old text (due \(FeedDates.format(at)))")
            return nil
        case .notFound:
            plan.done.append("the story's scheduled send \(id) was no longer at the hub (delivered or cancelled)")
            return nil
        default:
            return .scheduleNotCancelled(id: id, at: at, reason: answer.description)
        }
    }

    /// A story pushed by hand (forced past its held push) is no longer waiting for an editor:
    /// its held pushes (the same key or canonical link) are closed, so no approval sends it again.
    private func closeHolds(of plan: PublishPlan, editor: String, ledger: Ledger, now: Date) throws(LedgerError) {
        guard plan.entry.kind != .correction else { return }
        let held = try ledger.heldPushes().map(\.entry)
        guard !held.isEmpty else { return }
        let stories = try ledger.stories(keys: held.map(\.storyKey))
        for entry in held
        where entry.storyKey == plan.entry.storyKey
            || (plan.story.linkKey != nil && stories[entry.storyKey]?.linkKey == plan.story.linkKey)
        {
            let audit = AuditRecord(
                at: now, editor: editor, action: .cancelled, entryID: entry.id, storyKey: entry.storyKey,
                category: entry.category, title: entry.properties["title"],
                detail: "closed: the story was published by hand (\(plan.entry.id))")
            _ = try ledger.endHold(entry.id, as: .cancelled, audit: audit)
        }
    }

    /// Sends a trial (`--test`, `--tags` that reach no reader) with the same request and outcome rules, journalled
    /// like any push (the intent before the request, the outcome after) but as a test or trial:
    /// never the story's push, never counted in a budget.
    private func sendTrial(_ plan: PublishPlan, ledger: Ledger, client: NotificationHubClient, now: Date)
        throws(SessionError) -> PublishResult
    {
        let test = plan.entry.kind == .test
        let sent = try OneShotSend.send(plan.entry, ledger: ledger, sender: sender(client, now: now), now: now) {
            entry throws(HubError) in
            try PushRequests.requests(entry, client: client, test: test, now: SessionClock.signingTime())
        }
        var testOutcome: TestSendOutcome?
        for case .accepted(_, _, _, let body) in sent.answers where testOutcome == nil && !body.isEmpty {
            testOutcome = TestSendOutcome(xml: body)
        }
        return PublishResult(outcome: sent.outcome, stop: sent.stop, testOutcome: testOutcome)
    }

    private func sender(_ client: NotificationHubClient, now: Date) -> OutboxSender {
        OutboxSender(client: client, concurrency: 1, logger: context.logger, now: now)
    }
}
