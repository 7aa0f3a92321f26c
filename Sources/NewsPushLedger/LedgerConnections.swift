import Foundation
import NIOSSL
import NewsPushModel
import PostgresNIO
import Synchronization

/// The app back-end's connections to a PostgreSQL ledger: one pool, postgres-nio's own
/// (`PostgresClient`), from which every request borrows. A request's ledger work (a session's
/// transactions and key locks, `withLedger`) holds a lent connection until it is done, and the
/// one question of every app start (`installationAndOwed`) is asked on the request's event
/// loop, so an app-open surge pays no hand-off to a thread per statement. The pool opens
/// connections as they are needed up to its limit, replaces those the server closed (a
/// restart) and makes a request wait while the server is away. SQLite's ledger needs none:
/// every thread shares its one connection.
public final class LedgerConnections: Sendable {
    private let client: PostgresClient
    private let address: PostgresAddress

    /// The pool of the PostgreSQL ledger `configured` names, at most `connections` open at
    /// once; nil for a SQLite ledger.
    public static func make(configured: String, connections: Int) throws(LedgerError) -> LedgerConnections? {
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
        return LedgerConnections(
            client: PostgresClient(configuration: configuration, backgroundLogger: PostgresDatabase.silent),
            address: address)
    }

    private init(client: PostgresClient, address: PostgresAddress) {
        self.client = client
        self.address = address
    }

    /// Keeps the pool's connections until the task running it is cancelled.
    public func run() async { await client.run() }

    /// How long a request waits for a connection (a restart of PostgreSQL takes seconds)
    /// before it is told the ledger cannot be used (503 to a phone).
    public static let connectionPatience: Int64 = 20

    /// `body` with the ledger over a connection lent for it, which `body` holds until it
    /// returns (its transactions and key locks are on it). A connection on which a statement
    /// failed is closed after, so the pool opens another rather than lending it again (it may
    /// be lost, or hold a key or a transaction). A request waits for a connection at most
    /// `patience` seconds; once lent, its work is never cut short.
    public func withLedger<T: Sendable>(
        patience: Int64 = connectionPatience, _ body: @escaping @Sendable (Ledger) async throws -> T
    ) async throws -> T {
        let (client, address) = (client, address)
        let turn = LeaseTurn()
        return try await withThrowingTaskGroup(of: LeaseTurn.Next<T>.self) { group in
            group.addTask {
                // A connection the server closed a moment ago (a restart) may be lent before the
                // pool hears of it: a request that found it lost at its first statement had done
                // nothing yet (a session reads the ledger before it writes to the hub) and is
                // lent another, once.
                if let value = try await Self.lend(client, address, turn, body, lastTry: false) {
                    return .value(value)
                }
                // The last try answers a value or throws, never nil.
                guard let value = try await Self.lend(client, address, turn, body, lastTry: true) else {
                    throw CancellationError()
                }
                return .value(value)
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(patience))
                return .late
            }
            while let next = try await group.next() {
                switch next {
                case .value(let value):
                    group.cancelAll()
                    return value
                case .late where turn.giveUp():
                    group.cancelAll()
                    throw LedgerError.unreadable(
                        path: address.description,
                        reason: "no connection to \(address.hostAndPort) within \(patience) s")
                case .late: continue
                }
            }
            throw CancellationError()  // unreachable: the lease's task ends with a value or an error
        }
    }

    /// One lending of a connection to `body`: its value, or nil when the connection was found
    /// lost at the first statement and this is not the `lastTry` (nothing was done on it).
    private static func lend<T: Sendable>(
        _ client: PostgresClient, _ address: PostgresAddress, _ turn: LeaseTurn,
        _ body: @escaping @Sendable (Ledger) async throws -> T, lastTry: Bool
    ) async throws -> T? {
        try await client.withConnection { connection in
            // Lent after the request gave up waiting: it was told the ledger cannot be used.
            guard turn.take() else { throw CancellationError() }
            let database = PostgresDatabase.lent(connection, address: address)
            let result: Result<T, any Error>
            do { result = .success(try await body(Ledger.lent(database))) } catch { result = .failure(error) }
            // Closed before it goes back, so the pool never lends it again.
            if database.failed { try? await connection.close() }
            if !lastTry, database.lostBeforeAnyAnswer { return nil }
            return try result.get()
        }
    }

    /// How long a statement asked on a request's event loop (`installationAndOwed`,
    /// `countAlertEvent`) may go unanswered (`PostgresDeadline`: a statement written to a
    /// connection the server has just closed, a restart, is never answered). Short: a caller
    /// not answered here asks a session, which waits for a restarted server on its own terms.
    public static let patience: Int64 = 3

    /// Installation `id` and whether the hub owes it anything (`Ledger.installationAndOwed`);
    /// `LedgerError.unreadable` when the server does not answer within `patience`.
    public func installationAndOwed(id: String) async throws(LedgerError) -> (InstallationRecord, owed: Bool)? {
        let row = try await rows(Ledger.installationAndOwedQuery, [.text(id)]).first
        return row.flatMap { values in Ledger.installation(values).map { ($0, (values.int(9) ?? 0) > 0) } }
    }

    /// `Ledger.countAlertEvent` in one statement on a connection of the pool, asked from the
    /// request's task: an app's report costs no session and no thread. Safe to ask again of a
    /// session when it fails: an event already counted is never counted twice.
    public func countAlertEvent(
        id: String, installation: String, owner: String?, keys: AlertEventKeys,
        bucket: Int, at time: Date
    ) async throws(LedgerError) -> [AlertEventKind] {
        let statement = Ledger.alertEventStatement(
            id: id, installation: installation, owner: owner, keys: keys, bucket: bucket, at: time,
            commitWithoutWaiting: PostgresDatabase.commitWithoutWaitingInSelect)
        return Ledger.countedKinds(try await rows(statement.sql, statement.arguments))
    }

    /// The rows of one statement on a connection of the pool (prepared on it at its second
    /// run, `PreparedStatements`), or `LedgerError.unreadable` when the server does not answer
    /// within `patience`.
    private func rows(_ sql: String, _ arguments: [SQLValue]) async throws(LedgerError) -> [SQLRow] {
        let (client, address) = (client, address)
        do {
            return try await PostgresDeadline.first(
                within: Self.patience, on: PostgresClient.defaultEventLoopGroup.any(),
                late: {
                    DatabaseError(
                        kind: .connection, message: "no answer from \(address.hostAndPort) within \(Self.patience) s")
                }
            ) { () async throws -> [SQLRow] in
                try await client.withConnection { connection in
                    try await PreparedStatements.rows(on: connection, sql, arguments).get()
                }
            }
        } catch {
            let sorted = PostgresErrors.sorted(error, address: address, connecting: false)
            throw LedgerError.unreadable(path: address.description, reason: sorted.message)
        }
    }

    /// TLS as `sslmode` says (`PostgresAddress.tlsSettings`, as the commands' connections).
    private static func tls(_ address: PostgresAddress) -> PostgresClient.Configuration.TLS {
        guard let (settings, preferred) = address.tlsSettings else { return .disable }
        return preferred ? .prefer(settings) : .require(settings)
    }
}

/// Who wins between a request's wait for a connection and its patience: the first of `take`
/// (the connection is lent: the work goes on) and `giveUp` (the request is told the ledger
/// cannot be used: a connection lent after is handed back unused).
private final class LeaseTurn: Sendable {
    enum Next<T: Sendable>: Sendable {
        case value(T)
        case late
    }

    private let state = Mutex<Bool?>(nil)

    /// True when the connection may be used (the request has not given up).
    func take() -> Bool { settle(true) }

    /// True when the request gives up (no connection was lent yet).
    func giveUp() -> Bool { settle(false) }

    private func settle(_ lent: Bool) -> Bool {
        state.withLock { decided in
            if decided == nil { decided = lent }
            return decided == lent
        }
    }
}
