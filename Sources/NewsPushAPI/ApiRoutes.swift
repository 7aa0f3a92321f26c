import Foundation
import HTTPTypes
import Hummingbird
import NewsPushCore
import NewsPushSessions

/// The routes of SPEC §9's table, as controllers on three layers: what anyone may ask (the
/// document), what an identified caller may ask, anonymous or not (health, installations), and
/// what needs a signed-in reader (the tutorials' flow, messages, forget-me).
public struct ApiRoutes: Sendable {
    let backend: ApiBackend

    func register(on router: Router<ApiContext>) {
        let service = ServiceController(backend: backend)
        service.addDocument(to: router)
        let identified = router.group().add(middleware: ApiAuthenticator(backend: backend))
        service.addHealth(to: identified)
        InstallationsController(backend: backend).addRoutes(to: identified)
        EventsController(backend: backend).addRoutes(to: identified)
        let signedIn = identified.group().add(middleware: SignedInOnly(backend: backend))
        TutorialController(backend: backend).addRoutes(to: signedIn)
        MessagesController(backend: backend).addRoutes(to: signedIn)
        AccountController(backend: backend).addRoutes(to: signedIn)
    }

    /// Every route, as the OpenAPI document lists them (a test keeps the two in step).
    public static let table: [(method: String, path: String)] = [
        ("GET", "/healthz"), ("GET", "/openapi.json"), ("PUT", "/api/installations/{id}"),
        ("DELETE", "/api/installations/{id}"), ("POST", "/api/register"), ("PUT", "/api/register/{id}"),
        ("DELETE", "/api/register/{id}"), ("DELETE", "/api/users/me"), ("POST", "/api/notifications"),
        ("GET", "/api/notifications/{id}"), ("POST", "/api/alerts/{alertId}/events"),
    ]

    /// The methods a path's route answers (`Allow` of a 405), nil when no route has the path.
    static func methods(of path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let methods = table.filter { route in
            let pattern = route.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            return pattern.count == segments.count
                && zip(pattern, segments).allSatisfy { $0 == $1 || ($0.hasPrefix("{") && !$1.isEmpty) }
        }.map(\.method)
        guard !methods.isEmpty else { return nil }
        return (methods.contains("GET") ? methods + ["HEAD"] : methods).joined(separator: ", ")
    }

    /// A session error as the phone is told it (never a path with a password, never a handle).
    static func describe(_ error: any Error) -> String {
        switch error {
        case SessionError.ledger(.busy):
            return "another change of the same installation or reader is under way: try again in a few seconds"
        case SessionError.ledger: return "the ledger cannot be used right now: try again later"
        case let error as SessionError: return error.description
        default: return "the back-end is shutting down or cannot answer: try again later"
        }
    }

    // MARK: Answers every controller gives

    /// 401 with the challenge: sign in first.
    static func signIn(_ backend: ApiBackend) -> Response {
        var response = ApiServer.error(.unauthorized, "sign in first")
        response.headers[ApiServer.wwwAuthenticate] = backend.credentials.challenge
        return response
    }

    static var badId: Response {
        ApiServer.error(.badRequest, "an installation id is 1 to 64 of A-Z a-z 0-9 . _ -")
    }

    /// `status` with `Retry-After`.
    static func later(_ status: HTTPResponse.Status, _ why: String, retryAfter: Int) -> Response {
        var response = ApiServer.error(status, why)
        response.headers[ApiServer.retryAfter] = String(retryAfter)
        return response
    }

    static func failure(_ outcome: RegistrationOutcome) -> Response {
        switch outcome {
        case .invalid(let why): return ApiServer.error(.badRequest, why)
        case .hubUnavailable(let why, let retryAfter): return later(.serviceUnavailable, why, retryAfter: retryAfter)
        case .tooMany(let why, let retryAfter): return later(.tooManyRequests, why, retryAfter: retryAfter)
        case .registered, .notYours: return ApiServer.error(.internalServerError, "unexpected outcome")
        }
    }
}

/// Who is calling, for every route but the document: a credential is checked (a wrong one is
/// 401, never anonymous; a guessed one 429) and the caller's own rate taken.
struct ApiAuthenticator: RouterMiddleware {
    typealias Context = ApiContext
    let backend: ApiBackend

    func handle(_ request: Request, context: ApiContext, next: (Request, ApiContext) async throws -> Response)
        async throws -> Response
    {
        var context = context
        let now = backend.context.clock.now()
        switch await backend.credentials.caller(
            authorization: request.headers[.authorization], network: context.network, now: now)
        {
        case .failure(let refusal) where refusal.retryAfter != nil:
            return ApiGuard.tooMany(refusal.retryAfter ?? 1, why: refusal.reason)
        case .failure(let refusal):
            var response = ApiServer.error(.unauthorized, refusal.reason)
            response.headers[ApiServer.wwwAuthenticate] = backend.credentials.challenge
            return response
        case .success(let caller):
            context.caller = caller
        }
        if let name = context.caller.name,
            let wait = backend.limits.take(
                "u:" + name, count: backend.context.config.api.ratePerUser.count,
                per: backend.context.config.api.ratePerUser.period, now: now)
        {
            return ApiGuard.tooMany(wait)
        }
        return try await next(request, context)
    }
}

/// The routes of signed-in readers: an anonymous caller is asked to sign in (401 with the
/// challenge).
struct SignedInOnly: RouterMiddleware {
    typealias Context = ApiContext
    let backend: ApiBackend

    func handle(_ request: Request, context: ApiContext, next: (Request, ApiContext) async throws -> Response)
        async throws -> Response
    {
        guard context.caller.name != nil else { return ApiRoutes.signIn(backend) }
        return try await next(request, context)
    }
}
