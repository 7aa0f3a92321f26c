import Foundation
import NewsPushCore
import NewsPushHTTP
import NewsPushModel
import NewsPushSessions
import NotificationHubs
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
    /// The instance's turns at the hub (`api.hub_writes`): on PostgreSQL at most three
    /// quarters of `api.pool`, so writes waiting for the hub never hold every connection the
    /// quick answers need.
    let gate: HubWriteGate
    /// The unchanged question, asked without a session where the engine allows.
    let unchanged: UnchangedRegistrations
    /// The apps' reports of alerts, counted without a session where the engine allows.
    let events: AlertEventCounter
    /// `GET /healthz`'s cached check.
    let health = HealthCheck()
    /// The caps on new installations.
    let quotas: RegistrationQuotas
    /// Whether a forget erased rows since the sweeper last emptied the engine's copies of them.
    let erased = ErasureNote()
    /// When the alerts the apps report on went (`POST /api/alerts/{id}/events`).
    let sendTimes = AlertSendTimes()

    /// The back-end of `context`'s newsroom; opens (and checks) the ledger once, so a ledger
    /// that cannot be used stops `newspush api` before it listens.
    public init(context: SessionContext) throws(SessionError) {
        self.context = context
        let first = try DeviceSession.open(context: context, verify: true)
        try first.checkPlainNames()
        let api = context.config.api
        sessions = try SessionPool(context: context, first: first, threads: BackEndThreads())
        unchanged = UnchangedRegistrations(context: context, sessions: sessions)
        events = AlertEventCounter(context: context, sessions: sessions)
        // PostgreSQL: at most three quarters of the pool's connections hold a turn at the hub
        // at once, so writes waiting for the hub never hold every connection the quick answers need.
        gate = HubWriteGate(
            writes: sessions.sharesOneConnection ? api.hubWrites : min(api.hubWrites, max(1, api.pool * 3 / 4)),
            patience: DeviceSession.hubPatience)
        credentials = ApiCredentials(
            settings: context.config.api, logger: context.logger,
            shared: LedgerCredentialMemory(sessions: sessions, digests: first.credentialDigests, logger: context.logger)
        )
        limits = RateLimits()
        quotas = RegistrationQuotas(settings: api)
    }

    /// Runs `body` with a device session on one of the back-end's threads.
    func withSession<T: Sendable>(_ body: @escaping @Sendable (DeviceSession) throws -> T) async throws -> T {
        try await sessions.with(body)
    }

    /// A registration (SPEC §9): answered from the index when it changes nothing; else the
    /// write waits for its turn at the hub first, and only then takes a session.
    func register(_ request: DeviceRegistration, caller: Caller, reservedFor: String? = nil) async throws
        -> RegistrationOutcome
    {
        switch await unchanged.answer(request, caller: caller) {
        case .answered(let answer): return answer
        case .changes: break
        case .askASession:
            if let answer = try await withSession({ try $0.answerUnchanged(request, caller: caller) }) {
                return answer
            }
        }
        let quotas = quotas
        do {
            return try await withHubTurn {
                try $0.registerChange(request, caller: caller, reservedFor: reservedFor, quotas: quotas)
            }
        } catch let busy as HubWriteGate.Busy {
            return .hubUnavailable(
                "this instance's writes to the hub are all in use: try again later", retryAfter: busy.retryAfter)
        }
    }

    /// `body` with a device session, in its turn at the hub (`api.hub_writes`): the turn is
    /// waited for first, holding no thread, and past the gate's queue `HubWriteGate.Busy` is
    /// thrown at once (503 with its Retry-After). Every change that may write to the hub takes
    /// one: registrations, removals, forgets, the sweeper's settling. The hub's answer to the
    /// writes `body` made (and only those) tells the gate how the hub is doing.
    func withHubTurn<T: Sendable>(_ body: @escaping @Sendable (DeviceSession) throws -> T) async throws -> T {
        try await gate.enter()
        let answer = Mutex<InstallationOutcome?>(nil)
        defer { gate.leave(answer.withLock { $0 }) }
        return try await withSession { session in
            defer { answer.withLock { $0 = session.lastHubAnswer } }
            return try body(session)
        }
    }

    /// Blocking work off the event loops (bcrypt, a key set's file or URL).
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threads.run(body)
    }

    /// The back-end's threads: a request holds one for its ledger transaction and its hub write.
    /// 32: more hub writes in flight let the hub read several per wake-up (`newspush-bench api`:
    /// 0.53–0.56× the direct rate against 0.52–0.54× with 16; 4 and 64 were slower).
    static let threads = BlockingThreads(count: 32)

    /// Settles what is owed to the hub (a host killed between hub and index, a hub that was
    /// down, an answer that was lost), once a minute until cancelled; and, within a second of a
    /// forget, empties the engine's copies of what it erased (not in the forget's request: on
    /// SQLite that checkpoint takes the shared connection's turn from every other request).
    func sweep() async {
        var nextOwed = ContinuousClock.now
        while !Task.isCancelled {
            if erased.take() {
                do {
                    try await withSession { $0.forgetErasedCopies() }
                    context.logger.notice("api: the forgotten readers' erased rows are gone from the ledger's files")
                } catch {
                    erased.note()
                }
            }
            if ContinuousClock.now >= nextOwed {
                nextOwed = ContinuousClock.now + .seconds(60)
                await settleOwed()
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func settleOwed() async {
        do {
            let (finished, failed) = try await withHubTurn { try $0.finishOwed(grace: 30) }
            if finished > 0 { context.logger.info("api: \(finished) installations settled at the hub") }
            if !failed.isEmpty {
                context.logger.warning("api: \(failed.count) installations still owed at the hub: \(failed[0])")
            }
        } catch {
            context.logger.warning("api: owed removals not checked: \(error)")
        }
    }
}

/// Whether a forget erased rows since the engine's copies of them were last emptied.
final class ErasureNote: Sendable {
    private let flag = Atomic<Bool>(false)

    func note() { flag.store(true, ordering: .relaxed) }

    /// Whether one did, and now none has.
    func take() -> Bool { flag.exchange(false, ordering: .relaxed) }
}

/// The back-end's threads as the sessions ask for them.
private struct BackEndThreads: BlockingRunner {
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await ApiBackend.threads.run(work)
    }

    func submit(_ work: @escaping @Sendable () -> Void) { ApiBackend.threads.submit(work) }
}
