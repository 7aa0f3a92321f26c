import Foundation
import NewsPushModel

/// What `state import` loaded.
public struct ImportCounts: Sendable, Equatable {
    /// What the source was (a SQLite ledger, a PostgreSQL ledger, a JSON export, a legacy state).
    public var kind: String
    /// Rows loaded per table.
    public var rows: [String: Int]
}

/// `state import SOURCE`: a whole ledger loaded into an empty one, in one transaction, so a
/// newsroom moves between SQLite and PostgreSQL without a flood (every story, tombstone and
/// outbox entry comes along, and the next run sends nothing old).
extension Ledger {
    /// The tables a ledger copy carries, in an order that inserts what others refer to first.
    static let copiedTables: [(name: String, columns: String)] =
        [
            ("feeds", feedColumns), ("stories", storyColumns), ("feed_members", "feed, story_key"),
            ("outbox", outboxColumns), ("tombstones", "key, pruned_at"), ("review", "entry_id, rule, content"),
            ("audit", auditColumns),
        ] + ReportTables.tables.map { ($0.name, $0.columns.joined(separator: ", ")) }

    /// Loads `source` (a SQLite ledger file, a `postgres://` ledger, a `state export` JSON
    /// document or a legacy JSON state file) into this ledger, which must be empty.
    public func load(from source: String) throws(LedgerError) -> ImportCounts {
        try requireEmpty()
        if PostgresAddress.isPostgres(source) || Self.isSQLite(source) {
            return try copy(from: try Ledger.open(configured: source, access: .read))
        }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: source)) } catch {
            throw .unreadable(path: source, reason: SystemErrors.reason(error))
        }
        if let export = try? JSONSerialization.jsonObject(with: data) as? [String: Any], export["items"] != nil,
            export["schema_version"] != nil
        {
            return try loadExport(export, source: source)
        }
        let legacy = try LegacyJSONState.load(path: source)
        try Self.wrap(path, writing: true) { try LegacyJSONState.importState(legacy, into: db) }
        return ImportCounts(kind: "legacy JSON state", rows: try counts())
    }

    /// Refuses a ledger that already holds anything: an import never merges.
    private func requireEmpty() throws(LedgerError) {
        let held = try counts().filter { $0.value > 0 }
        guard held.isEmpty else {
            let what = held.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            throw .writeFailed(
                path: path,
                reason: "it is not empty (\(what)); state import loads only into an empty ledger, nothing was changed")
        }
    }

    private func counts() throws(LedgerError) -> [String: Int] {
        try reading {
            var counts: [String: Int] = [:]
            for table in Self.copiedTables {
                counts[table.name] = try db.query("SELECT COUNT(*) FROM \(table.name)", []).first?.int(0) ?? 0
            }
            return counts
        }
    }

    /// Every row of every table of `source`, as it is (a ledger of an older schema lacks the
    /// newer tables: they stay empty).
    private func copy(from source: Ledger) throws(LedgerError) -> ImportCounts {
        if source.isNew { throw .noLedger(path: source.path) }
        let from = source.db
        try writing {
            for table in Self.copiedTables {
                guard try from.tableExists(table.name) else { continue }
                let count = table.columns.split(separator: ",").count
                for row in try from.query("SELECT \(table.columns) FROM \(table.name)", []) {
                    try db.run(
                        "INSERT INTO \(table.name) (\(table.columns)) VALUES (\(Self.marks(count)))", row.values)
                }
            }
        }
        let kind = PostgresAddress.isPostgres(source.path) ? "PostgreSQL ledger" : "SQLite ledger"
        return ImportCounts(kind: kind, rows: try counts())
    }

    /// A `state export` document: stories, feeds, the outbox, tombstones and the audit trail.
    private func loadExport(_ export: [String: Any], source: String) throws(LedgerError) -> ImportCounts {
        if let version = export["schema_version"] as? Int, version > LedgerSchema.version {
            throw .newerSchema(path: source, version: version)
        }
        let rows = ExportRows(export)
        try writing {
            for (table, values) in rows.all {
                let columns = Self.copiedTables.first { $0.name == table }?.columns ?? ""
                for row in values {
                    try db.run("INSERT INTO \(table) (\(columns)) VALUES (\(Self.marks(row.count)))", row)
                }
            }
        }
        return ImportCounts(kind: "JSON export", rows: try counts())
    }

    /// Whether `path` is a SQLite database file (by its header).
    static func isSQLite(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 16)) == Data("SQLite format 3\0".utf8)
    }
}

/// A `state export` document as ledger rows (`LedgerView.json` read back). The export leaves
/// out which feed listed a story last and a held push's kept content: those tables stay empty.
struct ExportRows {
    var all: [(String, [[SQLValue]])] = []

    init(_ export: [String: Any]) {
        func date(_ value: Any?) -> SQLValue { SQLValue((value as? String).flatMap(Timestamp.parse)) }
        func text(_ value: Any?) -> SQLValue { SQLValue(value as? String) }
        let feeds = (export["feeds"] as? [String: [String: Any]] ?? [:]).sorted { $0.key < $1.key }.map { url, feed in
            [
                .text(url), text(feed["etag"]), text(feed["last_modified"]), date(feed["last_fetched"]),
                date(feed["last_success"]), date(feed["listed_at"]), date(feed["retry_after"]), text(feed["moved_to"]),
                date(feed["fresh_until"]),
            ]
        }
        let stories = (export["items"] as? [String: [String: Any]] ?? [:]).sorted { $0.key < $1.key }.map { key, s in
            [
                .text(key), text(s["feed"]), text(s["title"]), text(s["link"]),
                SQLValue((s["link"] as? String).flatMap(StoryLink.canonical)), text(s["category"]),
                date(s["first_seen"]), date(s["last_seen"]), date(s["published"]), text(s["status"]),
                date(s["pushed_at"]), text(s["notification_id"]), text(s["error"]), text(s["origin"] ?? "run"),
            ]
        }
        let outbox = (export["outbox"] as? [[String: Any]] ?? []).map { e -> [SQLValue] in
            let properties =
                (try? JSONSerialization.data(withJSONObject: e["properties"] ?? [:], options: .sortedKeys))
                .map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            return [
                text(e["id"]), text(e["story_key"]), text(e["kind"]), text(e["origin"]), text(e["category"]),
                text(e["format"]), text(e["tags"]), .text(properties), date(e["created_at"]), date(e["fresh_until"]),
                text(e["status"]), SQLValue(e["attempts"] as? Int ?? 0), date(e["last_attempt"]),
                SQLValue(e["http_status"] as? Int), text(e["notification_id"]), text(e["error"]),
                .integer(Int64(e["expires_after"] as? Int ?? 3600)), date(e["scheduled_at"]), date(e["accepted_at"]),
            ]
        }
        let tombstones = (export["tombstones"] as? [String: String] ?? [:]).sorted { $0.key < $1.key }.map { key, at in
            [SQLValue.text(key), SQLValue(Timestamp.parse(at))]
        }
        let audit = (export["audit"] as? [[String: Any]] ?? []).map { a -> [SQLValue] in
            [
                text(a["id"]), date(a["at"]), text(a["editor"]), text(a["action"]), text(a["entry_id"]),
                text(a["story_key"]), text(a["category"]), text(a["title"]), text(a["detail"]),
            ]
        }
        all =
            [("feeds", feeds), ("stories", stories), ("outbox", outbox), ("tombstones", tombstones), ("audit", audit)]
            + ReportTables.rows(export)
    }
}
