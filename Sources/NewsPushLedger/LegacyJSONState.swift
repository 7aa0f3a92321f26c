import Foundation
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// The JSON state file of newspush before the ledger (version 1: one file rewritten whole on
/// every run, plus a journal of push statuses). Read once to migrate it into the ledger; also
/// written by the benchmark that compares the two.
public struct LegacyJSONState: Codable, Sendable {
    /// A story as the old state file kept it.
    public struct Story: Codable, Sendable {
        /// Its status.
        public var status: String
        /// The feed that listed it.
        public var feed: String
        /// Its headline.
        public var title: String?
        /// Its link.
        public var link: String?
        /// Its category.
        public var category: String?
        /// When it was first seen.
        public var firstSeen: Date
        /// When it was last seen.
        public var lastSeen: Date
        /// When it was published.
        public var published: Date?
        /// When it was pushed.
        public var pushedAt: Date?
        /// The hub's id of its push.
        public var notificationId: String?
        /// Why its push failed.
        public var error: String?

        /// A story of the old state file.
        public init(
            status: String, feed: String, title: String?, link: String?, category: String?, firstSeen: Date,
            lastSeen: Date, published: Date? = nil, pushedAt: Date? = nil, notificationId: String? = nil,
            error: String? = nil
        ) {
            self.status = status
            self.feed = feed
            self.title = title
            self.link = link
            self.category = category
            self.firstSeen = firstSeen
            self.lastSeen = lastSeen
            self.published = published
            self.pushedAt = pushedAt
            self.notificationId = notificationId
            self.error = error
        }

        enum CodingKeys: String, CodingKey {
            case status, feed, title, link, category, published, error
            case firstSeen = "first_seen", lastSeen = "last_seen", pushedAt = "pushed_at", notificationId =
                "notification_id"
        }
    }

    /// A feed as the old state file kept it.
    public struct Feed: Codable, Sendable {
        /// Its validators.
        public var validators: ConditionalGetValidators?
        /// When it was last fetched.
        public var lastFetched: Date?
        /// Not to be fetched before this.
        public var retryAfter: Date?
        /// Where it moved for good.
        public var movedTo: String?

        /// A feed of the old state file.
        public init(validators: ConditionalGetValidators? = nil, lastFetched: Date? = nil) {
            self.validators = validators
            self.lastFetched = lastFetched
        }

        enum CodingKeys: String, CodingKey {
            case validators, lastFetched = "last_fetched", retryAfter = "retry_after", movedTo = "moved_to"
        }
    }

    struct JournalEntry: Codable {
        var key: String
        var status: String
        var at: Date
        var notificationId: String?
        var error: String?
        enum CodingKeys: String, CodingKey { case key, status, at, error, notificationId = "notification_id" }
    }

    /// The format's version.
    public static let version = 1
    /// The file's version.
    public var version = LegacyJSONState.version
    /// Feeds by URL.
    public var feeds: [String: Feed] = [:]
    /// Stories by key.
    public var stories: [String: Story] = [:]
    /// Pruned story keys and when.
    public var tombstones: [String: Date] = [:]

    /// An empty state.
    public init() {}

    enum CodingKeys: String, CodingKey {
        case version, feeds, tombstones, stories = "items"
    }

    /// Reads a state file, refusing a newer version.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        feeds = try c.decode([String: Feed].self, forKey: .feeds)
        stories = try c.decode([String: Story].self, forKey: .stories)
        tombstones = try c.decodeIfPresent([String: Date].self, forKey: .tombstones) ?? [:]
        let known: Set<String> = ["seen", "sending", "pushed", "failed", "pending", "unknown"]
        if let bad = stories.first(where: { !known.contains($0.value.status) }) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [CodingKeys.stories],
                    debugDescription: "\(bad.key) has the unknown status '\(bad.value.status)'"))
        }
    }

    // MARK: Reading

    /// The state of the JSON file at `path` with its journal applied; errors name the file.
    public static func load(path: String) throws(LedgerError) -> LegacyJSONState {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .unreadable(path: path, reason: SystemErrors.reason(error))
        }
        if data.isEmpty { throw .corrupt(path: path, reason: "the file is empty") }
        struct VersionProbe: Decodable { var version: Int? }
        guard let probe = try? decoder.decode(VersionProbe.self, from: data) else {
            throw .corrupt(path: path, reason: "not valid JSON")
        }
        guard let version = probe.version else { throw .corrupt(path: path, reason: "no version field") }
        if version > Self.version { throw .newerSchema(path: path, version: version) }
        var state: LegacyJSONState
        do { state = try decoder.decode(LegacyJSONState.self, from: data) } catch {
            throw .corrupt(path: path, reason: describe(error))
        }
        for entry in try journal(path + ".journal") {
            guard var story = state.stories[entry.key] else { continue }
            story.status = entry.status
            if entry.status == "sending" { story.pushedAt = entry.at }
            if entry.status == "pending" { story.pushedAt = nil }
            if let id = entry.notificationId { story.notificationId = id }
            story.error = entry.error
            state.stories[entry.key] = story
        }
        return state
    }

    private static func journal(_ path: String) throws(LedgerError) -> [JournalEntry] {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return [] }
        let lines = data.split(separator: 0x0A, omittingEmptySubsequences: true)
        var entries: [JournalEntry] = []
        for (index, line) in lines.enumerated() {
            if let entry = try? decoder.decode(JournalEntry.self, from: Data(line)) {
                entries.append(entry)
            } else if index == lines.count - 1 && data.last != 0x0A {
                break  // a line cut short by a crash mid-write: its send had not started
            } else {
                throw .corrupt(path: path, reason: "line \(index + 1) is not a journal entry")
            }
        }
        return entries
    }

    // MARK: Migration

    /// Copies the state into a new ledger. Push statuses carry over (an interrupted send becomes
    /// unknown: never re-sent); a story that was pending is left out, so its feed's next full
    /// response plans it again. Validators are dropped for the same reason: the first run after
    /// the migration reads every feed in full and records what each lists.
    static func importState(_ state: LegacyJSONState, into db: any LedgerDatabase) throws {
        try db.transaction {
            for (url, feed) in state.feeds {
                let record = FeedRecord(
                    url: url, lastFetched: feed.lastFetched, lastSuccess: feed.lastFetched,
                    listedAt: feed.lastFetched, retryAfter: feed.retryAfter, movedTo: feed.movedTo)
                try db.run(
                    "INSERT INTO feeds (\(Ledger.feedColumns)) VALUES (\(Ledger.marks(9)))",
                    [
                        .text(record.url), .null, .null, SQLValue(record.lastFetched), SQLValue(record.lastSuccess),
                        SQLValue(record.listedAt), SQLValue(record.retryAfter), SQLValue(record.movedTo), .null,
                    ])
            }
            for (key, story) in state.stories where story.status != "pending" {
                let status: StoryRecord.Status =
                    story.status == "sending" ? .unknown : StoryRecord.Status(rawValue: story.status) ?? .seen
                let origin: StoryRecord.Origin = story.feed == "manual" ? .publish : .run
                let record = StoryRecord(
                    key: key, feed: story.feed, title: story.title, link: story.link, category: story.category,
                    firstSeen: story.firstSeen, lastSeen: story.lastSeen, published: story.published, status: status,
                    pushedAt: story.pushedAt, notificationId: story.notificationId, error: story.error, origin: origin)
                try db.run(
                    "INSERT INTO stories (\(Ledger.storyColumns)) VALUES (\(Ledger.marks(14)))", Ledger.values(record))
                // Pushes become outbox history, so the rolling budget still counts them.
                guard [.pushed, .unknown, .failed].contains(status),
                    let category = story.category.flatMap(NewsCategory.init(rawValue:))
                else { continue }
                let at = story.pushedAt ?? story.lastSeen
                let entry = OutboxEntry(
                    storyKey: key, origin: origin, category: category, format: .template, tags: category.rawValue,
                    properties: [:], createdAt: at, freshUntil: at,
                    status: status == .pushed ? .sent : status == .failed ? .failed : .unknown,
                    attempts: 1, lastAttempt: at, notificationId: story.notificationId, error: story.error)
                try db.run(
                    "INSERT INTO outbox (\(Ledger.outboxColumns)) VALUES (\(Ledger.marks(19)))", Ledger.values(entry))
            }
            for (key, at) in state.tombstones where state.stories[key] == nil {
                try db.run("INSERT INTO tombstones (key, pruned_at) VALUES (?, ?)", [.text(key), SQLValue(at)])
            }
        }
    }

    // MARK: Writing (benchmark and tests)

    /// Writes the state as the old versions did: whole, atomically, the previous file kept as `.prev`.
    public func save(path: String) throws {
        let data = try Self.encoder.encode(self)
        let temporary = "\(path).tmp-\(getpid())"
        try data.write(to: URL(fileURLWithPath: temporary))
        let fd = Glibc.open(temporary, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        if FileManager.default.fileExists(atPath: path) {
            unlink(path + ".prev")
            link(path, path + ".prev")
        }
        guard rename(temporary, path) == 0 else { throw POSIXError(.EIO) }
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        return encoder
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = Timestamp.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(text)' is not an RFC 3339 date")
            }
            return date
        }
        return decoder
    }

    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing \(path(context)).\(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
