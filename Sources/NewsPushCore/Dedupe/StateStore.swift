import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the state file remembers about one story.
public struct StoryRecord: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        /// Seen and deliberately not pushed (baseline, stale, unclassified…).
        case seen
        /// A send was about to start; if a run finds this, the process died mid-send and the
        /// outcome is unknown, so the story is never sent again.
        case sending
        /// The hub answered 2xx.
        case pushed
        /// The hub refused it for good.
        case failed
        /// Not accepted by the hub; the next run tries again while the story is fresh.
        case pending
        /// Sent, but no clear answer came back; never sent again.
        case unknown
    }

    public var status: Status
    public var feed: String
    public var title: String?
    public var link: String?
    public var category: String?
    public var firstSeen: Date
    public var lastSeen: Date
    public var published: Date?
    public var pushedAt: Date?
    public var notificationId: String?
    public var error: String?

    enum CodingKeys: String, CodingKey {
        case status, feed, title, link, category, published, error
        case firstSeen = "first_seen"
        case lastSeen = "last_seen"
        case pushedAt = "pushed_at"
        case notificationId = "notification_id"
    }
}

/// What the state file remembers about one feed.
public struct FeedRecord: Codable, Sendable, Equatable {
    public var validators: ConditionalGetValidators?
    public var lastFetched: Date?
    /// Not to be fetched before this time (the server's Retry-After).
    public var retryAfter: Date?
    /// Where the feed said it moved for good (301/308), to tell the operator.
    public var movedTo: String?

    enum CodingKeys: String, CodingKey {
        case validators
        case lastFetched = "last_fetched"
        case retryAfter = "retry_after"
        case movedTo = "moved_to"
    }
}

/// The whole state file (SPEC §6).
public struct NewsPushState: Codable, Sendable {
    public static let currentVersion = 1
    public var version = NewsPushState.currentVersion
    public var feeds: [String: FeedRecord] = [:]
    public var stories: [String: StoryRecord] = [:]
    /// Set when the file was created by a manual publish before any scheduled run: the first run
    /// still records a baseline instead of pushing everything it sees.
    public var baselinePending: Bool?
    /// Keys of pruned stories and when they were pruned: a story that reappears in its feed after
    /// pruning is still old news, never pushed again.
    public var tombstones: [String: Date] = [:]

    public init() {}

    enum CodingKeys: String, CodingKey {
        case version, feeds, tombstones
        case stories = "items"
        case baselinePending = "baseline_pending"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        feeds = try c.decode([String: FeedRecord].self, forKey: .feeds)
        stories = try c.decode([String: StoryRecord].self, forKey: .stories)
        baselinePending = try c.decodeIfPresent(Bool.self, forKey: .baselinePending)
        tombstones = try c.decodeIfPresent([String: Date].self, forKey: .tombstones) ?? [:]
    }

    /// Tombstones are kept this many times the retention period.
    public static let tombstoneFactor = 12.0

    /// Drops stories not seen in their feed for longer than `retention` (leaving a tombstone)
    /// and tombstones older than `tombstoneFactor` × `retention`. Returns how many stories went.
    @discardableResult
    public mutating func prune(retention: Double, now: Date) -> Int {
        let expired = stories.filter { now.timeIntervalSince($0.value.lastSeen) > retention && $0.value.status != .sending }
        for key in expired.keys {
            stories[key] = nil
            tombstones[key] = now
        }
        tombstones = tombstones.filter { now.timeIntervalSince($0.value) <= retention * Self.tombstoneFactor }
        return expired.count
    }
}

/// One line of the state journal: a change of a story's push status, appended (and synced)
/// before and after each send so that the snapshot need not be rewritten per push.
public struct JournalEntry: Codable, Sendable, Equatable {
    public var key: String
    public var status: StoryRecord.Status
    public var at: Date
    public var notificationId: String?
    public var error: String?

    public init(key: String, status: StoryRecord.Status, at: Date, notificationId: String? = nil, error: String? = nil) {
        self.key = key
        self.status = status
        self.at = at
        self.notificationId = notificationId
        self.error = error
    }

    enum CodingKeys: String, CodingKey {
        case key, status, at, error
        case notificationId = "notification_id"
    }

    /// Applies the change to `state`.
    public func apply(to state: inout NewsPushState) {
        guard var record = state.stories[key] else { return }
        record.status = status
        switch status {
        case .sending: record.pushedAt = at
        case .pending: record.pushedAt = nil
        default: break
        }
        if let notificationId { record.notificationId = notificationId }
        record.error = error
        state.stories[key] = record
    }
}

/// Why the state file cannot be used. Every case stops the run before anything is sent.
public enum StateError: Error, Sendable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case corrupt(path: String, reason: String)
    case newerVersion(path: String, version: Int)
    case locked(path: String)
    case writeFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            return "state file \(path) cannot be read: \(reason); nothing was sent"
        case .corrupt(let path, let reason):
            return "state file \(path) is corrupt (\(reason)); nothing was sent and the file was left untouched. Restore \(path).prev or inspect it with 'newspush state check'"
        case .newerVersion(let path, let version):
            return "state file \(path) has version \(version), newer than this newspush understands (\(NewsPushState.currentVersion)); upgrade newspush. Nothing was sent"
        case .locked(let path):
            return "another newspush run holds the lock on \(path).lock; this run did nothing"
        case .writeFailed(let path, let reason):
            return "cannot write state file \(path): \(reason)"
        }
    }
}

/// Reads and writes the state file: atomic replacement (temporary file, fsync, rename, fsync of
/// the folder) with the previous version kept as `<file>.prev`, an exclusive lock file held for a
/// whole run, and a journal (`<file>.journal`) of push status changes appended and synced around
/// each batch of sends, folded into the snapshot by the next `save`.
public final class StateStore {
    public let path: String
    private var lockDescriptor: Int32 = -1

    public init(path: String) {
        self.path = path
    }

    deinit { unlock() }

    /// Takes the run lock (`<file>.lock`) without waiting.
    public func lock() throws(StateError) {
        let lockPath = path + ".lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .writeFailed(path: lockPath, reason: String(cString: strerror(errno))) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            throw .locked(path: path)
        }
        lockDescriptor = fd
    }

    public func unlock() {
        if lockDescriptor >= 0 {
            flock(lockDescriptor, LOCK_UN)
            close(lockDescriptor)
            lockDescriptor = -1
        }
    }

    public var journalPath: String { path + ".journal" }

    /// The state, or nil when there is no state file yet (first run). Journal entries left by a
    /// run that did not finish are applied on top of the snapshot.
    public func load() throws(StateError) -> NewsPushState? {
        guard var state = try loadSnapshot() else { return nil }
        for entry in try readJournal() { entry.apply(to: &state) }
        return state
    }

    /// Appends entries to the journal and syncs them to disk before returning.
    public func appendJournal(_ entries: [JournalEntry]) throws(StateError) {
        guard !entries.isEmpty else { return }
        var data = Data()
        let encoder = Self.encoder
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for entry in entries {
            guard let line = try? encoder.encode(entry) else { continue }
            data.append(line)
            data.append(0x0A)
        }
        let fd = open(journalPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .writeFailed(path: journalPath, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        guard Self.writeAll(fd, data), fdatasync(fd) == 0 else {
            throw .writeFailed(path: journalPath, reason: String(cString: strerror(errno)))
        }
    }

    private func readJournal() throws(StateError) -> [JournalEntry] {
        guard let data = FileManager.default.contents(atPath: journalPath), !data.isEmpty else { return [] }
        let lines = data.split(separator: 0x0A, omittingEmptySubsequences: true)
        var entries: [JournalEntry] = []
        let decoder = Self.decoder
        for (index, line) in lines.enumerated() {
            if let entry = try? decoder.decode(JournalEntry.self, from: Data(line)) {
                entries.append(entry)
            } else if index == lines.count - 1 && data.last != 0x0A {
                // A line cut short by a crash mid-write: its send had not started.
                break
            } else {
                throw .corrupt(path: journalPath, reason: "line \(index + 1) is not a journal entry")
            }
        }
        return entries
    }

    private static func writeAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written <= 0 { return false }
                offset += written
            }
            return true
        }
    }

    private func loadSnapshot() throws(StateError) -> NewsPushState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadable(path: path, reason: ConfigLoader.reason(error))
        }
        if data.isEmpty { throw .corrupt(path: path, reason: "the file is empty") }
        // Read the version first so a newer format is reported as such, not as corruption.
        struct VersionProbe: Decodable { var version: Int? }
        let decoder = Self.decoder
        guard let probe = try? decoder.decode(VersionProbe.self, from: data) else {
            throw .corrupt(path: path, reason: "not valid JSON")
        }
        guard let version = probe.version else { throw .corrupt(path: path, reason: "no version field") }
        if version > NewsPushState.currentVersion { throw .newerVersion(path: path, version: version) }
        do {
            return try decoder.decode(NewsPushState.self, from: data)
        } catch {
            throw .corrupt(path: path, reason: Self.describe(error))
        }
    }

    /// Replaces the state file atomically, keeping the previous one as `<file>.prev`.
    public func save(_ state: NewsPushState) throws(StateError) {
        let data: Data
        do {
            data = try Self.encoder.encode(state)
        } catch {
            throw .writeFailed(path: path, reason: "cannot encode: \(error)")
        }
        let folder = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        let temporary = "\(path).tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .writeFailed(path: temporary, reason: String(cString: strerror(errno))) }
        let ok = Self.writeAll(fd, data) && fsync(fd) == 0
        close(fd)
        guard ok else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .writeFailed(path: temporary, reason: reason)
        }
        // Keep the current file as .prev (a hard link: no copy, no window without a file).
        if FileManager.default.fileExists(atPath: path) {
            unlink(path + ".prev")
            link(path, path + ".prev")
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .writeFailed(path: path, reason: reason)
        }
        let dirFD = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            fsync(dirFD)
            close(dirFD)
        }
        // The snapshot now holds everything the journal said.
        unlink(journalPath)
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(FeedDates.format(date))
        }
        return encoder
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = FeedDates.parseISO8601(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not an RFC 3339 date")
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
