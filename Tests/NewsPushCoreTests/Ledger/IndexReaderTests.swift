import Foundation
import NewsPushTesting
import Testing

@testable import NewsPushLedger

/// The app back-end's reader of the index (PostgreSQL) has an end: a statement the server never
/// answers (one written to a connection a restart has just closed, a frozen host) costs the
/// reader's patience and no more, and the request goes on to a session.
@Suite("The index reader's patience")
struct IndexReaderTests {
    @Test(.timeLimit(.minutes(1)))
    func aServerThatNeverAnswersCostsThePatienceAndNoMore() async throws {
        // Takes connections and never says a word.
        let silent = try RawTCPServer { _ in }
        defer { silent.stop() }
        let reader = try #require(
            try IndexReader.make(configured: "postgres://newspush@127.0.0.1:\(silent.port)/ledger", connections: 1))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await reader.run() }
            let started = ContinuousClock.now
            do {
                _ = try await reader.installationAndOwed(id: "i1")
                Issue.record("a server that never answers gave an answer")
            } catch {
                #expect("\(error)".contains("no answer from 127.0.0.1:\(silent.port) within \(IndexReader.patience) s"))
            }
            let waited = ContinuousClock.now - started
            #expect(waited < .seconds(IndexReader.patience + 2), "\(waited)")
            group.cancelAll()
        }
    }
}
