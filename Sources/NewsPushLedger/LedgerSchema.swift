import Foundation
import NewsPushModel

/// The ledger's tables, as numbered steps: a new ledger runs every step in order, an older one
/// the steps after its recorded version, in one transaction with the version it reaches. The
/// SQL reads the same in SQLite and PostgreSQL.
enum LedgerMigrations {
    /// Step `i` brings a ledger from schema version `i` to `i + 1`.
    static let steps: [[String]] = [
        [
            "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
            """
            CREATE TABLE feeds (
                url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT, last_fetched BIGINT, last_success BIGINT,
                listed_at BIGINT, retry_after BIGINT, moved_to TEXT)
            """,
            """
            CREATE TABLE stories (
                key TEXT PRIMARY KEY, feed TEXT NOT NULL, title TEXT, link TEXT, link_key TEXT, category TEXT,
                first_seen BIGINT NOT NULL, last_seen BIGINT NOT NULL, published BIGINT, status TEXT NOT NULL,
                pushed_at BIGINT, notification_id TEXT, error TEXT, origin TEXT NOT NULL)
            """,
            "CREATE INDEX stories_link_key ON stories (link_key)",
            "CREATE INDEX stories_last_seen ON stories (last_seen)",
            "CREATE INDEX stories_pushed_at ON stories (pushed_at)",
            "CREATE TABLE feed_members (feed TEXT NOT NULL, story_key TEXT NOT NULL, PRIMARY KEY (feed, story_key))",
            "CREATE INDEX feed_members_story ON feed_members (story_key)",
            """
            CREATE TABLE outbox (
                id TEXT PRIMARY KEY, story_key TEXT NOT NULL, kind TEXT NOT NULL, origin TEXT NOT NULL,
                category TEXT NOT NULL, format TEXT NOT NULL, tags TEXT NOT NULL, properties TEXT NOT NULL,
                created_at BIGINT NOT NULL, fresh_until BIGINT NOT NULL, status TEXT NOT NULL,
                attempts INTEGER NOT NULL, last_attempt BIGINT, http_status INTEGER, notification_id TEXT, error TEXT,
                expires_after BIGINT NOT NULL, scheduled_at BIGINT)
            """,
            "CREATE INDEX outbox_status ON outbox (status)",
            "CREATE INDEX outbox_story ON outbox (story_key)",
            "CREATE INDEX outbox_last_attempt ON outbox (last_attempt)",
            "CREATE TABLE tombstones (key TEXT PRIMARY KEY, pruned_at BIGINT NOT NULL)",
        ],
        // 2: the review queue (a held entry's rule and content, for edits) and the audit trail.
        [
            "CREATE TABLE review (entry_id TEXT PRIMARY KEY, rule TEXT NOT NULL, content TEXT NOT NULL)",
            """
            CREATE TABLE audit (
                id TEXT PRIMARY KEY, at BIGINT NOT NULL, editor TEXT NOT NULL, action TEXT NOT NULL, entry_id TEXT,
                story_key TEXT, category TEXT, title TEXT, detail TEXT)
            """,
            "CREATE INDEX audit_at ON audit (at)",
        ],
        // 3: the app back-end's installation index (SPEC §9): who owns each installation, its
        // tags (one row per tag, so a topic's count is one index range), and a digest of its
        // push handle, never the handle; and the ids `POST /api/register` handed out.
        [
            """
            CREATE TABLE installations (
                id TEXT PRIMARY KEY, owner TEXT, platform TEXT NOT NULL, tags TEXT NOT NULL, language TEXT,
                handle_digest TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL, refreshed_at BIGINT NOT NULL)
            """,
            "CREATE INDEX installations_owner ON installations (owner)",
            "CREATE INDEX installations_refreshed ON installations (refreshed_at)",
            """
            CREATE TABLE installation_tags (
                tag TEXT NOT NULL, installation_id TEXT NOT NULL, PRIMARY KEY (tag, installation_id))
            """,
            "CREATE INDEX installation_tags_installation ON installation_tags (installation_id)",
            "CREATE TABLE registration_ids (id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at BIGINT NOT NULL)",
            // Installations gone from the index whose delete at the hub is still owed.
            "CREATE TABLE hub_removals (id TEXT PRIMARY KEY, since BIGINT NOT NULL)",
        ],
        // 4: secure pushes (SPEC §9): the texts a push carried only the id of, until it expires,
        // and which reader fetched each.
        [
            """
            CREATE TABLE secure_pushes (
                id BIGINT PRIMARY KEY, tags TEXT NOT NULL, texts TEXT NOT NULL, sender TEXT,
                created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL)
            """,
            "CREATE INDEX secure_pushes_expires ON secure_pushes (expires_at)",
            "CREATE INDEX secure_pushes_sender ON secure_pushes (sender, created_at)",
            "CREATE TABLE secure_reads (secure_id BIGINT NOT NULL, reader TEXT NOT NULL, PRIMARY KEY (secure_id, reader))",
        ],
        // 5: the hub and the index kept in step (SPEC §9, "A phone stays registered"): the ids
        // whose state at the hub is owed agreement with the index (a removal, or a write whose
        // answer was lost, with the installation it would have made and for whom), and the
        // digest of the template set each installation was written with (a registration that
        // changes nothing is answered from the index).
        [
            "ALTER TABLE hub_removals RENAME TO hub_owed",
            "ALTER TABLE hub_owed ADD COLUMN owner TEXT",
            "ALTER TABLE hub_owed ADD COLUMN intended TEXT",
            "CREATE INDEX hub_owed_owner ON hub_owed (owner)",
            "ALTER TABLE installations ADD COLUMN template_digest TEXT",
            "CREATE INDEX registration_ids_created ON registration_ids (created_at)",
            "CREATE INDEX registration_ids_owner ON registration_ids (owner)",
        ],
        // 6: the watcher (SPEC §10): when the hub accepted each push (its latency), and the feeds
        // leased to the watchers sharing the ledger, with the watchers alive.
        [
            "ALTER TABLE outbox ADD COLUMN accepted_at BIGINT",
            "CREATE TABLE watch_leases (feed TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at BIGINT NOT NULL)",
            "CREATE INDEX watch_leases_holder ON watch_leases (holder)",
            "CREATE TABLE watch_members (holder TEXT PRIMARY KEY, expires_at BIGINT NOT NULL)",
        ],
        // 7: each feed's WebSub subscription, shared by the watchers (its secret and callback
        // token), the server's freshness limit of each feed, kept with its validators, and how
        // often settling what is owed to the hub failed, and when to try again.
        [
            "ALTER TABLE feeds ADD COLUMN fresh_until BIGINT",
            "ALTER TABLE hub_owed ADD COLUMN tries INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE hub_owed ADD COLUMN next_try BIGINT",
            """
            CREATE TABLE websub_subscriptions (
                feed TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE, hub TEXT NOT NULL, topic TEXT NOT NULL,
                secret TEXT NOT NULL, state TEXT NOT NULL, failures INTEGER NOT NULL)
            """,
        ],
        // 8: the Basic credentials the back-end's instances found good, as keyed digests, so a
        // reader's first request at another instance or after a restart needs no bcrypt.
        [
            "CREATE TABLE remembered_credentials (digest TEXT PRIMARY KEY, reader TEXT NOT NULL, checked_at BIGINT NOT NULL)",
            "CREATE INDEX remembered_credentials_reader ON remembered_credentials (reader)",
            "CREATE INDEX remembered_credentials_checked ON remembered_credentials (checked_at)",
        ],
        // 9: reports (SPEC §11): each alert's audience when the hub accepted it and the hub's
        // outcome counts; what the apps reported, each event counted twice, in its platform's
        // total (minute -1) and in its bucket of time since the send over the platforms
        // (platform ''), so a report reads a few rows per alert; and the keyed digests that
        // count each installation once, for 7 days.
        [
            """
            CREATE TABLE alert_reports (
                alert_id TEXT PRIMARY KEY, sent_at BIGINT NOT NULL, audience BIGINT, delivered BIGINT, failed BIGINT,
                outcome_at BIGINT)
            """,
            "CREATE INDEX alert_reports_sent ON alert_reports (sent_at)",
            """
            CREATE TABLE alert_counts (
                alert_id TEXT NOT NULL, kind TEXT NOT NULL, minute INTEGER NOT NULL, platform TEXT NOT NULL,
                count BIGINT NOT NULL, PRIMARY KEY (alert_id, kind, minute, platform))
            """,
            "CREATE TABLE alert_event_keys (digest TEXT PRIMARY KEY, at BIGINT NOT NULL)",
            "CREATE INDEX alert_event_keys_at ON alert_event_keys (at)",
        ],
    ]

    /// Creates every table of a new ledger and records its version and creation time; false
    /// when another process created it first (several instances starting on an empty
    /// PostgreSQL database take turns on the migration lock, and the later ones find it made).
    @discardableResult
    static func create(_ db: any LedgerDatabase, at time: Date) throws -> Bool {
        try db.transaction {
            try db.lockForMigration()
            if try db.tableExists("meta") { return false }
            for statement in steps.joined() { try db.run(statement, []) }
            try db.run("INSERT INTO meta (name, value) VALUES ('schema_version', ?)", [.text(String(steps.count))])
            try db.run("INSERT INTO meta (name, value) VALUES ('created_at', ?)", [.text(Timestamp.format(time))])
            return true
        }
    }

    /// Brings a ledger at `version` to this newspush's version; false when it already was.
    ///
    /// Several processes may open an old ledger at once (instances of `newspush api` beside a
    /// run): the transaction first writes the version row, which makes the others wait (the
    /// row's lock in PostgreSQL, the write lock in SQLite), then reads the version again, so
    /// only the first upgrades and the rest find it done.
    static func upgrade(_ db: any LedgerDatabase, from version: Int) throws -> Bool {
        guard version < steps.count else { return false }
        return try db.transaction {
            try db.lockForMigration()
            try db.run("UPDATE meta SET value = value WHERE name = 'schema_version'", [])
            let current =
                try db.query("SELECT value FROM meta WHERE name = 'schema_version'", []).first?.int(0) ?? version
            guard current < steps.count else { return false }
            for statement in steps[current...].joined() { try db.run(statement, []) }
            try db.run("UPDATE meta SET value = ? WHERE name = 'schema_version'", [.text(String(steps.count))])
            return true
        }
    }
}
