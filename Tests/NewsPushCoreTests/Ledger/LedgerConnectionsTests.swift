import Foundation
import NewsPushModel
import NewsPushTesting
import Testing

@testable import NewsPushLedger

/// The app back-end's one pool of PostgreSQL connections (postgres-nio's): every wait has an
/// end, and a connection a request may have left in a bad state is never lent again.
@Suite("The ledger's connections")
struct LedgerConnectionsTests {
    // A statement the server never answers (one written to a connection a restart has just
    // closed, a frozen host) costs the question's patience and no more: the request goes on to
    // a session. (The bounds leave room for a test process busy with every other suite: the
    // code before waited for ever.)
    @Test(.timeLimit(.minutes(3)))
    func aServerThatNeverAnswersCostsThePatienceAndNoMore() async throws {
        // Takes connections and never says a word.
        let silent = try RawTCPServer { _ in }
        defer { silent.stop() }
        let pool = try #require(
            try LedgerConnections.make(
                configured: "postgres://newspush@127.0.0.1:\(silent.port)/ledger", connections: 1))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            let started = ContinuousClock.now
            do {
                _ = try await pool.installationAndOwed(id: "i1")
                Issue.record("a server that never answers gave an answer")
            } catch {
                #expect(
                    "\(error)".contains(
                        "no answer from 127.0.0.1:\(silent.port) within \(LedgerConnections.patience) s"))
            }
            #expect(ContinuousClock.now - started < .seconds(LedgerConnections.patience + 27))
            // A request waiting for a connection gives up after its patience, with nothing done.
            let waiting = ContinuousClock.now
            do {
                _ = try await pool.withLedger(patience: 1) { _ in Issue.record("a connection was lent") }
                Issue.record("a connection to a server that never answers was lent")
            } catch {
                #expect("\(error)".contains("no connection to 127.0.0.1:\(silent.port) within 1 s"), "\(error)")
            }
            #expect(ContinuousClock.now - waiting < .seconds(30))
            group.cancelAll()
        }
    }

    // A request that fails on a statement while holding an installation's key: its connection
    // goes, and the key with it (session-level advisory locks live on the connection), so the
    // next request on the pool's one connection takes the same key at once.
    @Test(
        .enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"), .timeLimit(.minutes(3)))
    func aConnectionOnWhichAStatementFailedIsNeverLentAgain() async throws {
        let state = try await LedgerEngine.postgres.location(try TemporaryFolder())
        _ = try Ledger.open(configured: state, access: .write)
        let pool = try #require(try LedgerConnections.make(configured: state, connections: 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            await #expect(throws: LedgerError.self) {
                try await pool.withLedger { ledger in
                    try ledger.withKeys([.id("i1")]) {
                        try Ledger.wrap(ledger.path, writing: true) { try ledger.db.run("SELECT no_such_column", []) }
                    }
                }
            }
            let took = try await pool.withLedger { ledger in
                try ledger.withKeys([.id("i1")], patience: 1) { true }
            }
            #expect(took, "the failed request's key was let go with its connection")
            group.cancelAll()
        }
    }

    // A statement a connection runs again is prepared on it, once, with the types its values
    // are bound as, and answers as the unnamed statement did: numbers as numbers (postgres-nio's
    // older interface labels a prepared statement's binary answers as text, which read every
    // number as null), a null as a null, a server error sorted as before. A statement run once
    // stays unnamed; a closed connection's statements are let go.
    @Test(
        .enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"), .timeLimit(.minutes(3)))
    func aStatementRunAgainIsPreparedOnceAndAnswersTheSame() async throws {
        let state = try await LedgerEngine.postgres.location(try TemporaryFolder())
        var postgres: PostgresAddress?
        if case .postgres(let address) = try Ledger.address(state) { postgres = address }
        let db = try PostgresDatabase.connect(try #require(postgres))
        try db.run("CREATE TABLE t (k TEXT PRIMARY KEY, n BIGINT, r DOUBLE PRECISION, minute INTEGER, note TEXT)", [])
        let insert = "INSERT INTO t (k, n, r, minute, note) VALUES (?, ?, ?, ?, ?) RETURNING k, n, r, minute, note"
        for k in ["a", "b", "c"] {
            let row = try #require(
                try db.query(insert, [.text(k), .integer(1 << 40), .real(0.5), .integer(-1), .null]).first)
            #expect(row.values == [.text(k), .integer(1 << 40), .real(0.5), .integer(-1), .null], "\(k)")
        }
        let read = "SELECT n, r, note FROM t WHERE k = ? AND n > ?"
        for _ in 0..<3 {
            #expect(
                try db.query(read, [.text("b"), .integer(0)]).map(\.values) == [[.integer(1 << 40), .real(0.5), .null]])
        }
        _ = try db.query("SELECT count(*) FROM t WHERE minute = ?", [.integer(-1)])
        let prepared = try db.query(
            "SELECT statement, parameter_types::text FROM pg_prepared_statements ORDER BY statement", [])
        #expect(
            prepared.map(\.values) == [
                [
                    .text(
                        "INSERT INTO t (k, n, r, minute, note) VALUES ($1::text, $2::int8, $3::float8, $4::int8, $5) "
                            + "RETURNING k, n, r, minute, note"),
                    .text("{text,bigint,\"double precision\",bigint,text}"),
                ],
                [.text("SELECT n, r, note FROM t WHERE k = $1::text AND n > $2::int8"), .text("{text,bigint}")],
            ])
        #expect(db.keepsPreparedStatements)
        // A prepared statement's error is sorted as an unnamed one's is.
        do {
            _ = try db.query(insert, [.text("a"), .integer(1), .real(1), .integer(1), .null])
            Issue.record("a second row of key a was inserted")
        } catch {
            #expect(error.kind == .constraint, "\(error)")
        }
        db.close()
        try await Task.sleep(for: .milliseconds(200))
        #expect(!db.keepsPreparedStatements, "a closed connection's statements are let go")
    }

    // An app's report counted on the pool, from the request's task (no session): once per
    // installation, alert and kind; only for the installation's owner; an open brings its
    // receipt along; the counts as a session's count leaves them. Prepared on the connection
    // at its second run, as a session's statements are.
    @Test(
        .enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"), .timeLimit(.minutes(3)))
    func anEventCountedOnThePoolIsCountedOnceAndPrepared() async throws {
        let state = try await LedgerEngine.postgres.location(try TemporaryFolder())
        let ledger = try Ledger.open(configured: state, access: .write)
        let now = Date()
        let record = InstallationRecord(
            id: "i1", owner: "ann", platform: "apns", tags: ["World"], language: nil, handleDigest: "h1",
            created: now, refreshed: now)
        try ledger.recordInstallation(record, previous: nil, replacing: [], verify: false)
        try ledger.noteAlertSent(id: "alert-1", acceptedAt: now, audience: 1)
        let pool = try #require(try LedgerConnections.make(configured: state, connections: 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            // The connection opened first, within a session's patience (the question's own, 3 s,
            // is for a server already connected; a test process busy with every suite may take longer).
            try await pool.withLedger { _ in }
            func count(_ keys: [(kind: AlertEventKind, digest: String)], owner: String? = "ann") async throws
                -> [AlertEventKind]
            {
                try await pool.countAlertEvent(
                    id: "alert-1", installation: "i1", owner: owner, keys: keys, bucket: 2, at: now)
            }
            #expect(try await count([(.received, "r1")]) == [.received])
            #expect(try await count([(.received, "r1")]).isEmpty, "a receipt counted twice")
            #expect(try await count([(.opened, "o1"), (.received, "r1")], owner: "bob").isEmpty, "not bob's")
            #expect(try await count([(.opened, "o1"), (.received, "r1")], owner: nil).isEmpty, "not anonymous")
            #expect(try await count([(.opened, "o1"), (.received, "r1")]) == [.opened])
            let (counts, prepared) = try await pool.withLedger { ledger in
                (
                    try ledger.db.query(
                        "SELECT kind, minute, platform, count FROM alert_counts ORDER BY kind, minute", []
                    ).map(\.values),
                    try ledger.db.query("SELECT statement FROM pg_prepared_statements", []).compactMap { $0.text(0) }
                )
            }
            #expect(
                counts == [
                    [.text("opened"), .integer(-1), .text("apns"), .integer(1)],
                    [.text("opened"), .integer(2), .text(""), .integer(1)],
                    [.text("received"), .integer(-1), .text("apns"), .integer(1)],
                    [.text("received"), .integer(2), .text(""), .integer(1)],
                ])
            #expect(prepared.contains { $0.contains("INSERT INTO alert_event_keys") }, "\(prepared)")
            group.cancelAll()
        }
    }
}
