import Foundation
import Hummingbird
import NewsPushSessions

/// The tutorials' `api/register` flow, exactly as their apps call it: ask for an id, put the
/// registration under it, delete it. Signed-in readers only.
struct TutorialController: Sendable {
    let backend: ApiBackend

    func addRoutes(to group: some RouterMethods<ApiContext>) {
        group.post("/api/register", use: newId)
        group.put("/api/register/:id", use: put)
        group.delete("/api/register/:id", use: delete)
    }

    /// `POST /api/register?handle=H` (or with `{"handle": "H"}` in the body, which no proxy
    /// logs): a registration id, as a JSON string (the apps drop one character at each end).
    @Sendable func newId(_ request: Request, context: ApiContext) async throws -> Response {
        var handle = request.uri.queryParameters.get("handle").map { String($0) }
        if !context.body.isEmpty {
            do throws(RequestBody.Problem) {
                handle = try RequestBody.decode(RegistrationIdBody.self, from: context.body).handle ?? handle
            } catch {
                return ApiServer.error(.badRequest, error.message)
            }
        }
        let name = context.caller.name ?? ""
        let asked = handle
        let id = try await backend.withSession { try $0.registrationId(handle: asked, caller: name) }
        return ApiServer.answer(id)
    }

    /// `PUT /api/register/{id}` with the tutorials' `DeviceRegistration` (`Platform`, `Handle`,
    /// `Tags`): 200, or 410 for an id that is unknown, expired or another's.
    @Sendable func put(_ request: Request, context: ApiContext) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        guard DeviceRules.isValidId(id) else { return ApiRoutes.badId }
        let body: RegistrationBody
        do { body = try RequestBody.decode(RegistrationBody.self, from: context.body) } catch {
            return ApiServer.error(.badRequest, error.message)
        }
        let registration = DeviceRegistration(
            id: id, platform: body.platform, handle: body.handle ?? "", topics: body.tags ?? [],
            network: context.network)
        let outcome = try await backend.register(
            registration, caller: context.caller, reservedFor: context.caller.name ?? "")
        switch outcome {
        case .registered: return Response(status: .ok)
        case .notYours:
            return ApiServer.error(.gone, "registration \(id) is unknown, expired or not yours: ask for a new id")
        default: return ApiRoutes.failure(outcome)
        }
    }

    /// `DELETE /api/register/{id}`: 200 when removed or already gone.
    @Sendable func delete(_ request: Request, context: ApiContext) async throws -> Response {
        try await InstallationsController.remove(
            id: context.parameters.get("id") ?? "", handle: nil, context: context, backend: backend, answer: .ok)
    }
}
