import Foundation
import Hummingbird
import NewsPushModel
import NewsPushSessions
import Synchronization

/// `POST /api/alerts/{alertId}/events` (SPEC §11): an app says one of its installations received
/// or opened an alert. `204` whether it was counted or not (no oracle of installations or
/// alerts); `400` for a body that is not `{installationId, event}` or an unknown kind; `413`
/// over 4 KB. The rate limits of every route apply (`ApiGuard`, `ApiAuthenticator`).
struct EventsController: Sendable {
    let backend: ApiBackend

    /// An event's body is a few dozen bytes; 4 KB leaves room for what a client adds.
    static let maxBody = 4 << 10

    func addRoutes(to group: some RouterMethods<ApiContext>) {
        group.post("/api/alerts/:id/events", use: post)
    }

    @Sendable func post(_ request: Request, context: ApiContext) async throws -> Response {
        guard context.body.count <= Self.maxBody else {
            return ApiServer.error(.contentTooLarge, "an event's body is over 4 KB")
        }
        let body: AlertEventBody
        do { body = try RequestBody.decode(AlertEventBody.self, from: context.body) } catch {
            return ApiServer.error(.badRequest, error.message)
        }
        guard let kind = AlertEventKind(rawValue: body.event) else {
            return ApiServer.error(.badRequest, "event is \"received\" or \"opened\"")
        }
        guard DeviceRules.isValidId(body.installationId) else { return ApiRoutes.badId }
        let alert = context.parameters.get("id") ?? ""
        // An alert id is an outbox id (36 characters); a longer one is no alert of this ledger.
        guard alert.utf8.count <= 64 else { return Response(status: .noContent) }
        let caller = context.caller
        let outcome = try await count(kind, alert: alert, installation: body.installationId, caller: caller)
        if case .notCounted(let why) = outcome {
            backend.context.logger.debug("api: an event of alert \(alert) not counted: \(why)")
        }
        return Response(status: .noContent)
    }

    /// The report counted without a session when the engine allows and the back-end knows when
    /// the alert went (`AlertEventCounter`); else by a session, which reads when it went.
    private func count(_ kind: AlertEventKind, alert: String, installation: String, caller: Caller) async throws
        -> AlertEventOutcome
    {
        let known = backend.sendTimes.time(of: alert)
        let answer = try await backend.events.count(
            kind, alert: alert, installation: installation, caller: caller, sentAt: known)
        if case .answered(let outcome) = answer { return outcome }
        let (outcome, sentAt) = try await backend.withSession {
            try $0.report(kind, alert: alert, installation: installation, caller: caller, sentAt: known)
        }
        if known == nil, let sentAt { backend.sendTimes.keep(sentAt, of: alert) }
        return outcome
    }
}

/// When each alert reported on went (SPEC §11), kept by the instance so an event reads the
/// ledger for its installation only: the alerts of a week are few, and their times do not move
/// but by the milliseconds between a send's intent and the hub's answer. At most `limit`; the
/// oldest half goes when it is full.
final class AlertSendTimes: Sendable {
    private let times = Mutex<[String: Date]>([:])
    static let limit = 10_000

    func time(of alert: String) -> Date? { times.withLock { $0[alert] } }

    func keep(_ time: Date, of alert: String) {
        times.withLock { times in
            if times.count >= Self.limit {
                for (id, _) in times.sorted(by: { $0.value < $1.value }).prefix(Self.limit / 2) { times[id] = nil }
            }
            times[alert] = time
        }
    }
}
