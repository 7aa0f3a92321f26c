import Foundation
import NewsPushTesting
import Testing

/// The two ledger engines the ledger's own tests run on: a SQLite file, or a new database on the
/// tests' PostgreSQL server (a test case skipped, with the reason, where its binaries are absent).
enum LedgerEngine: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// Where this test's ledger is (`state:`).
    func location(_ folder: TemporaryFolder) async throws -> String {
        switch self {
        case .sqlite:
            return folder.file("ledger.db")
        case .postgres:
            if let missing = LocalPostgres.missing { try Test.cancel("\(missing)") }
            return try await LocalPostgres.shared().createDatabase()
        }
    }
}
