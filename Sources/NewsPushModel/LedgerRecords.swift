import Foundation
import Synchronization

/// What the ledger remembers about one story.
public struct StoryRecord: Sendable, Equatable {
    /// Where a story stands.
    public enum Status: String, Sendable, CaseIterable {
        /// Seen and deliberately not pushed (baseline, stale, unclassified…).
        case seen
        /// An outbox entry waits to be sent.
        case pending
        /// A send was about to start; a run that finds this knows the process died mid-send, so
        /// the outcome is unknown and the story is never sent again.
        case sending
        /// The hub answered 2xx.
        case pushed
        /// The hub refused this push for good (400, 413).
        case failed
        /// Sent, but no clear answer came back; never sent again.
        case unknown
        /// Its outbox entry aged out (`policy.max_age`) before the hub took it.
        case expired
        /// The hub holds a scheduled send of it (`publish --at`): the run never pushes it.
        case scheduled
        /// Its scheduled send was cancelled (`hub cancel`): not pushed, and not pushed by a run.
        case cancelled
        /// Its push waits for an editor (`review.rules`): sent only once approved.
        case held
        /// An editor rejected its push: never sent.
        case rejected
    }

    /// Who recorded the story first.
    public enum Origin: String, Sendable {
        case run
        case publish
    }

    /// The story key (`guid:`, `link:`, `hash:`, `manual:`).
    public var key: String
    /// The URL of the feed that first listed it, or `publish`.
    public var feed: String
    /// Its headline.
    public var title: String?
    /// Its link.
    public var link: String?
    /// The category it was filed under, if any.
    public var category: String?
    /// When newspush first saw it.
    public var firstSeen: Date
    /// When a feed last listed it.
    public var lastSeen: Date
    /// When its feed says it was published.
    public var published: Date?
    /// Where it stands.
    public var status: Status
    /// When its push went out (or was about to).
    public var pushedAt: Date?
    /// The hub's id of its push.
    public var notificationId: String?
    /// Why its push failed, if it did.
    public var error: String?
    /// Who recorded it first.
    public var origin: Origin

    /// A story as the ledger records it.
    public init(
        key: String, feed: String, title: String?, link: String?, category: String?, firstSeen: Date, lastSeen: Date,
        published: Date?, status: Status, pushedAt: Date? = nil, notificationId: String? = nil, error: String? = nil,
        origin: Origin = .run
    ) {
        self.key = key
        self.feed = feed
        self.title = title
        self.link = link
        self.category = category
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.published = published
        self.status = status
        self.pushedAt = pushedAt
        self.notificationId = notificationId
        self.error = error
        self.origin = origin
    }

    /// The canonical link the story is also known by.
    public var linkKey: String? { link.flatMap(StoryLink.canonical) }

    /// Whether a push of this story went out, may have, or is scheduled: it must never go out
    /// again by itself.
    public var wasPushed: Bool { [.pushed, .sending, .unknown, .scheduled].contains(status) }
}

/// What the ledger remembers about one feed.
public struct FeedRecord: Sendable, Equatable {
    /// The feed's URL as configured.
    public var url: String
    /// What to send for a conditional GET.
    public var validators: ConditionalGetValidators?
    /// The last fetch that got an answer (200 or 304).
    public var lastFetched: Date?
    /// The last fetch whose document was read. A feed without one records a baseline.
    public var lastSuccess: Date?
    /// When the feed's list of stories (its last full response) was last known to be current:
    /// those stories stay alive while the feed answers 304 or is out of reach.
    public var listedAt: Date?
    /// Not to be fetched before this time (the server's Retry-After).
    public var retryAfter: Date?
    /// Until when the server said its last answer stays fresh (`Cache-Control: max-age`,
    /// `Expires`, RSS `<ttl>`): a watcher that takes the feed over fetches it no sooner.
    public var freshUntil: Date?
    /// Where the feed said it moved for good (301/308), to tell the operator.
    public var movedTo: String?

    /// A feed as the ledger records it.
    public init(
        url: String, validators: ConditionalGetValidators? = nil, lastFetched: Date? = nil, lastSuccess: Date? = nil,
        listedAt: Date? = nil, retryAfter: Date? = nil, movedTo: String? = nil, freshUntil: Date? = nil
    ) {
        self.freshUntil = freshUntil
        self.url = url
        self.validators = validators
        self.lastFetched = lastFetched
        self.lastSuccess = lastSuccess
        self.listedAt = listedAt
        self.retryAfter = retryAfter
        self.movedTo = movedTo
    }
}

/// A push in the outbox: written before it is sent, with everything needed to send it again
/// (the request is rebuilt with a fresh token; tokens are never stored).
public struct OutboxEntry: Sendable, Equatable {
    /// Where a push stands.
    public enum Status: String, Sendable, CaseIterable {
        case pending, sending, sent, failed, unknown, expired
        /// Accepted by the hub as a scheduled send (its notification id is the scheduled id).
        case scheduled
        case cancelled
        /// Waits for an editor (`review.rules`): never sent without `review approve`.
        case held
        /// An editor rejected it (`review reject`): never sent.
        case rejected

        /// The status a story takes from its push in this status.
        public var storyStatus: StoryRecord.Status {
            switch self {
            case .pending: return .pending
            case .sending: return .sending
            case .sent: return .pushed
            case .failed: return .failed
            case .unknown: return .unknown
            case .expired: return .expired
            case .scheduled: return .scheduled
            case .cancelled: return .cancelled
            case .held: return .held
            case .rejected: return .rejected
            }
        }
    }

    /// Why the push exists: the story's first push, a deliberate repeat (`publish --force`) or
    /// a correction that replaces an earlier alert (`publish --replace`).
    public enum Kind: String, Sendable {
        case push
        case `repeat`
        case correction
        /// A send with the hub's test flag (`--test`, `hub test-send`): recorded, never the
        /// story's push, never counted in a budget.
        case test
        /// A trial to a few devices (`--tags`): recorded, never the story's push, never counted.
        case trial
        /// The editors' notice that pushes wait for review (`review.notify`): recorded, never a
        /// story's push, never counted.
        case notice
        /// An alert to one reader's devices (`publish --user`): a real push to that reader, on
        /// the record and audited, never the story's push to its readers, never counted.
        case personal

        /// A test, a trial, a notice or a personal alert: on the record, but not an alert of a
        /// story to its readers.
        public var isTrial: Bool { self == .test || self == .trial || self == .notice || self == .personal }

        /// The kinds that are not a story's alert to its readers, as SQL lists them.
        public static let notStoryAlertsSQL = "('test', 'trial', 'notice', 'personal')"
    }

    /// The entry's id (ordered by creation).
    public var id: String
    /// The story it pushes.
    public var storyKey: String
    /// A first push, a repeat or a correction.
    public var kind: Kind
    /// Whether a run or an editor made it.
    public var origin: StoryRecord.Origin
    /// The story's category.
    public var category: NewsCategory
    /// How it is sent (template, id-only, apple, fcmv1).
    public var format: PushFormat
    /// The tag expression it goes to.
    public var tags: String
    /// The template properties (SPEC §5), `expiry` aside.
    public var properties: [String: String]
    /// When it was planned.
    public var createdAt: Date
    /// After this the push is no longer news: it expires instead of being sent.
    public var freshUntil: Date
    /// Where it stands.
    public var status: Status
    /// How many times it was about to be sent.
    public var attempts: Int
    /// When it was last about to be sent.
    public var lastAttempt: Date?
    /// The hub's last answer.
    public var httpStatus: Int?
    /// The hub's id of the notification (or of the scheduled send).
    public var notificationId: String?
    /// Why it failed or waits.
    public var error: String?
    /// Seconds a device may show the alert once it is delivered (the category's `expiry`).
    public var expiresAfter: Double
    /// When the hub is to deliver it (`publish --at`); nil: now.
    public var scheduledAt: Date?
    /// When the hub accepted it (the machine's clock; nil until sent).
    public var acceptedAt: Date?

    /// An outbox entry (pending unless said otherwise).
    public init(
        id: String = OutboxEntry.newID(), storyKey: String, kind: Kind = .push, origin: StoryRecord.Origin,
        category: NewsCategory, format: PushFormat, tags: String, properties: [String: String], createdAt: Date,
        freshUntil: Date, status: Status = .pending, attempts: Int = 0, lastAttempt: Date? = nil,
        httpStatus: Int? = nil, notificationId: String? = nil, error: String? = nil, expiresAfter: Double = 3600,
        scheduledAt: Date? = nil, acceptedAt: Date? = nil
    ) {
        self.expiresAfter = expiresAfter
        self.scheduledAt = scheduledAt
        self.acceptedAt = acceptedAt
        self.id = id
        self.storyKey = storyKey
        self.kind = kind
        self.origin = origin
        self.category = category
        self.format = format
        self.tags = tags
        self.properties = properties
        self.createdAt = createdAt
        self.freshUntil = freshUntil
        self.status = status
        self.attempts = attempts
        self.lastAttempt = lastAttempt
        self.httpStatus = httpStatus
        self.notificationId = notificationId
        self.error = error
    }

    /// A new entry id: a UUID of version 7 (its first 48 bits the time in milliseconds, then a
    /// counter within the millisecond), so ids sort in the order the entries were made and the
    /// outbox, ordered by creation time and id, keeps a run's send order.
    public static func newID() -> String { OrderedIDs.next() }
}

/// What became of one outbox entry when it was sent.
public struct OutboxOutcome: Sendable, Equatable {
    /// The entry it is the outcome of.
    public var entryID: String
    /// The entry's story.
    public var storyKey: String
    /// What the entry came to.
    public var status: OutboxEntry.Status
    /// When.
    public var at: Date
    /// The hub's answer, if there was one.
    public var httpStatus: Int?
    /// The hub's id of the notification.
    public var notificationId: String?
    /// Why it failed or waits.
    public var error: String?
    /// The entry's properties from now on, when they change (a secure push that reached some
    /// of its platforms keeps only the others to go).
    public var properties: [String: String]?
    /// When the hub accepted it, by the machine's clock (the alert's latency ends there).
    public var acceptedAt: Date?

    /// What became of entry `entryID`.
    public init(
        entryID: String, storyKey: String, status: OutboxEntry.Status, at: Date, httpStatus: Int? = nil,
        notificationId: String? = nil, error: String? = nil, properties: [String: String]? = nil,
        acceptedAt: Date? = nil
    ) {
        self.acceptedAt = acceptedAt
        self.entryID = entryID
        self.storyKey = storyKey
        self.status = status
        self.at = at
        self.httpStatus = httpStatus
        self.notificationId = notificationId
        self.error = error
        self.properties = properties
    }
}

/// Everything one run writes after planning, in one transaction: feeds' fetch results, new
/// stories, what each read feed lists now, and the outbox entries the policy selected.
public struct RunRecord: Sendable {
    /// The run's time.
    public var at: Date
    /// The feeds fetched this run, as they are now.
    public var feeds: [FeedRecord] = []
    /// Each feed read: every key its document lists now, and the stories among them the
    /// ledger did not know (walked one feed at a time).
    public var listings = FeedListings([])
    /// The outbox entries the plan selected.
    public var outbox: [OutboxEntry] = []
    /// Pending entries that aged out this run.
    public var expired: [String] = []
    /// What the ledger keeps of each entry the review rules held (`outbox` has the entries).
    public var holds: [ReviewHold] = []
    /// The run's editorial decisions (held, expired).
    public var audit: [AuditRecord] = []

    /// An empty record of a run at `at`.
    public init(at: Date) {
        self.at = at
    }
}

/// What a run learnt from one feed's document: every story key it lists now, and the stories
/// among them the ledger did not know.
public struct FeedListing: Sendable {
    /// The feed's URL as configured.
    public var feed: String
    /// The keys of every item its document lists, in order.
    public var keys: [String]
    /// The stories the ledger did not know (the first item of each key).
    public var newStories: [StoryRecord]

    /// A feed's listing.
    public init(feed: String, keys: [String], newStories: [StoryRecord] = []) {
        self.feed = feed
        self.keys = keys
        self.newStories = newStories
    }
}

/// A run's listings, handed to the ledger one feed at a time: those of a run of 10,000 feeds
/// are read back from the run's item log as the ledger writes them, never held together.
public struct FeedListings: Sendable {
    /// Calls its argument with each listing in order.
    public typealias Walk = @Sendable (_ body: (FeedListing) throws -> Void) throws -> Void
    private let walk: Walk

    /// Listings held in memory.
    public init(_ listings: [FeedListing]) {
        walk = { body in for listing in listings { try body(listing) } }
    }

    /// Listings made one at a time by `walk`.
    public init(walk: @escaping Walk) {
        self.walk = walk
    }

    /// Each listing in order (what `body` throws is thrown).
    public func forEach(_ body: (FeedListing) throws -> Void) throws {
        try walk(body)
    }
}

/// Version 7 UUIDs, increasing within this process.
enum OrderedIDs {
    private static let last = Mutex<(milliseconds: UInt64, counter: UInt64)>((0, 0))

    static func next(now: Date = Date()) -> String {
        let (milliseconds, counter) = last.withLock { last -> (UInt64, UInt64) in
            let time = max(UInt64(max(0, now.timeIntervalSince1970 * 1000)), last.milliseconds)
            if time > last.milliseconds {
                last = (time, 0)
            } else if last.counter < 0x0FFF {
                last.counter += 1
            } else {
                last = (last.milliseconds + 1, 0)  // the counter's twelve bits are used up
            }
            return last
        }
        var random = SystemRandomNumberGenerator()
        let high = (milliseconds << 16) | 0x7000 | (counter & 0x0FFF)
        let low = (UInt64(0b10) << 62) | (random.next() >> 2)
        let hex = String(format: "%016llx%016llx", high, low)
        let parts = [
            hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4),
            hex.dropFirst(20),
        ]
        return parts.joined(separator: "-")
    }
}

/// One editorial decision, on the record with who made it and when (SPEC §6).
public struct AuditRecord: Sendable, Equatable {
    /// What was decided.
    public enum Action: String, Sendable, CaseIterable {
        case held, approved, edited, rejected, expired, published, corrected, cancelled
        /// A reader's installations were removed (`devices forget-user`, `DELETE /api/users/me`).
        case forgotten
    }

    /// The record's id (ordered by creation).
    public var id: String
    /// When it was decided.
    public var at: Date
    /// Who decided (`--editor`, else the login name; `newspush` for a run's own decisions).
    public var editor: String
    /// What was decided.
    public var action: Action
    /// The outbox entry it concerns.
    public var entryID: String?
    /// The story it concerns.
    public var storyKey: String?
    /// The push's category.
    public var category: NewsCategory?
    /// The push's headline (after an edit, the new one).
    public var title: String?
    /// Why (the holding rule, the rejection's reason, the text before an edit …).
    public var detail: String?

    /// The editor's name of a run's own decisions (held by a rule, expired unreviewed).
    public static let runEditor = "newspush"

    /// A decision made now.
    public init(
        id: String = OutboxEntry.newID(), at: Date, editor: String, action: Action, entryID: String? = nil,
        storyKey: String? = nil, category: NewsCategory? = nil, title: String? = nil, detail: String? = nil
    ) {
        self.id = id
        self.at = at
        self.editor = editor
        self.action = action
        self.entryID = entryID
        self.storyKey = storyKey
        self.category = category
        self.title = title
        self.detail = detail
    }
}

/// What the ledger keeps beside a held outbox entry: the rule that held it and its content
/// (JSON), from which an edited approval renders the alert again.
public struct ReviewHold: Sendable, Equatable {
    /// The held outbox entry.
    public var entryID: String
    /// The rule that held it, as reports name it.
    public var rule: String
    /// The alert's content (title, link, source, summary, language …) as JSON.
    public var content: String

    /// A hold of entry `entryID`.
    public init(entryID: String, rule: String, content: String) {
        self.entryID = entryID
        self.rule = rule
        self.content = content
    }
}
