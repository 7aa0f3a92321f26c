import Foundation
import Hummingbird
import NewsPushModel
import NewsPushSessions

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
        let outcome = try await backend.withSession {
            try $0.report(kind, alert: alert, installation: body.installationId, caller: caller)
        }
        if case .notCounted(let why) = outcome {
            backend.context.logger.debug("api: an event of alert \(alert) not counted: \(why)")
        }
        return Response(status: .noContent)
    }
}
