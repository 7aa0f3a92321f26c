import Crypto
import FeedParsing
import Foundation
import NewsPushModel
import NotificationHubs

/// What an editor's push says, the same from the command line, the desk's form and the
/// planner: `PublishRequest` (as asked) and `ManualPush` (as planned) both carry it.
public struct EditorsPush: Sendable, Equatable {
    /// The headline.
    public var title: String?
    /// The exact `messageParam` text (instead of the category's message template with the title).
    public var message: String?
    /// The story's URL.
    public var url: String?
    /// Overrides the category's tag expression (e.g. `user:alice` to try it on one device).
    public var tags: String?
    /// Send with the hub's test flag (at most 10 devices; per-device outcomes come back).
    public var test = false
    /// Push the story even though it was pushed already (recorded as a deliberate repeat).
    public var force = false
    /// Overrides the category's importance and the importance rules.
    public var importance: Importance?
    /// Correct the alert of this story (its key): same collapse id, new text, recorded as a correction.
    public var replacing: String?
    /// The language of the text (picks the category's message template); default en.
    public var language = "en"
    /// The reader a personal alert goes to (`publish --user`; a planned push's `tags` is then
    /// their tag).
    public var user: String?

    /// A push saying these.
    public init(
        title: String? = nil, message: String? = nil, url: String? = nil, tags: String? = nil, test: Bool = false,
        force: Bool = false, importance: Importance? = nil, replacing: String? = nil, language: String = "en"
    ) {
        self.title = title
        self.message = message
        self.url = url
        self.tags = tags
        self.test = test
        self.force = force
        self.importance = importance
        self.replacing = replacing
        self.language = language
    }
}

/// A manual push as planned: its content, its category (given, or the corrected story's) and
/// its delivery time read against the session's clock. Its content's fields read as its own
/// (`push.title`).
@dynamicMemberLookup
public struct ManualPush: Sendable {
    /// The story's category (and tag expression, unless `tags`).
    public var category: NewsCategory
    /// What it says and to whom.
    public var content: EditorsPush
    /// Have the hub deliver it at this time (a scheduled send; Standard tier, ≤ 7 days ahead).
    public var at: Date?
    /// Whether `tags` can reach readers of the category (`PublishPlanner.reachesReaders`): then
    /// the push is the story's push, not a trial.
    public var tagsReachReaders = false

    /// A manual push to `category`.
    public init(category: NewsCategory, content: EditorsPush = EditorsPush(), at: Date? = nil) {
        self.category = category
        self.content = content
        self.at = at
    }

    /// A field of the content.
    public subscript<T>(dynamicMember path: WritableKeyPath<EditorsPush, T>) -> T {
        get { content[keyPath: path] }
        set { content[keyPath: path] = newValue }
    }

    /// A trial (`--test`, or `--tags` that cannot reach the category's readers): never recorded
    /// as the story's push.
    public var isTrial: Bool { content.test || (content.tags != nil && !tagsReachReaders) }

    /// An alert to one reader (`publish --user`): sent like a trial (never the story's push),
    /// but refused as a repeat like a push.
    public var isPersonal: Bool { content.user != nil && !content.test }
}

/// Why a publish would push a story a second time.
public enum PublishRefusal: Sendable, Equatable, CustomStringConvertible {
    /// The ledger has the story (by key or link) as pushed, or waiting in the outbox.
    case known(StoryRecord)
    /// A near-identical headline was pushed in the last 36 hours.
    case sameStory(SameStory)
    /// The ledger pruned this story (a tombstone remains): it was known, and may have been pushed.
    case pruned(String)
    /// A correction with the very text of the alert it corrects.
    case sameCorrection(String)
    /// A correction whose story's scheduled send (the old text) could not be cancelled: it
    /// would replace the correction when it goes out.
    case scheduleNotCancelled(id: String, at: Date, reason: String)
    /// `publish --user`: the story already went to that reader.
    case alreadyToUser(user: String, entry: OutboxEntry)

    /// Why it is refused, naming the story and what `--force` does.
    public var description: String {
        switch self {
        case .known(let record):
            let when = record.pushedAt.map { " at \(FeedDates.format($0))" } ?? ""
            let what: String
            switch record.status {
            case .pending: what = "waits in the outbox (the next run sends it)"
            case .held: what = "is held for an editor (newspush review list; approving it sends it)"
            case .rejected: what = "was rejected by an editor (newspush review history says why)"
            default: what = "was already pushed (\(record.status.rawValue)\(when))"
            }
            return
                "this story \(what): \(record.title ?? record.key) [\(record.key)]; not sending it twice (--force "
                + "pushes it again on purpose)"
        case .sameStory(let same) where same.rejected:
            return
                "an editor rejected this story: \(same.title ?? same.key) [\(same.key)] (newspush review history "
                + "says why); not sending it (--force pushes it anyway)"
        case .sameStory(let same):
            return
                "a near-identical headline was pushed in \(same.place.rawValue): \(same.title ?? same.key) "
                + "[\(same.key)]; not sending it twice (--force pushes it anyway)"
        case .pruned(let key):
            return
                "the ledger knew this story and pruned it (a tombstone of [\(key)] remains: it may have been "
                + "pushed); not sending it twice (--force pushes it anyway)"
        case .sameCorrection(let key):
            return
                "this correction says exactly what the last alert of [\(key)] said; not sending it again "
                + "(--force sends it anyway)"
        case .alreadyToUser(let user, let entry):
            let when = entry.lastAttempt.map { " at \(FeedDates.format($0))" } ?? ""
            return
                "this story already went to \(user) (\(entry.status.rawValue)\(when)): "
                + "\(entry.properties["title"] ?? entry.storyKey); not sending it twice (--force sends it again)"
        case .scheduleNotCancelled(let id, let at, let reason):
            return
                "the story's scheduled send \(id) (the old text, due \(FeedDates.format(at))) could not be "
                + "cancelled (\(reason)): it would replace the correction on every lock screen; not sending the "
                + "correction (cancel it with newspush hub cancel \(id), then correct again)"
        }
    }
}

/// A manual push, planned: what would be recorded and sent, and whether it must be refused.
public struct PublishPlan: Sendable {
    /// What the editor asked for.
    public var push: ManualPush
    /// The story as it would be recorded.
    public var story: StoryRecord
    /// The outbox entry as it would be recorded.
    public var entry: OutboxEntry
    /// The request as it would go out now (shown by `--dry-run`).
    public var request: HubRequest
    /// Set when sending would repeat a story and `--force` was not given.
    public var refusal: PublishRefusal?
    /// What the editor should know before sending (a scheduled send of the story waiting, a
    /// repeat forced).
    public var notes: [String] = []
    /// A correction's story's send still scheduled at the hub with the old text: cancelled
    /// before the correction goes out, or the correction is refused.
    public var replacedSchedule: OutboxEntry?
    /// What was done before sending, under the lock (the old text's scheduled send cancelled).
    public var done: [String] = []
}

/// Why a manual push cannot be planned at all.
public enum PublishPlanError: Error, Sendable, CustomStringConvertible {
    /// `publish --replace KEY` names no story that was pushed.
    case unknownStory(String, reason: String)
    /// The push cannot be made into a request (a bad `--tags` expression, a message too large).
    case request(HubError)
    /// The title or message says nothing once control characters and white space are removed.
    case blank(String)
    /// A test send cannot be scheduled: the hub would deliver it to every subscriber.
    case scheduledTest
    /// An id-only category's push cannot be scheduled: it is one native send per platform.
    case scheduledSecure(NewsCategory)

    /// What is wrong, naming the story.
    public var description: String {
        switch self {
        case .unknownStory(let key, let reason): return "cannot correct '\(key)': \(reason)"
        case .request(let error): return error.description
        case .blank(let field): return PublishProblem.blank(field).description
        case .scheduledTest: return PublishProblem.scheduledTest.description
        case .scheduledSecure(let category):
            return
                "--at cannot schedule a push of \(category.rawValue) (format: id-only): its secure push is one send "
                + "per platform, and the hub schedules each alone; send it when it is due"
        }
    }
}

/// What the ledger knows that a manual push is checked against (the load stage's answer).
public struct PublishKnowledge: Sendable {
    /// The story under the push's own key, if the ledger has it.
    public var byKey: StoryRecord?
    /// The first story recorded with the push's canonical link, if any.
    public var byLink: StoryRecord?
    /// Whether the push's key is a tombstone of a pruned story.
    public var tombstoned = false
    /// The story a correction corrects (`replacing`), if the ledger has it.
    public var corrected: StoryRecord?
    /// The story's last alert that went out (or is scheduled), for a correction's link, source
    /// and image, and to refuse a correction that says the same.
    public var lastPush: OutboxEntry?
    /// A scheduled send of the story waiting at the hub, if any.
    public var scheduled: OutboxEntry?
    /// Stories pushed (or about to be) in the last 36 hours, for the near-identical-title rule.
    public var recentPushes: [StoryRecord]
    /// `publish --user`: the story's last alert to that reader, if one went out.
    public var toUser: OutboxEntry?
    /// The user tags of the readers the story went to by name (excluded from its push to everyone).
    public var personalRecipients: [String] = []

    /// What a ledger knows about one manual push.
    public init(
        byKey: StoryRecord? = nil, byLink: StoryRecord? = nil, corrected: StoryRecord? = nil,
        recentPushes: [StoryRecord] = []
    ) {
        self.byKey = byKey
        self.byLink = byLink
        self.corrected = corrected
        self.recentPushes = recentPushes
    }
}

/// Plans a push an editor sends by hand: the same story key, request and repeat rules as the
/// scheduled run, so the run recognises the story and never repeats it.
public enum PublishPlanner {
    /// The story key of a manual push: the canonical link when there is a URL (so the feed
    /// item for the same article is recognised), else a hash of category and text.
    public static func key(for push: ManualPush) -> String {
        if let url = push.url, let canonical = StoryKey.canonicalLink(url) { return "link:\(canonical)" }
        let digest = SHA256.hash(
            data: Data("\(push.category.rawValue)\n\(push.title ?? "")\n\(push.message ?? "")".utf8))
        return "manual:" + Hex.string(digest.prefix(12))
    }

    /// Plans the push and checks it against what the ledger knows: by key, by link, by the
    /// run's near-identical-title rule and by the tombstones of pruned stories. A correction
    /// (`replacing`) takes the corrected story's key, collapse id, link, source and image, and is
    /// refused when it says what the last alert said. `now` is the session's clock reading; the
    /// request shown is signed at `requestTime` (the wall clock).
    public static func plan(
        _ push: ManualPush, knowledge: PublishKnowledge, config: NewsPushConfig, client: NotificationHubClient,
        now: Date, requestTime: Date
    ) throws(PublishPlanError) -> PublishPlan {
        try validate(push)
        let settings = config.settings(for: push.category)
        if settings.format == .idOnly && push.at != nil { throw .scheduledSecure(push.category) }
        let title = push.title ?? push.message ?? ""
        let (key, kind, refusal, base) = try identity(push, title: title, knowledge: knowledge, now: now)
        let importance =
            push.importance
            ?? ImportanceRules(config.importanceRules)
            .importance(title: title, feedName: nil, feedURL: nil, default: settings.importance)
        let url = push.url ?? base?.link ?? ""
        let content = PushContent(
            category: push.category, title: title, url: url, source: base?.source ?? "newsroom", id: key,
            message: push.message, image: base?.image, language: push.language, importance: importance)
        let story = StoryRecord(
            key: key, feed: "publish", title: title, link: push.url, category: push.category.rawValue,
            firstSeen: now, lastSeen: now, published: push.at ?? now, status: .seen, origin: .publish)
        let (tags, tagsNote) = correctedTags(push, kind: kind, settings: settings, knowledge: knowledge)
        var entry = OutboxEntry(
            storyKey: key, kind: kind, origin: .publish, category: push.category, format: settings.format,
            tags: tags,
            properties: PushRequests.properties(
                content, settings: settings, languages: config.languages, linkParams: config.linkParams),
            createdAt: now, freshUntil: (push.at ?? now).addingTimeInterval(config.policy.maxAge),
            expiresAfter: settings.expiry, scheduledAt: push.at)
        let twice = push.tags == nil ? PersonalExclusions.apply(to: &entry, readers: knowledge.personalRecipients) : []
        let request: HubRequest
        do { request = try PushRequests.request(entry, client: client, test: push.test, now: requestTime) } catch {
            throw .request(error)
        }
        var finalRefusal = push.force ? nil : refusal
        if kind == .correction, !push.force, let last = knowledge.lastPush,
            last.properties["messageParam"] == entry.properties["messageParam"]
        {
            finalRefusal = .sameCorrection(key)
        }
        var plan = PublishPlan(
            push: push, story: story, entry: entry, request: request, refusal: finalRefusal,
            notes: notes(push, knowledge: knowledge, config: config) + (tagsNote.map { [$0] } ?? [])
                + (twice.isEmpty ? [] : [PersonalExclusions.note(twice)]))
        if kind == .correction, let scheduled = knowledge.scheduled, let at = scheduled.scheduledAt, at > now {
            plan.replacedSchedule = scheduled
            plan.notes.append(
                "the story's scheduled send \(scheduled.notificationId ?? scheduled.id) of the old text (due "
                    + "\(FeedDates.format(at))) is cancelled first: it would replace the correction")
        }
        return plan
    }

    /// A correction goes to every device the alert it corrects reached: under another category
    /// (or tags), to both audiences, so the readers of the wrong alert get the right one.
    private static func correctedTags(
        _ push: ManualPush, kind: OutboxEntry.Kind, settings: CategorySettings, knowledge: PublishKnowledge
    ) -> (String, String?) {
        let tags = push.tags ?? settings.tags
        guard kind == .correction, let old = knowledge.lastPush?.tags, old != tags else { return (tags, nil) }
        return (
            "(\(old)) || (\(tags))",
            "the corrected alert went to [\(old)]: the correction goes to [\(old)] and [\(tags)] both"
        )
    }

    /// A push with words in it, and not a scheduled test.
    static func validate(_ push: ManualPush) throws(PublishPlanError) {
        if push.test && push.at != nil { throw .scheduledTest }
        if let title = push.title, AlertText.isBlank(title) { throw .blank("title") }
        if let message = push.message, AlertText.isBlank(message) { throw .blank("message") }
    }

    /// The kind of a test (`--test`) or trial (`--tags` that reach no reader of the category);
    /// nil for a send to readers.
    private static func trialKind(_ push: ManualPush) -> OutboxEntry.Kind? {
        push.test ? .test : push.isPersonal ? .personal : push.isTrial ? .trial : nil
    }

    /// Whether a push to `tags` can reach a reader of `category`: some device that matches the
    /// category's tag expression and `tags` both, among devices that carry no one's own tag
    /// (`isPersonal`). `World`, `World || Politics`, `!user:alice` and `Politics` (a reader of
    /// both) can; `user:alice` or `World && user:alice` cannot: those try the push on one
    /// person's devices. An expression that does not parse reaches nobody (the request is
    /// refused later with the reason).
    public static func reachesReaders(tags: String, category: NewsCategory, config: NewsPushConfig) -> Bool {
        guard let (given, readers) = audiences(tags, category, config) else { return false }
        return given.canOverlap(readers, absent: isPersonal)
    }

    /// Whether a push to `tags` leaves some reader of `category` out (then the run will not send
    /// the story to them either, since it was pushed).
    static func leavesReadersOut(tags: String, category: NewsCategory, config: NewsPushConfig) -> Bool {
        guard let (given, readers) = audiences(tags, category, config) else { return false }
        return readers.canOverlap(.not(given), absent: isPersonal)
    }

    /// `tags` and the category's own expression, parsed; nil when either does not parse.
    private static func audiences(_ tags: String, _ category: NewsCategory, _ config: NewsPushConfig)
        -> (given: TagExpression.Node, readers: TagExpression.Node)?
    {
        guard let given = try? TagExpression.parse(tags),
            let readers = try? TagExpression.parse(config.settings(for: category).tags)
        else { return nil }
        return (given, readers)
    }

    /// A tag that names one person or one device, not an audience: a user's tag (`user:…`,
    /// `username:…`, the app back-end's form) or an installation's (`$…`).
    public static func isPersonal(_ tag: String) -> Bool {
        tag.hasPrefix("$") || tag.hasPrefix("user:") || tag.hasPrefix("username:")
    }

    /// What a correction keeps of the story's last alert unless the editor gives new ones.
    typealias Base = (link: String?, source: String?, image: String?)

    /// The push's story key and kind, why it would repeat a story, and (a correction) what it
    /// keeps of the alert it corrects.
    private static func identity(_ push: ManualPush, title: String, knowledge: PublishKnowledge, now: Date)
        throws(PublishPlanError) -> (String, OutboxEntry.Kind, PublishRefusal?, Base?)
    {
        if let corrected = push.replacing {
            guard let record = knowledge.corrected, record.wasPushed else {
                let reason =
                    knowledge.corrected.map {
                        "it was never pushed (\($0.status.rawValue)): publish it instead of correcting it"
                    }
                    ?? "the ledger has no story with this key (`newspush state show` lists them)"
                throw .unknownStory(corrected, reason: reason)
            }
            let last = knowledge.lastPush?.properties
            let link = record.link ?? last?["url"].flatMap { $0.isEmpty ? nil : $0 }
            let image = last?["image"].flatMap { $0.isEmpty ? nil : $0 }
            // A correction tried with --test or --tags is a trial, not the story's correction.
            return (record.key, trialKind(push) ?? .correction, nil, (link, last?["source"], image))
        }
        let key = Self.key(for: push)
        if push.isPersonal, let user = push.user {
            // To one reader: a repeat only when the story went to everyone or to them; a story
            // an editor rejected goes to no one without --force (a held one may: it is undecided).
            var refusal = repeatOf(key: key, title: title, url: push.url, knowledge: knowledge, now: now)
            if case .known(let record) = refusal, record.status == .held { refusal = nil }
            if refusal == nil, let sent = knowledge.toUser { refusal = .alreadyToUser(user: user, entry: sent) }
            return (key, .personal, refusal, nil)
        }
        if let trial = trialKind(push) { return (key, trial, nil, nil) }
        var refusal = repeatOf(key: key, title: title, url: push.url, knowledge: knowledge, now: now)
        if refusal == nil, knowledge.tombstoned { refusal = .pruned(key) }
        // A story held for an editor, or rejected, never went out: forced, this is its first push.
        var firstPush = refusal == nil
        if case .known(let record) = refusal, [.held, .rejected].contains(record.status) { firstPush = true }
        return (key, firstPush ? .push : .repeat, refusal, nil)
    }

    /// Notes for the editor: a scheduled send of the story still waiting when it is forced out
    /// now; tags that reach only some of the category's readers.
    private static func notes(_ push: ManualPush, knowledge: PublishKnowledge, config: NewsPushConfig) -> [String] {
        var notes: [String] = []
        let messages = config.settings(for: push.category).messages.keys
        if push.message == nil, push.language != "en", Languages.match(push.language, in: messages) == nil {
            notes.append(
                "\(push.category.rawValue) has no message in '\(push.language)' "
                    + "(categories.\(push.category.rawValue).messages): its default message is used")
        }
        if let tags = push.tags, !push.isTrial, push.replacing == nil,
            leavesReadersOut(tags: tags, category: push.category, config: config)
        {
            notes.append(
                "--tags '\(tags)' reaches only some of \(push.category.rawValue)'s readers, and this push is the "
                    + "story's push: the run will not send the story to the others")
        }
        guard push.force, let scheduled = knowledge.scheduled, let at = scheduled.scheduledAt else { return notes }
        let id = scheduled.notificationId.map { " (newspush hub cancel \($0) cancels it)" } ?? ""
        return notes + [
            "a scheduled send of this story waits at the hub for \(FeedDates.format(at))\(id): --force sends it now "
                + "as well"
        ]
    }

    /// Whether the story of a held push went out since it was held, by the rules a publish is
    /// checked by: another story in `recent` (pushed in the last 36 hours) with its canonical
    /// `link`, or a near-identical headline. `recent` holds no held or rejected stories.
    public static func pushedSince(
        held entry: OutboxEntry, story: StoryRecord?, recent: [StoryRecord], now: Date
    ) -> PublishRefusal? {
        let link = story?.linkKey ?? entry.properties["url"].flatMap(StoryKey.canonicalLink)
        if let link, let same = recent.first(where: { $0.linkKey == link }) { return .known(same) }
        let title = story?.title ?? entry.properties["title"] ?? ""
        return repeatOf(
            key: entry.storyKey, title: title, url: nil, knowledge: PublishKnowledge(recentPushes: recent), now: now)
    }

    /// What makes this story a repeat, if anything.
    static func repeatOf(key: String, title: String, url: String?, knowledge: PublishKnowledge, now: Date)
        -> PublishRefusal?
    {
        var candidate = Candidate(
            key: key, linkKey: url.flatMap(StoryKey.canonicalLink), feedName: "publish", feedURL: "publish",
            item: FeedItem(title: title, link: url, published: now), firstSeen: now)
        candidate.previous = knowledge.byKey ?? (candidate.linkKey == nil ? nil : knowledge.byLink)
        switch StoryMatcher.match([candidate], recentPushes: knowledge.recentPushes)[0] {
        case .known(let record) where record.wasPushed || [.pending, .held, .rejected].contains(record.status):
            return .known(record)
        case .sameStory(let same): return .sameStory(same)
        case .known, .new, .tombstoned: return nil
        }
    }
}

/// What is wrong with a publish request, said in the words of the front end that asked: its
/// options (`--title`) on the command line, its fields (`title`) on the desk's form.
public enum PublishProblem: Error, Sendable, Equatable, CustomStringConvertible {
    case titleOrMessage
    case blank(String)
    case scheduledTest
    case notHTTP
    case language(String)
    case noCategory
    case noUser
    case userAndTags
    case userCorrection
    case userTest
    case time(ScheduleTimeError)

    /// In the command line's words.
    public var description: String { said { "--" + $0 } }

    /// In the desk form's words.
    public var formDescription: String { said { $0 } }

    private func said(_ name: (String) -> String) -> String {
        switch self {
        case .titleOrMessage: return "give exactly one of \(name("title")) and \(name("message"))"
        case .blank(let field):
            return "\(name(field)) is blank once control characters and white space are removed: a push needs words"
        case .scheduledTest:
            return "\(name("test")) cannot be scheduled with \(name("at")): the hub has no scheduled test sends, and a "
                + "scheduled send goes to every subscriber; send the test now, then schedule the real push"
        case .notHTTP: return "\(name("url")) must be an http(s) URL"
        case .language(let tag): return "\(name("language")) '\(tag)' is not a language tag (en, fr, pt-BR …)"
        case .noCategory: return "give \(name("category")) (or \(name("replace")) KEY to correct a story)"
        case .noUser: return "\(name("user")) needs the reader's name"
        case .userAndTags:
            return "give \(name("user")) or \(name("tags")), not both (\(name("user")) sends to that reader's tag)"
        case .userCorrection:
            return "\(name("user")) cannot correct a story (\(name("replace")) corrects it for everyone)"
        case .userTest:
            return "\(name("user")) is a real push to one reader; \(name("test")) is a trial: give one of them"
        case .time(let error): return error.said(option: name("at"))
        }
    }
}
