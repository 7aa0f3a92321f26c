import Foundation
import Logging
import NIOSSL
import NewsPushModel
import PostgresNIO

/// The one question of every app start, asked without a thread of its own: is this
/// registration the one the index holds? On PostgreSQL a pool of postgres-nio's own
/// (`PostgresClient`, asynchronous) answers it on the request's event loop, so the unchanged
/// refreshes of an app-open surge pay no hand-off between a request's thread and a connection's
/// event loop per statement (the synchronous sessions' cost: `newspush-bench surge`). SQLite's
/// index answers in place (`Ledger.installationAndOwed`).
public final class IndexReader: Sendable {
    private let client: PostgresClient
    private let address: PostgresAddress
    private static let silent = Logger(label: "newspush.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A reader of the PostgreSQL ledger `configured` names, with at most `connections` of its
    /// own; nil for a SQLite ledger.
    public static func make(configured: String, connections: Int) throws(LedgerError) -> IndexReader? {
        guard case .postgres(let address) = try Ledger.address(configured) else { return nil }
        let password: String?
        do {
            password = try PostgresPassword.find(for: address, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw LedgerError.unreadable(path: address.description, reason: error.message)
        }
        var configuration = PostgresClient.Configuration(
            host: address.host, port: address.port, username: address.user, password: password,
            database: address.database, tls: tls(address))
        configuration.options.maximumConnections = max(1, connections)
        configuration.options.connectTimeout = .milliseconds(Int64(address.connectTimeout * 1000))
        configuration.options.tlsServerName = address.tls == .verifyFull ? address.host : nil
        return IndexReader(
            client: PostgresClient(configuration: configuration, backgroundLogger: silent), address: address)
    }

    private init(client: PostgresClient, address: PostgresAddress) {
        self.client = client
        self.address = address
    }

    /// Keeps the pool's connections until the task running it is cancelled.
    public func run() async { await client.run() }

    /// How long the question may go unanswered (`PostgresDeadline`: a statement written to a
    /// connection the server has just closed, a restart, is never answered). Short: a caller
    /// not answered here asks a session, which waits for a restarted server on its own terms.
    public static let patience: Int64 = 3

    /// Installation `id` and whether the hub owes it anything (`Ledger.installationAndOwed`);
    /// `LedgerError.unreadable` when the server does not answer within `patience`.
    public func installationAndOwed(id: String) async throws(LedgerError) -> (InstallationRecord, owed: Bool)? {
        var binds = PostgresBindings(capacity: 1)
        binds.append(id)
        let query = PostgresQuery(
            unsafeSQL: PostgresDatabase.numberPlaceholders(Ledger.installationAndOwedQuery), binds: binds)
        let (client, address) = (client, address)
        let late = DatabaseError(
            kind: .connection, message: "no answer from \(address.hostAndPort) within \(Self.patience) s")
        do {
            return try await PostgresDeadline.first(
                within: Self.patience, on: PostgresClient.defaultEventLoopGroup.any(), late: { late }
            ) { () async throws -> (InstallationRecord, owed: Bool)? in
                for try await row in try await client.query(query, logger: Self.silent) {
                    let values = SQLRow(values: row.map(PostgresDatabase.value))
                    return Ledger.installation(values).map { ($0, (values.int(9) ?? 0) > 0) }
                }
                return nil
            }
        } catch {
            let sorted = PostgresErrors.sorted(error, address: address, connecting: false)
            throw LedgerError.unreadable(path: address.description, reason: sorted.message)
        }
    }

    /// TLS as `sslmode` says (`PostgresAddress.tlsSettings`, as the sessions' connections).
    private static func tls(_ address: PostgresAddress) -> PostgresClient.Configuration.TLS {
        guard let (settings, preferred) = address.tlsSettings else { return .disable }
        return preferred ? .prefer(settings) : .require(settings)
    }
}
