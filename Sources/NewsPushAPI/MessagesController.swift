import Foundation
import HTTPTypes
import Hummingbird
import NewsPushSessions

/// `POST /api/notifications` (a sender's message to a user, or a reader's secure push to their
/// own devices) and `GET /api/notifications/{secureId}` (a secure push's text, for its reader).
struct MessagesController: Sendable {
    let backend: ApiBackend

    func addRoutes(to group: some RouterMethods<ApiContext>) {
        group.post("/api/notifications", use: send)
        for method in [HTTPRequest.Method.get, .head] {
            group.on("/api/notifications/:id", method: method, use: secureText)
        }
    }

    /// `POST /api/notifications?pns=P&to_tag=U`: a sender's message to user U's devices;
    /// without `to_tag`, a secure push to the caller's own.
    @Sendable func send(_ request: Request, context: ApiContext) async throws -> Response {
        guard case .user(let caller, let sender) = context.caller else { return ApiRoutes.signIn(backend) }
        let query = request.uri.queryParameters
        guard let user = query.get("to_tag"), !user.isEmpty else {
            return try await securePush(caller, context: context)
        }
        guard sender else { return ApiServer.error(.forbidden, "only senders may send to users; nothing was sent") }
        guard let pns = query.get("pns"), !pns.isEmpty else {
            return ApiServer.error(.badRequest, "pns is required: apns, gcm, fcm or wns")
        }
        guard let text = RequestBody.messageText(context.body) else { return Self.notAString }
        let outcome = try await backend.withSession { try $0.message(text, to: user, from: caller, pns: pns) }
        switch outcome {
        case .sent(let id): return ApiServer.answer(SentAnswer(notificationId: id))
        case .invalid(let why): return ApiServer.error(.badRequest, why)
        case .hubFailed(let why): return ApiServer.error(.badGateway, why)
        }
    }

    /// A secure push to the caller's own devices.
    private func securePush(_ caller: String, context: ApiContext) async throws -> Response {
        guard let text = RequestBody.messageText(context.body) else { return Self.notAString }
        switch try await backend.withSession({ try $0.securePush(text, caller: caller) }) {
        case .sent(let id): return ApiServer.answer(SentAnswer(secureId: id))
        case .invalid(let why): return ApiServer.error(.badRequest, why)
        case .hubFailed(let why): return ApiServer.error(.badGateway, why)
        case .tooMany(let wait):
            return ApiRoutes.later(
                .tooManyRequests, "at most \(DeviceSession.secureHourlyLimit) secure pushes an hour: try in \(wait) s",
                retryAfter: wait)
        }
    }

    /// `GET /api/notifications/{secureId}`: the text of a secure push, for its reader; 404 for
    /// any other id, reader or time.
    @Sendable func secureText(_ request: Request, context: ApiContext) async throws -> Response {
        let name = context.caller.name ?? ""
        let notFound = ApiServer.error(.notFound, "no such notification")
        guard let text = context.parameters.get("id"), let id = Int(text), (1...Int(Int32.max)).contains(id) else {
            return notFound
        }
        guard let found = try await backend.withSession({ try $0.secureText(id: id, caller: name) }) else {
            return notFound
        }
        return ApiServer.answer(found)
    }

    private static var notAString: Response {
        ApiServer.error(.badRequest, "the body must be the message as a JSON string (\"…\")")
    }
}

/// `DELETE /api/users/me`: the reader leaves; every installation of theirs goes, and what names
/// them is erased.
struct AccountController: Sendable {
    let backend: ApiBackend

    func addRoutes(to group: some RouterMethods<ApiContext>) {
        group.delete("/api/users/me", use: forgetMe)
    }

    @Sendable func forgetMe(_ request: Request, context: ApiContext) async throws -> Response {
        let name = context.caller.name ?? ""
        let outcome = try await backend.withHubTurn { try $0.forget(user: name, by: name) }
        backend.erased.note()
        if !outcome.failed.isEmpty {
            backend.context.logger.warning("api: \(outcome.failed.count) hub deletes owed after a user left")
        }
        return Response(status: .noContent)
    }
}
