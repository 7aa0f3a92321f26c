import Foundation
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// Runs blocking work off the event loops: the front end's threads (`BlockingThreads`).
public protocol BlockingRunner: Sendable {
    /// `work`'s value, computed on one of the runner's threads.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T
    /// Runs `work` on one of the runner's threads, not waiting for it.
    func submit(_ work: @escaping @Sendable () -> Void)
}

/// The app back-end's device sessions: each request gets one over the ledger it works on
/// (SQLite's index: the one connection every thread shares; PostgreSQL: a connection lent for
/// the request by the process's one pool, `LedgerConnections`, held while its session works),
/// on one of the front end's threads, with a hub client kept between requests so its
/// connections to the hub stay open.
public final class SessionPool: @unchecked Sendable {
    private let context: SessionContext
    private let planner: RegistrationPlanner
    private let threads: any BlockingRunner
    /// Where a request's ledger comes from.
    private let source: Source
    /// Guards `hubs`.
    private let lock = NSLock()
    /// Hub clients no request is using.
    private var hubs: [NotificationHubClient]

    /// The sessions of `context`'s back-end; `first` was opened (and checked) at its start: on
    /// PostgreSQL only its hub client is kept (its connection ends with it).
    public init(context: SessionContext, first: DeviceSession, threads: any BlockingRunner) throws(SessionError) {
        self.context = context
        self.threads = threads
        planner = first.planner
        hubs = [first.hub]
        let connections: LedgerConnections?
        do {
            connections = try LedgerConnections.make(
                configured: context.config.statePath, connections: context.config.api.pool)
        } catch {
            throw .ledger(error)
        }
        source = connections.map(Source.pool) ?? .shared(LentLedger(first.ledger))
    }

    /// SQLite's index, which every session shares, or PostgreSQL's pool (at most `api.pool`
    /// connections).
    private enum Source {
        case shared(LentLedger)
        case pool(LedgerConnections)
    }

    /// PostgreSQL's pool; nil on SQLite.
    var connections: LedgerConnections? {
        if case .pool(let connections) = source { return connections }
        return nil
    }

    /// Counts an app's report on SQLite's shared connection from the request's task, its write
    /// in the next group commit with no thread waiting for it (`Ledger.countAlertEvent(…schedule:)`,
    /// the commit run on the front end's threads); nil on PostgreSQL.
    func countOnSharedLedger(
        id: String, installation: String, owner: String?, keys: AlertEventKeys,
        bucket: Int, at time: Date
    ) async throws(LedgerError) -> [AlertEventKind]? {
        guard case .shared(let shared) = source else { return nil }
        let threads = threads
        return try await shared.ledger.countAlertEvent(
            id: id, installation: installation, owner: owner, keys: keys, bucket: bucket, at: time,
            schedule: { threads.submit($0) })
    }

    /// Whether every session shares one connection (SQLite), so no request waits for a
    /// connection of its own.
    public var sharesOneConnection: Bool { connections == nil }

    /// `body`'s value, computed with a session on one of the front end's threads.
    public func with<T: Sendable>(_ body: @escaping @Sendable (DeviceSession) throws -> T) async throws -> T {
        switch source {
        case .shared(let shared):
            return try await threads.run { try self.using(shared.ledger, body) }
        case .pool(let connections):
            do {
                return try await connections.withLedger { ledger in
                    let lent = LentLedger(ledger)
                    return try await self.threads.run { try self.using(lent.ledger, body) }
                }
            } catch let error as LedgerError {
                throw SessionError.ledger(error)
            }
        }
    }

    /// Keeps PostgreSQL's connections until cancelled (returns at once on SQLite).
    public func run() async { await connections?.run() }

    private func using<T>(_ ledger: Ledger, _ body: (DeviceSession) throws -> T) throws -> T {
        let hub = try takeHub()
        defer { putHub(hub) }
        return try body(DeviceSession(context: context, ledger: ledger, hub: hub, planner: planner))
    }

    private func takeHub() throws(SessionError) -> NotificationHubClient {
        if let idle = lock.withLock({ hubs.popLast() }) { return idle }
        return try context.hubClient()
    }

    private func putHub(_ hub: NotificationHubClient) {
        lock.withLock { hubs.append(hub) }
    }
}

/// A ledger handed to the thread that works on it (one thread at a time: SQLite's shared one
/// takes turns inside, a lent connection serves one request).
private final class LentLedger: @unchecked Sendable {
    let ledger: Ledger
    init(_ ledger: Ledger) { self.ledger = ledger }
}
