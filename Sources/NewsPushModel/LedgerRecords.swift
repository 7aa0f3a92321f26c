import Foundation
import Synchronization

/// What the ledger remembers about one story.
public struct StoryRecord: Sendable, Equatable {
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
    }

    /// Who recorded the story first.
    public enum Origin: String, Sendable {
        case run
        case publish
    }

    public var key: String
    /// The URL of the feed that first listed it, or `publish`.
    public var feed: String
    public var title: String?
    public var link: String?
    public var category: String?
    public var firstSeen: Date
    public var lastSeen: Date
    public var published: Date?
    public var status: Status
    public var pushedAt: Date?
    public var notificationId: String?
    public var error: String?
    public var origin: Origin

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
    public var url: String
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
    /// Where the feed said it moved for good (301/308), to tell the operator.
    public var movedTo: String?

    public init(
        url: String, validators: ConditionalGetValidators? = nil, lastFetched: Date? = nil, lastSuccess: Date? = nil,
        listedAt: Date? = nil, retryAfter: Date? = nil, movedTo: String? = nil
    ) {
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
    public enum Status: String, Sendable, CaseIterable {
        case pending, sending, sent, failed, unknown, expired
        /// Accepted by the hub as a scheduled send (its notification id is the scheduled id).
        case scheduled
        case cancelled

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
            }
        }
    }

    /// Why the push exists: the story's first push, a deliberate repeat (`publish --force`) or
    /// a correction that replaces an earlier alert (`publish --replace`).
    public enum Kind: String, Sendable {
        case push
        case `repeat`
        case correction
    }

    public var id: String
    public var storyKey: String
    public var kind: Kind
    public var origin: StoryRecord.Origin
    public var category: NewsCategory
    public var format: PushFormat
    public var tags: String
    public var properties: [String: String]
    public var createdAt: Date
    /// After this the push is no longer news: it expires instead of being sent.
    public var freshUntil: Date
    public var status: Status
    public var attempts: Int
    public var lastAttempt: Date?
    public var httpStatus: Int?
    public var notificationId: String?
    public var error: String?
    /// Seconds a device may show the alert once it is delivered (the category's `expiry`).
    public var expiresAfter: Double
    /// When the hub is to deliver it (`publish --at`); nil: now.
    public var scheduledAt: Date?

    public init(
        id: String = OutboxEntry.newID(), storyKey: String, kind: Kind = .push, origin: StoryRecord.Origin,
        category: NewsCategory, format: PushFormat, tags: String, properties: [String: String], createdAt: Date,
        freshUntil: Date, status: Status = .pending, attempts: Int = 0, lastAttempt: Date? = nil,
        httpStatus: Int? = nil, notificationId: String? = nil, error: String? = nil, expiresAfter: Double = 3600,
        scheduledAt: Date? = nil
    ) {
        self.expiresAfter = expiresAfter
        self.scheduledAt = scheduledAt
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
    public var entryID: String
    public var storyKey: String
    public var status: OutboxEntry.Status
    public var at: Date
    public var httpStatus: Int?
    public var notificationId: String?
    public var error: String?

    public init(
        entryID: String, storyKey: String, status: OutboxEntry.Status, at: Date, httpStatus: Int? = nil,
        notificationId: String? = nil, error: String? = nil
    ) {
        self.entryID = entryID
        self.storyKey = storyKey
        self.status = status
        self.at = at
        self.httpStatus = httpStatus
        self.notificationId = notificationId
        self.error = error
    }
}

/// Everything one run writes after planning, in one transaction: feeds' fetch results, new
/// stories, what each read feed lists now, and the outbox entries the policy selected.
public struct RunRecord: Sendable {
    public var at: Date
    /// The feeds fetched this run, as they are now.
    public var feeds: [FeedRecord] = []
    public var newStories: [StoryRecord] = []
    /// Feed URL → the keys of every item its document lists now (read feeds only).
    public var listings: [String: [String]] = [:]
    public var outbox: [OutboxEntry] = []
    /// Pending entries that aged out this run.
    public var expired: [String] = []

    public init(at: Date) {
        self.at = at
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
