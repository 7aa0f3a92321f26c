import Foundation
import NewsPushTesting
import Testing

/// The two ledger engines the ledger's tests run on: SQLite (a file beside the config) and
/// PostgreSQL (a new database on the tests' server for each test).
enum LedgerBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The config's `state:` line for one test: empty for SQLite (the default file), a new
    /// database's URL for PostgreSQL. A test case on PostgreSQL is skipped, with the reason,
    /// where its server binaries are not installed.
    func stateLine() async throws -> String {
        switch self {
        case .sqlite:
            return ""
        case .postgres:
            if let missing = LocalPostgres.missing { try Test.cancel("\(missing)") }
            return "state: \"\(try await LocalPostgres.shared().createDatabase())\""
        }
    }
}
