import Foundation
import NewsPushCore
import NewsPushModel

// The JSON documents both front ends print: the command line's `--format json` and the desk's
// `/api/` answers are the same objects (SPEC §6, §8).

/// `review list --format json`.
public struct ReviewListOutput: Encodable {
    /// The document's `held`.
    public var held: [HeldOutput]

    /// The document of `held`.
    public init(held: [HeldOutput]) { self.held = held }
}

/// One held push of `review list --format json`.
public struct HeldOutput: Encodable {
    /// The document's `id`.
    public var id: String
    /// The document's `story_key`.
    public var storyKey: String
    /// The document's `category`.
    public var category: String
    /// The document's `tags`.
    public var tags: String
    /// The document's `properties`.
    public var properties: [String: String]
    /// The document's `rule`.
    public var rule: String
    /// The document's `held_at`.
    public var heldAt: String
    /// The document's `fresh_until`.
    public var freshUntil: String
    /// The document's `waited_seconds`.
    public var waitedSeconds: Int
    /// The document's `stale`.
    public var stale: Bool

    /// The JSON keys.
    public enum CodingKeys: String, CodingKey {
        case id, category, tags, properties, rule, stale
        case storyKey = "story_key", heldAt = "held_at", freshUntil = "fresh_until", waitedSeconds = "waited_seconds"
    }

    /// The document of a held push.
    public init(_ push: HeldPush) {
        id = push.entry.id
        storyKey = push.entry.storyKey
        category = push.entry.category.rawValue
        tags = push.entry.tags
        properties = push.entry.properties
        rule = push.rule
        heldAt = Timestamp.format(push.entry.createdAt)
        freshUntil = Timestamp.format(push.entry.freshUntil)
        waitedSeconds = push.waitedSeconds
        stale = push.stale
    }
}

/// `review history --format json`: the same objects as `state export`'s `audit`.
public struct AuditOutput: Encodable {
    /// The document's `records`.
    public var records: [AuditRecord]

    /// The document of `records`.
    public init(records: [AuditRecord]) { self.records = records }

    /// Encodes the records as `{"history": […]}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        var list = container.nestedUnkeyedContainer(forKey: .history)
        for record in records {
            var object = list.nestedContainer(keyedBy: Key.self)
            try object.encode(record.id, forKey: .id)
            try object.encode(Timestamp.format(record.at), forKey: .at)
            try object.encode(record.editor, forKey: .editor)
            try object.encode(record.action.rawValue, forKey: .action)
            try object.encode(record.entryID, forKey: .entryID)
            try object.encode(record.storyKey, forKey: .storyKey)
            try object.encode(record.category?.rawValue, forKey: .category)
            try object.encode(record.title, forKey: .title)
            try object.encode(record.detail, forKey: .detail)
        }
    }

    /// The JSON keys.
    public enum Key: String, CodingKey {
        case history, id, at, editor, action, category, title, detail
        case entryID = "entry_id", storyKey = "story_key"
    }
}

/// What `publish` and `hub test-send` print with `--format json`: one object.
public struct PublishOutput: Encodable {
    /// One device's outcome of a test send (`--test`).
    public struct Device: Encodable {
        /// The document's `platform`.
        public var platform: String
        /// The document's `registration_id`.
        public var registrationId: String
        /// The document's `outcome`.
        public var outcome: String
        /// One device's outcome of a test send.
        public init(platform: String, registrationId: String, outcome: String) {
            self.platform = platform
            self.registrationId = registrationId
            self.outcome = outcome
        }
        /// The JSON keys.
        public enum CodingKeys: String, CodingKey { case platform, outcome, registrationId = "registration_id" }
    }

    /// The document's `test`.
    public var test: Bool
    /// The document's `dry_run`.
    public var dryRun: Bool
    /// The document's `category`.
    public var category: String
    /// The document's `tags`.
    public var tags: String
    /// The document's `format`.
    public var format: String
    /// The document's `properties`.
    public var properties: [String: String]
    /// The document's `story_key`.
    public var storyKey: String
    /// push, or repeat (`--force` on a story already pushed).
    public var kind: String
    /// would-send, refused, not-confirmed, sent, failed, pending, unknown.
    public var status: String
    /// The document's `refusal`.
    public var refusal: String?
    /// What the editor should know before it goes out (a scheduled send of the story pending, …).
    public var notes: [String]
    /// The document's `http_status`.
    public var httpStatus: Int?
    /// The document's `notification_id`.
    public var notificationId: String?
    /// The document's `error`.
    public var error: String?
    /// The request as it would go out (dry runs), signature redacted.
    public var request: RequestReport?
    /// Per-device outcomes of a test send.
    public var devices: [Device]?

    /// The JSON keys.
    public enum CodingKeys: String, CodingKey {
        case test, category, tags, format, properties, kind, status, refusal, notes, error, request, devices
        case dryRun = "dry_run", storyKey = "story_key", httpStatus = "http_status", notificationId = "notification_id"
    }

    /// The document.
    public init(_ plan: PublishPlan, dryRun: Bool) {
        test = plan.push.test
        self.dryRun = dryRun
        category = plan.entry.category.rawValue
        tags = plan.entry.tags
        format = plan.entry.format.rawValue
        properties = plan.entry.properties
        storyKey = plan.entry.storyKey
        kind = plan.entry.kind.rawValue
        status = "would-send"
        refusal = plan.refusal?.description
        notes = plan.notes + plan.done
        request = dryRun ? RequestReport(plan.request) : nil
    }

    /// The document of a publish's outcome; nil when nothing was decided (not confirmed).
    public init(_ outcome: PublishOutcome, dryRun: Bool) {
        switch outcome {
        case .refused(let plan, let refusal):
            self.init(plan, dryRun: dryRun)
            status = "refused"
            self.refusal = refusal.description
        case .dryRun(let plan):
            self.init(plan, dryRun: true)
        case .notConfirmed(let plan):
            self.init(plan, dryRun: dryRun)
            status = "not-confirmed"
            error = "not confirmed; nothing sent"
        case .attempted(let plan, let result):
            self.init(plan, dryRun: false)
            let outcome = result.outcome
            switch outcome.status {
            case .sent: status = "sent"
            case .scheduled: status = "scheduled"
            case .pending: status = "pending"
            case .unknown, .sending: status = "unknown"
            default: status = "failed"
            }
            httpStatus = outcome.httpStatus
            notificationId = outcome.notificationId
            error = outcome.error
            devices = result.testOutcome?.results.map {
                .init(platform: $0.platform, registrationId: $0.registrationId, outcome: $0.outcome)
            }
        }
    }
}
