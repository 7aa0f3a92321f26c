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
}
