import Foundation
import NewsPushCore
import NewsPushDesk
import NewsPushLedger
import NewsPushModel
import NewsPushSessions
import Synchronization

/// The app back-end's work: the device sessions (one ledger connection each, on threads of the
/// back-end's own so the event loops never wait for the ledger or the hub), who is calling, and
/// how often. Nothing here is needed by another instance: the ledger holds the index, and a
/// request's limits and credentials cache are this instance's own.
public struct ApiBackend: Sendable {
    /// The newsroom's config, logger and clock.
    public var context: SessionContext
    let sessions: SessionPool
    let credentials: ApiCredentials
    let limits: RateLimits

    /// The back-end of `context`'s newsroom; opens (and checks) the ledger once, so a ledger
    /// that cannot be used stops `newspush api` before it listens.
    public init(context: SessionContext) throws(SessionError) {
        self.context = context
        sessions = SessionPool(context: context, first: try DeviceSession.open(context: context, verify: true))
        credentials = ApiCredentials(settings: context.config.api, logger: context.logger)
        limits = RateLimits()
    }

    /// Runs `body` with a device session on one of the back-end's threads.
    func withSession<T: Sendable>(_ body: @escaping @Sendable (DeviceSession) throws -> T) async throws -> T {
        let sessions = sessions
        return try await Self.threads.run { () throws -> T in
            let session = try sessions.take()
            do {
                let value = try body(session.session)
                sessions.put(session)
                return value
            } catch {
                // A ledger error may have left the connection unusable (a server that went
                // away): the session is dropped and the next request opens a new one.
                if case .ledger? = error as? SessionError {} else { sessions.put(session) }
                throw error
            }
        }
    }

    /// Blocking work off the event loops (bcrypt, a key set's file or URL).
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threads.run(body)
    }

    /// The back-end's threads: a request holds one for its ledger transaction and its hub write.
    /// 32: more hub writes in flight let the hub read several per wake-up (`newspush-bench api`:
    /// 0.53–0.56× the direct rate against 0.52–0.54× with 16; 4 and 64 were slower).
    private static let threads = BlockingThreads(count: 32)

    /// Settles what is owed to the hub (a host killed between hub and index, a hub that was
    /// down, an answer that was lost), once a minute until cancelled.
    func sweep() async {
        while !Task.isCancelled {
            do {
                let (finished, failed) = try await withSession { try $0.finishOwed(grace: 30) }
                if finished > 0 { context.logger.info("api: \(finished) installations settled at the hub") }
                if !failed.isEmpty {
                    context.logger.warning("api: \(failed.count) installations still owed at the hub: \(failed[0])")
                }
            } catch {
                context.logger.warning("api: owed removals not checked: \(error)")
            }
            try? await Task.sleep(for: .seconds(60))
        }
    }
}

/// Device sessions kept open between requests, one per thread that uses them.
final class SessionPool: Sendable {
    /// Carries a session between threads: only one thread holds it at a time.
    final class Box: @unchecked Sendable {
        let session: DeviceSession
        init(_ session: DeviceSession) { self.session = session }
    }

    private let context: SessionContext
    private let idle: Mutex<[Box]>
    /// The first session's ledger when its threads share it (SQLite): every session uses it.
    private let shared: Box?

    init(context: SessionContext, first: DeviceSession) {
        self.context = context
        idle = Mutex([Box(first)])
        shared = first.ledger.isShared ? Box(first) : nil
    }

    func take() throws(SessionError) -> Box {
        if let box = idle.withLock({ $0.popLast() }) { return box }
        if let shared { return Box(try DeviceSession(context: context, ledger: shared.session.ledger)) }
        return Box(try DeviceSession.open(context: context, verify: false))
    }

    func put(_ box: Box) {
        idle.withLock { $0.append(box) }
    }
}
