import NewsPushLedger
import NewsPushModel

/// The one question of every app start, does this registration change nothing?, asked without
/// a session where the engine allows: on PostgreSQL on the request's event loop
/// (`LedgerConnections.installationAndOwed`, so an app-open surge pays no hand-off to a
/// session's thread per statement); on SQLite a session answers in place
/// (`DeviceSession.answerUnchanged`), so the caller is told to ask one.
public struct UnchangedRegistrations: Sendable {
    /// What the index says of a registration.
    public enum Answer: Sendable {
        /// The answer for the phone: nothing changes, or the request is refused.
        case answered(RegistrationOutcome)
        /// The registration changes the installation: a write.
        case changes
        /// This engine answers in a session (`DeviceSession.answerUnchanged`).
        case askASession
    }

    private let context: SessionContext
    private let reader: LedgerConnections?
    private let planner: RegistrationPlanner

    /// For `context`'s ledger, read through the pool of `sessions` (PostgreSQL).
    public init(context: SessionContext, sessions: SessionPool) {
        self.context = context
        planner = RegistrationPlanner(context: context)
        reader = sessions.connections
    }

    /// What the index says of `request` by `caller`.
    public func answer(_ request: DeviceRegistration, caller: Caller) async -> Answer {
        guard let reader else { return .askASession }
        switch planner.registration(request, caller: caller, now: context.clock.now()) {
        case .failure(let refusal): return .answered(.invalid(refusal.message))
        case .success(let checked):
            let found: (InstallationRecord, owed: Bool)?
            do { found = try await reader.installationAndOwed(id: checked.record.id) } catch {
                // The reader only saves a session its turn: when it cannot answer (a restart, a
                // server not answering within its patience), a session asks, and a session's
                // failure is the one the phone is told of and the log records.
                return .askASession
            }
            let unchanged = RegistrationPlanner.unchanged(
                checked.record, ignored: checked.ignored, found: found, now: context.clock.now())
            return unchanged.map(Answer.answered) ?? .changes
        }
    }
}
