import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The statements the ledger runs, whatever the engine: SQLite for one host, PostgreSQL for a
/// ledger shared by several. The SQL in `Ledger` is written to read the same in both (plain
/// types, `ON CONFLICT` upserts, no engine-specific functions); placeholders are `?`.
protocol LedgerDatabase: AnyObject {
    @discardableResult
    func run(_ sql: String, _ arguments: [SQLValue]) throws(SQLiteError) -> Int
    func query(_ sql: String, _ arguments: [SQLValue]) throws(SQLiteError) -> [SQLRow]
    func transaction<T>(_ body: () throws -> T) throws -> T
}

extension SQLiteDatabase: LedgerDatabase {}

/// Where a configured `state:` path puts the ledger, and the JSON state file of earlier
/// versions it replaces: `x.json` (or `x.db` with `x.json` beside it) becomes `x.db`.
public struct LedgerLocation: Sendable, Equatable {
    public var databasePath: String
    public var legacyJSONPath: String

    public init(configured path: String) {
        let stem = path.hasSuffix(".json") || path.hasSuffix(".db") ? String(path[..<path.lastIndex(of: ".")!]) : path
        databasePath = path.hasSuffix(".json") ? stem + ".db" : path
        legacyJSONPath = stem + ".json"
    }
}

/// How a command uses the ledger: a run or publish writes (under the run lock); a dry run and
/// `state show` only read, and never create or change a file.
public enum LedgerAccess: Sendable {
    case read
    case write
}

/// The delivery ledger (SPEC §6): stories, feeds, the outbox of pushes and tombstones, in a
/// SQLite database written in transactions (WAL, synchronous writes). A run reads and writes
/// only what it touches.
public final class Ledger {
    public static let schemaVersion = 1
    /// The database file (what messages name).
    public let path: String
    /// No ledger existed before this run (and no JSON state was migrated): a first run.
    public let isNew: Bool
    /// The JSON state file that was migrated into this ledger when it was opened, if any.
    public let migratedFrom: String?
    let db: any LedgerDatabase
    private let writable: Bool

    private init(path: String, db: any LedgerDatabase, isNew: Bool, migratedFrom: String?, writable: Bool) {
        self.path = path
        self.db = db
        self.isNew = isNew
        self.migratedFrom = migratedFrom
        self.writable = writable
    }

    // MARK: Opening

    /// Opens the ledger for `configured` (the config's `state:` path). Writing creates it when
    /// missing and migrates a JSON state file of earlier versions (kept as `<name>.json.migrated`);
    /// reading never changes a file (a missing or JSON ledger is read into memory).
    public static func open(configured: String, access: LedgerAccess) throws(LedgerError) -> Ledger {
        let location = LedgerLocation(configured: configured)
        let path = location.databasePath
        let files = FileManager.default
        if files.fileExists(atPath: path) {
            return try openExisting(path: path, access: access)
        }
        let legacy = files.fileExists(atPath: location.legacyJSONPath) ? try LegacyJSONState.load(path: location.legacyJSONPath) : nil
        switch access {
        case .read:
            let db = try wrap(path, writing: false) { try SQLiteDatabase(path: ":memory:", mode: .create) }
            try wrap(path, writing: true) {
                try createSchema(db)
                if let legacy { try LegacyJSONState.importState(legacy, into: db) }
            }
            return Ledger(path: path, db: db, isNew: legacy == nil, migratedFrom: nil, writable: false)
        case .write:
            try createFile(path: path, legacy: legacy)
            if legacy != nil {
                let migrated = location.legacyJSONPath + ".migrated"
                guard rename(location.legacyJSONPath, migrated) == 0 else {
                    throw .writeFailed(path: migrated, reason: String(cString: strerror(errno)))
                }
                unlink(location.legacyJSONPath + ".journal")
                unlink(location.legacyJSONPath + ".prev")
            }
            let ledger = try openExisting(path: path, access: .write)
            return Ledger(path: path, db: ledger.db, isNew: legacy == nil,
                          migratedFrom: legacy == nil ? nil : location.legacyJSONPath, writable: true)
        }
    }

    private static func openExisting(path: String, access: LedgerAccess) throws(LedgerError) -> Ledger {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        if size == 0 { throw .corrupt(path: path, reason: "the file is empty") }
        let db = try wrap(path, writing: false) {
            try SQLiteDatabase(path: path, mode: access == .write ? .readWrite : .readOnly)
        }
        // Read before anything is written: a file that is not a ledger stays untouched.
        let version: Int
        do {
            let rows = try db.query("SELECT value FROM meta WHERE name = 'schema_version'", [])
            guard let text = rows.first?.text(0), let number = Int(text) else {
                throw LedgerError.corrupt(path: path, reason: "no schema version")
            }
            version = number
        } catch let error as SQLiteError {
            if error.kind == .corrupt || error.message.contains("no such table") {
                throw .corrupt(path: path, reason: error.kind == .corrupt ? "not a SQLite database" : "not a newspush ledger (\(error.message))")
            }
            if error.kind == .diskFull { throw .diskFull(path: path) }
            throw .unreadable(path: path, reason: error.message)
        } catch let error as LedgerError {
            throw error
        } catch {
            throw .unreadable(path: path, reason: "\(error)")
        }
        if version > schemaVersion { throw .newerSchema(path: path, version: version) }
        if access == .write {
            try wrap(path, writing: true) {
                try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
                // Later schema versions upgrade here, in a transaction, from `version`.
            }
        }
        return Ledger(path: path, db: db, isNew: false, migratedFrom: nil, writable: access == .write)
    }

    /// Creates the ledger file whole, or not at all: built under a temporary name, then renamed.
    private static func createFile(path: String, legacy: LegacyJSONState?) throws(LedgerError) {
        let temporary = "\(path).tmp-\(getpid())"
        unlink(temporary)
        do {
            let db = try SQLiteDatabase(path: temporary, mode: .create)
            try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            try createSchema(db)
            if let legacy { try LegacyJSONState.importState(legacy, into: db) }
        } catch let error as SQLiteError {
            unlink(temporary)
            throw LedgerError.from(error, path: path, writing: true)
        } catch {
            unlink(temporary)
            throw .writeFailed(path: path, reason: "\(error)")
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .writeFailed(path: path, reason: reason)
        }
        let folder = (path as NSString).deletingLastPathComponent
        let fd = Glibc.open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }

    static let schema = """
        CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE feeds (
            url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT, last_fetched BIGINT, last_success BIGINT,
            listed_at BIGINT, retry_after BIGINT, moved_to TEXT);
        CREATE TABLE stories (
            key TEXT PRIMARY KEY, feed TEXT NOT NULL, title TEXT, link TEXT, link_key TEXT, category TEXT,
            first_seen BIGINT NOT NULL, last_seen BIGINT NOT NULL, published BIGINT, status TEXT NOT NULL,
            pushed_at BIGINT, notification_id TEXT, error TEXT, origin TEXT NOT NULL);
        CREATE INDEX stories_link_key ON stories (link_key);
        CREATE INDEX stories_last_seen ON stories (last_seen);
        CREATE INDEX stories_pushed_at ON stories (pushed_at);
        CREATE TABLE feed_members (feed TEXT NOT NULL, story_key TEXT NOT NULL, PRIMARY KEY (feed, story_key));
        CREATE INDEX feed_members_story ON feed_members (story_key);
        CREATE TABLE outbox (
            id TEXT PRIMARY KEY, story_key TEXT NOT NULL, kind TEXT NOT NULL, origin TEXT NOT NULL,
            category TEXT NOT NULL, format TEXT NOT NULL, tags TEXT NOT NULL, properties TEXT NOT NULL,
            created_at BIGINT NOT NULL, fresh_until BIGINT NOT NULL, status TEXT NOT NULL,
            attempts INTEGER NOT NULL, last_attempt BIGINT, http_status INTEGER, notification_id TEXT, error TEXT,
            expires_after BIGINT NOT NULL, scheduled_at BIGINT);
        CREATE INDEX outbox_status ON outbox (status);
        CREATE INDEX outbox_story ON outbox (story_key);
        CREATE INDEX outbox_last_attempt ON outbox (last_attempt);
        CREATE TABLE tombstones (key TEXT PRIMARY KEY, pruned_at BIGINT NOT NULL);
        """

    static func createSchema(_ db: SQLiteDatabase) throws {
        try db.transaction {
            try db.execute(schema)
            try db.run("INSERT INTO meta (name, value) VALUES ('schema_version', ?)", [.text(String(schemaVersion))])
            try db.run("INSERT INTO meta (name, value) VALUES ('created_at', ?)", [.text(FeedDates.format(Date()))])
        }
    }

    private static func wrap<T>(_ path: String, writing: Bool, _ body: () throws -> T) throws(LedgerError) -> T {
        do { return try body() } catch let error as SQLiteError {
            throw LedgerError.from(error, path: path, writing: writing)
        } catch let error as LedgerError {
            throw error
        } catch {
            throw writing ? .writeFailed(path: path, reason: "\(error)") : .unreadable(path: path, reason: "\(error)")
        }
    }

    func reading<T>(_ body: () throws -> T) throws(LedgerError) -> T { try Self.wrap(path, writing: false, body) }

    func writing<T>(_ body: () throws -> T) throws(LedgerError) -> T {
        guard writable else { throw .writeFailed(path: path, reason: "opened read-only") }
        return try Self.wrap(path, writing: true) { try db.transaction(body) }
    }

    // MARK: Reading what a run needs

    /// The records of these feeds (feeds never fetched have none).
    public func feeds(_ urls: [String]) throws(LedgerError) -> [String: FeedRecord] {
        try reading {
            let records = try rows("SELECT \(Self.feedColumns) FROM feeds WHERE url IN", urls).map(Self.feed)
            return Dictionary(records.map { ($0.url, $0) }, uniquingKeysWith: { a, _ in a })
        }
    }

    /// Stories by key.
    public func stories(keys: some Collection<String>) throws(LedgerError) -> [String: StoryRecord] {
        try reading {
            let records = try rows("SELECT \(Self.storyColumns) FROM stories WHERE key IN", keys).map(Self.story)
            return Dictionary(records.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        }
    }

    /// Stories by canonical link (the first recorded one per link).
    public func stories(linkKeys: some Collection<String>) throws(LedgerError) -> [String: StoryRecord] {
        try reading {
            var records: [String: StoryRecord] = [:]
            for record in try rows("SELECT \(Self.storyColumns) FROM stories WHERE link_key IN", linkKeys).map(Self.story)
                .sorted(by: { $0.firstSeen < $1.firstSeen }) {
                if let link = record.linkKey, records[link] == nil { records[link] = record }
            }
            return records
        }
    }

    /// The keys among `keys` that were pruned (old news even though no record is left).
    public func tombstoned(_ keys: some Collection<String>) throws(LedgerError) -> Set<String> {
        try reading { Set(try rows("SELECT key FROM tombstones WHERE key IN", keys).compactMap { $0.text(0) }) }
    }

    /// The rows of `sql`, which ends in `IN`, for every value of `values`: 500 values a query.
    private func rows(_ sql: String, _ values: some Collection<String>) throws -> [SQLRow] {
        var rows: [SQLRow] = []
        for chunk in Array(values).chunked(500) {
            rows += try db.query("\(sql) (\(Self.marks(chunk.count)))", chunk.map(SQLValue.init))
        }
        return rows
    }

    /// Stories pushed (or about to be) since `since`: a new item with a near-identical title is
    /// the same story.
    public func recentPushes(since: Date) throws(LedgerError) -> [StoryRecord] {
        try reading {
            try db.query("""
                SELECT \(Self.storyColumns) FROM stories
                WHERE status IN ('pushed', 'unknown', 'sending', 'pending', 'scheduled') AND COALESCE(pushed_at, first_seen) >= ?
                """, [SQLValue(since)]).map(Self.story)
        }
    }

    /// Pushes per category that went out (or may have) since `since`, for the rolling budget.
    public func pushesSent(since: Date) throws(LedgerError) -> [NewsCategory: Int] {
        try reading {
            var used: [NewsCategory: Int] = [:]
            for row in try db.query("""
                SELECT category, COUNT(*) FROM outbox
                WHERE (status IN ('sent', 'unknown', 'sending') AND scheduled_at IS NULL AND last_attempt >= ?)
                   OR (status IN ('sent', 'scheduled') AND scheduled_at >= ?)
                GROUP BY category
                """, [SQLValue(since), SQLValue(since)]) {
                if let category = row.text(0).flatMap(NewsCategory.init(rawValue:)) { used[category] = row.int(1) ?? 0 }
            }
            return used
        }
    }

    /// Outbox entries with these statuses, oldest first.
    public func outbox(_ statuses: [OutboxEntry.Status] = [.pending]) throws(LedgerError) -> [OutboxEntry] {
        try reading {
            try db.query("SELECT \(Self.outboxColumns) FROM outbox WHERE status IN (\(Self.marks(statuses.count))) ORDER BY created_at, id",
                         statuses.map { .text($0.rawValue) }).compactMap(Self.outboxEntry)
        }
    }

    // MARK: Writing

    /// Entries left `sending` by a run that died mid-send: their outcome is unknown and they are
    /// never sent again. Returns them, settled.
    @discardableResult
    public func settleInterruptedSends(at time: Date) throws(LedgerError) -> [OutboxEntry] {
        let interrupted = try outbox([.sending])
        guard !interrupted.isEmpty else { return [] }
        let reason = "the run sending it was interrupted; outcome unknown, not re-sent"
        try record(interrupted.map { OutboxOutcome(entryID: $0.id, storyKey: $0.storyKey, status: .unknown, at: time, error: reason) })
        return interrupted
    }

    /// Scheduled sends whose time has passed were delivered by the hub: they count as sent
    /// from then on (pushed at their scheduled time).
    public func settleScheduledSends(at time: Date) throws(LedgerError) {
        try writing {
            let due = try db.query("SELECT id, story_key, scheduled_at FROM outbox WHERE status = 'scheduled' AND scheduled_at <= ?", [SQLValue(time)])
            for row in due {
                guard let id = row.text(0), let key = row.text(1) else { continue }
                try db.run("UPDATE outbox SET status = 'sent', last_attempt = scheduled_at WHERE id = ?", [.text(id)])
                try db.run("UPDATE stories SET status = 'pushed', pushed_at = ? WHERE key = ? AND status = 'scheduled'",
                           [SQLValue(row.date(2)), .text(key)])
            }
        }
    }

    /// Writes what a run learnt and planned, in one transaction.
    public func record(_ run: RunRecord) throws(LedgerError) {
        try writing {
            for feed in run.feeds { try upsert(feed) }
            for story in run.newStories {
                try db.run("""
                    INSERT INTO stories (\(Self.storyColumns)) VALUES (\(Self.marks(14)))
                    ON CONFLICT (key) DO NOTHING
                    """, Self.values(story))
                // A pruned story that is listed again is known again (as old news).
                try db.run("DELETE FROM tombstones WHERE key = ?", [.text(story.key)])
            }
            for (feed, keys) in run.listings {
                try db.run("DELETE FROM feed_members WHERE feed = ?", [.text(feed)])
                for key in Set(keys) {
                    try db.run("INSERT INTO feed_members (feed, story_key) VALUES (?, ?) ON CONFLICT (feed, story_key) DO NOTHING",
                               [.text(feed), .text(key)])
                }
                for chunk in Array(Set(keys)).chunked(500) {
                    try db.run("UPDATE stories SET last_seen = ? WHERE key IN (\(Self.marks(chunk.count)))",
                               [SQLValue(run.at)] + chunk.map(SQLValue.init))
                }
            }
            for entry in run.outbox { try insert(entry) }
            for id in run.expired {
                try setOutbox(OutboxOutcome(entryID: id, storyKey: "", status: .expired, at: run.at,
                                            error: "no longer fresh (policy.max_age) before the hub took it"))
            }
        }
    }

    /// Adds one outbox entry (a manual publish) and its story when new.
    public func enqueue(_ entry: OutboxEntry, story: StoryRecord) throws(LedgerError) {
        try writing {
            try db.run("INSERT INTO stories (\(Self.storyColumns)) VALUES (\(Self.marks(14))) ON CONFLICT (key) DO NOTHING", Self.values(story))
            try insert(entry)
        }
    }

    /// The intent: these entries are about to be sent. Synced before any request goes out; if
    /// this cannot be written, nothing is sent.
    public func markSending(_ entries: [OutboxEntry], at time: Date) throws(LedgerError) {
        guard !entries.isEmpty else { return }
        try writing {
            for entry in entries {
                try db.run("UPDATE outbox SET status = 'sending', attempts = attempts + 1, last_attempt = ? WHERE id = ?",
                           [SQLValue(time), .text(entry.id)])
                guard entry.kind == .push else { continue }
                try db.run("UPDATE stories SET status = 'sending', pushed_at = ? WHERE key = ?", [SQLValue(time), .text(entry.storyKey)])
            }
        }
    }

    /// What the hub answered for each entry (or `pending` for entries put back unsent).
    public func record(_ outcomes: [OutboxOutcome]) throws(LedgerError) {
        guard !outcomes.isEmpty else { return }
        try writing {
            for outcome in outcomes { try setOutbox(outcome) }
        }
    }

    private func setOutbox(_ outcome: OutboxOutcome) throws {
        try db.run("UPDATE outbox SET status = ?, http_status = ?, notification_id = COALESCE(?, notification_id), error = ? WHERE id = ?",
                   [.text(outcome.status.rawValue), SQLValue(outcome.httpStatus), SQLValue(outcome.notificationId),
                    SQLValue(outcome.error), .text(outcome.entryID)])
        // A story's status follows its first push only: repeats and corrections of a pushed story
        // are pushes of their own and leave it pushed.
        let storyStatus = outcome.status.storyStatus.rawValue
        try db.run("""
            UPDATE stories SET status = ?, notification_id = COALESCE(?, notification_id), error = ?,
                pushed_at = CASE WHEN ? IN ('pending', 'expired') THEN NULL ELSE pushed_at END
            WHERE key = (SELECT story_key FROM outbox WHERE id = ? AND kind = 'push')
            """, [.text(storyStatus), SQLValue(outcome.notificationId), SQLValue(outcome.error), .text(storyStatus), .text(outcome.entryID)])
    }

    private func insert(_ entry: OutboxEntry) throws {
        try db.run("INSERT INTO outbox (\(Self.outboxColumns)) VALUES (\(Self.marks(18)))", Self.values(entry))
        guard entry.kind == .push else { return }
        try db.run("UPDATE stories SET status = ?, error = NULL WHERE key = ?", [.text(entry.status.storyStatus.rawValue), .text(entry.storyKey)])
    }

    private func upsert(_ feed: FeedRecord) throws {
        try db.run("""
            INSERT INTO feeds (\(Self.feedColumns)) VALUES (\(Self.marks(8)))
            ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
                last_fetched = excluded.last_fetched, last_success = excluded.last_success, listed_at = excluded.listed_at,
                retry_after = excluded.retry_after, moved_to = excluded.moved_to
            """, [.text(feed.url), SQLValue(feed.validators?.etag), SQLValue(feed.validators?.lastModified), SQLValue(feed.lastFetched),
                  SQLValue(feed.lastSuccess), SQLValue(feed.listedAt), SQLValue(feed.retryAfter), SQLValue(feed.movedTo)])
    }

    /// Records that the scheduled send with this notification id was cancelled at the hub;
    /// false when the ledger holds no such scheduled send.
    public func cancelScheduled(notificationId: String, at time: Date) throws(LedgerError) -> Bool {
        let entries = try reading {
            try db.query("SELECT id, story_key FROM outbox WHERE notification_id = ? AND status = 'scheduled'", [.text(notificationId)])
        }
        guard let row = entries.first, let id = row.text(0), let key = row.text(1) else { return false }
        try record([OutboxOutcome(entryID: id, storyKey: key, status: .cancelled, at: time, notificationId: notificationId,
                                  error: "scheduled send cancelled (newspush hub cancel)")])
        return true
    }

    /// The latest pushes the hub took (sent or scheduled), newest first, for `hub status --last N`.
    public func latestNotifications(_ count: Int) throws(LedgerError) -> [OutboxEntry] {
        try reading {
            try db.query("""
                SELECT \(Self.outboxColumns) FROM outbox
                WHERE status IN ('sent', 'scheduled', 'cancelled') AND notification_id IS NOT NULL
                ORDER BY COALESCE(last_attempt, created_at) DESC, id LIMIT ?
                """, [.integer(Int64(count))]).compactMap(Self.outboxEntry)
        }
    }

    // MARK: Maintenance

    /// Drops stories that no feed has listed for longer than `retention` (leaving a tombstone, so
    /// a story that comes back is still old news) and tombstones older than 12 × `retention`.
    /// Stories with a push waiting or under way stay. Returns how many stories went.
    @discardableResult
    public func prune(retention: Double, now: Date) throws(LedgerError) -> Int {
        let cutoff = SQLValue(now.addingTimeInterval(-retention))
        return try writing {
            let keys = try db.query("""
                SELECT key FROM stories s
                WHERE s.last_seen < ? AND s.status NOT IN ('pending', 'sending', 'scheduled')
                  AND NOT EXISTS (SELECT 1 FROM feed_members m JOIN feeds f ON f.url = m.feed
                                  WHERE m.story_key = s.key AND f.listed_at >= ?)
                """, [cutoff, cutoff]).compactMap { $0.text(0) }
            for key in keys {
                try db.run("INSERT INTO tombstones (key, pruned_at) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET pruned_at = excluded.pruned_at",
                           [.text(key), SQLValue(now)])
                try db.run("DELETE FROM feed_members WHERE story_key = ?", [.text(key)])
                try db.run("DELETE FROM outbox WHERE story_key = ? AND status NOT IN ('sent', 'unknown')", [.text(key)])
                try db.run("DELETE FROM stories WHERE key = ?", [.text(key)])
            }
            // Sent pushes are kept for the budget and history until they are older than the retention.
            try db.run("DELETE FROM outbox WHERE status IN ('sent', 'unknown') AND last_attempt < ? AND story_key NOT IN (SELECT key FROM stories)", [cutoff])
            try db.run("DELETE FROM tombstones WHERE pruned_at < ?", [SQLValue(now.addingTimeInterval(-retention * Self.tombstoneFactor))])
            return keys.count
        }
    }

    /// Tombstones are kept this many times the retention period.
    public static let tombstoneFactor = 12.0

    /// Forgets a story (record, tombstone, waiting pushes) so a later run treats it as new, and
    /// clears the validators of the feeds that list it so the next run reads them in full even
    /// if they would answer 304. Returns false when the ledger knows no such key.
    public func forget(_ key: String) throws(LedgerError) -> Bool {
        try writing {
            let feeds = try db.query("SELECT feed FROM feed_members WHERE story_key = ? UNION SELECT feed FROM stories WHERE key = ?",
                                     [.text(key), .text(key)]).compactMap { $0.text(0) }
            let known = try db.query("SELECT key FROM stories WHERE key = ? UNION SELECT key FROM tombstones WHERE key = ?",
                                     [.text(key), .text(key)])
            guard !known.isEmpty else { return false }
            for feed in feeds {
                try db.run("UPDATE feeds SET etag = NULL, last_modified = NULL WHERE url = ?", [.text(feed)])
            }
            try db.run("DELETE FROM feed_members WHERE story_key = ?", [.text(key)])
            try db.run("DELETE FROM outbox WHERE story_key = ? AND status IN ('pending', 'expired', 'failed')", [.text(key)])
            try db.run("DELETE FROM stories WHERE key = ?", [.text(key)])
            try db.run("DELETE FROM tombstones WHERE key = ?", [.text(key)])
            return true
        }
    }

    // MARK: Whole views (state show, export, check)

    /// Every story with the time it was last known to be in a feed (its own last sighting, or
    /// the last time a feed listing it was confirmed), newest first.
    public func allStories() throws(LedgerError) -> [(record: StoryRecord, lastListed: Date)] {
        try reading {
            try db.query("""
                SELECT \(Self.storyColumns),
                       (SELECT MAX(f.listed_at) FROM feed_members m JOIN feeds f ON f.url = m.feed WHERE m.story_key = stories.key)
                FROM stories ORDER BY first_seen DESC, key
                """, []).map { row in
                let record = Self.story(row)
                return (record, max(record.lastSeen, row.date(14) ?? record.lastSeen))
            }
        }
    }

    public func allFeeds() throws(LedgerError) -> [FeedRecord] {
        try reading { try db.query("SELECT \(Self.feedColumns) FROM feeds ORDER BY url", []).map(Self.feed) }
    }

    public func tombstones() throws(LedgerError) -> [String: Date] {
        try reading {
            var result: [String: Date] = [:]
            for row in try db.query("SELECT key, pruned_at FROM tombstones", []) {
                if let key = row.text(0), let at = row.date(1) { result[key] = at }
            }
            return result
        }
    }

    /// The latest push of each story that has one.
    public func latestPushes() throws(LedgerError) -> [String: OutboxEntry] {
        let entries = try outbox(OutboxEntry.Status.allCases)
        var latest: [String: OutboxEntry] = [:]
        for entry in entries { latest[entry.storyKey] = entry }
        return latest
    }

    /// SQLite's own check of the file, then consistency checks a healthy ledger passes.
    public func problems() throws(LedgerError) -> [String] {
        try reading {
            var problems: [String] = []
            if let sqlite = db as? SQLiteDatabase {
                let result = try sqlite.query("PRAGMA integrity_check", []).compactMap { $0.text(0) }
                if result != ["ok"] { problems += result.map { "integrity: \($0)" } }
            }
            for row in try db.query("SELECT key FROM stories WHERE status = 'pushed' AND pushed_at IS NULL", []) {
                problems.append("\(row.text(0) ?? "?"): pushed without a push time")
            }
            for row in try db.query("SELECT key FROM stories WHERE last_seen < first_seen", []) {
                problems.append("\(row.text(0) ?? "?"): last seen before first seen")
            }
            for row in try db.query("SELECT s.key FROM stories s JOIN tombstones t ON t.key = s.key", []) {
                problems.append("\(row.text(0) ?? "?"): both a story and a tombstone")
            }
            for row in try db.query("SELECT o.id, o.story_key FROM outbox o WHERE o.status = 'pending' AND NOT EXISTS (SELECT 1 FROM stories s WHERE s.key = o.story_key)", []) {
                problems.append("outbox entry \(row.text(0) ?? "?") waits for a story that is not in the ledger (\(row.text(1) ?? "?"))")
            }
            return problems
        }
    }

    // MARK: Rows

    static let feedColumns = "url, etag, last_modified, last_fetched, last_success, listed_at, retry_after, moved_to"
    static let storyColumns = "key, feed, title, link, link_key, category, first_seen, last_seen, published, status, pushed_at, notification_id, error, origin"
    static let outboxColumns = "id, story_key, kind, origin, category, format, tags, properties, created_at, fresh_until, status, attempts, last_attempt, http_status, notification_id, error, expires_after, scheduled_at"

    static func marks(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ", ") }

    static func feed(_ row: SQLRow) -> FeedRecord {
        let etag = row.text(1), modified = row.text(2)
        return FeedRecord(url: row.text(0) ?? "", validators: etag == nil && modified == nil ? nil : ConditionalGetValidators(etag: etag, lastModified: modified),
                          lastFetched: row.date(3), lastSuccess: row.date(4), listedAt: row.date(5), retryAfter: row.date(6), movedTo: row.text(7))
    }

    static func story(_ row: SQLRow) -> StoryRecord {
        StoryRecord(key: row.text(0) ?? "", feed: row.text(1) ?? "", title: row.text(2), link: row.text(3), category: row.text(5),
                    firstSeen: row.date(6) ?? Date(timeIntervalSince1970: 0), lastSeen: row.date(7) ?? Date(timeIntervalSince1970: 0),
                    published: row.date(8), status: row.text(9).flatMap(StoryRecord.Status.init(rawValue:)) ?? .seen,
                    pushedAt: row.date(10), notificationId: row.text(11), error: row.text(12),
                    origin: row.text(13).flatMap(StoryRecord.Origin.init(rawValue:)) ?? .run)
    }

    /// The values of `storyColumns`.
    static func values(_ s: StoryRecord) -> [SQLValue] {
        [.text(s.key), .text(s.feed), SQLValue(s.title), SQLValue(s.link), SQLValue(s.linkKey), SQLValue(s.category),
         SQLValue(s.firstSeen), SQLValue(s.lastSeen), SQLValue(s.published), .text(s.status.rawValue), SQLValue(s.pushedAt),
         SQLValue(s.notificationId), SQLValue(s.error), .text(s.origin.rawValue)]
    }

    static func outboxEntry(_ row: SQLRow) -> OutboxEntry? {
        guard let id = row.text(0), let storyKey = row.text(1), let category = row.text(4).flatMap(NewsCategory.init(rawValue:)),
              let format = row.text(5).flatMap(PushFormat.init(rawValue:)), let created = row.date(8), let fresh = row.date(9),
              let status = row.text(10).flatMap(OutboxEntry.Status.init(rawValue:)) else { return nil }
        let properties = row.text(7).flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) } ?? [:]
        return OutboxEntry(id: id, storyKey: storyKey, kind: row.text(2).flatMap(OutboxEntry.Kind.init(rawValue:)) ?? .push,
                           origin: row.text(3).flatMap(StoryRecord.Origin.init(rawValue:)) ?? .run, category: category, format: format,
                           tags: row.text(6) ?? "", properties: properties, createdAt: created, freshUntil: fresh, status: status,
                           attempts: row.int(11) ?? 0, lastAttempt: row.date(12), httpStatus: row.int(13), notificationId: row.text(14),
                           error: row.text(15), expiresAfter: Double(row.int(16) ?? 3600), scheduledAt: row.date(17))
    }

    static func values(_ e: OutboxEntry) -> [SQLValue] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let properties = (try? encoder.encode(e.properties)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return [.text(e.id), .text(e.storyKey), .text(e.kind.rawValue), .text(e.origin.rawValue), .text(e.category.rawValue),
                .text(e.format.rawValue), .text(e.tags), .text(properties), SQLValue(e.createdAt), SQLValue(e.freshUntil),
                .text(e.status.rawValue), .integer(Int64(e.attempts)), SQLValue(e.lastAttempt), SQLValue(e.httpStatus),
                SQLValue(e.notificationId), SQLValue(e.error), .integer(Int64(e.expiresAfter.rounded())), SQLValue(e.scheduledAt)]
    }
}

extension Array {
    /// The array in consecutive pieces of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
