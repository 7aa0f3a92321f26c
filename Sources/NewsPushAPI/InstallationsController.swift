import Foundation
import Hummingbird
import NewsPushSessions

/// `PUT` and `DELETE /api/installations/{id}`: the installation API of apps written today, for
/// anonymous and signed-in phones alike.
struct InstallationsController: Sendable {
    let backend: ApiBackend

    func addRoutes(to group: some RouterMethods<ApiContext>) {
        group.put("/api/installations/:id", use: put)
        group.delete("/api/installations/:id", use: delete)
    }

    /// Registers (or re-registers) the installation; its tags as newspush decided them.
    @Sendable func put(_ request: Request, context: ApiContext) async throws -> Response {
        if context.caller == .anonymous && !backend.context.config.api.anonymous { return ApiRoutes.signIn(backend) }
        let id = context.parameters.get("id") ?? ""
        let body: InstallationBody
        do { body = try RequestBody.decode(InstallationBody.self, from: context.body) } catch {
            return ApiServer.error(.badRequest, error.message)
        }
        let registration = DeviceRegistration(
            id: id, platform: body.platform, handle: body.pushChannel, topics: body.topics ?? [],
            language: body.language, network: context.network)
        let outcome = try await backend.register(registration, caller: context.caller)
        switch outcome {
        case .registered(let record, let ignored):
            return ApiServer.answer(InstallationAnswer(installationId: record.id, tags: record.tags, ignored: ignored))
        case .notYours:
            return ApiServer.error(.forbidden, "installation \(id) belongs to another user or device")
        default:
            return ApiRoutes.failure(outcome)
        }
    }

    /// Removes the installation (204); the phone proves it is its own with `X-Push-Channel`.
    @Sendable func delete(_ request: Request, context: ApiContext) async throws -> Response {
        try await Self.remove(
            id: context.parameters.get("id") ?? "", handle: request.headers[ApiServer.pushChannel], context: context,
            backend: backend, answer: .noContent)
    }

    /// Removes installation `id` for the caller: `answer` when done, when there was none, and
    /// when it is someone else's (which stays as it is): the answer never tells an id in use
    /// from one that is not.
    static func remove(
        id: String, handle: String?, context: ApiContext, backend: ApiBackend, answer: HTTPResponse.Status
    ) async throws -> Response {
        guard DeviceRules.isValidId(id) else { return ApiRoutes.badId }
        let caller = context.caller
        let outcome = try await backend.withHubTurn { try $0.remove(id: id, caller: caller, handle: handle) }
        switch outcome {
        case .notYours:
            backend.context.logger.info("api: a removal of installation \(id) by someone else changed nothing")
            return Response(status: answer)
        case .removed(let hubError?):
            backend.context.logger.warning(
                "api: installation \(id) removed from the index; the hub's delete is owed: \(hubError)")
            return Response(status: answer)
        case .removed, .absent:
            return Response(status: answer)
        }
    }
}
