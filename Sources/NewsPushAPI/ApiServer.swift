import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NewsPushCore
import NewsPushDesk
import NewsPushSessions

/// The request context of `newspush api`: the client's address, who is calling, the body.
public struct ApiContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address: the connection's.
    let peer: String
    /// The client's address: the peer's, or behind a trusted proxy its `X-Forwarded-For`'s.
    var address: String
    /// The client's network (`ClientNetwork`): what rate limits and the anonymous cap count.
    var network = ""
    /// Who is calling (set by `ApiGuard`).
    var caller: Caller = .anonymous
    /// The body (read once by `ApiGuard`, at most `maxUploadSize`).
    var body = Data()

    /// The context of one request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress?.ipAddress ?? "unknown"
        address = peer
    }

    /// SPEC §9: bodies over 64 KB are refused (413).
    public var maxUploadSize: Int { 64 << 10 }
}

/// Serves the app back-end over HTTP (behind a TLS reverse proxy in production).
public enum ApiServer {
    static let wwwAuthenticate = HTTPField.Name("WWW-Authenticate") ?? .contentType
    static let retryAfter = HTTPField.Name("Retry-After") ?? .contentType
    static let forwardedFor = HTTPField.Name("X-Forwarded-For") ?? .contentType
    static let pushChannel = HTTPField.Name("X-Push-Channel") ?? .contentType

    /// Runs until SIGTERM or SIGINT, then stops taking requests and lets those in flight finish;
    /// `onReady` receives the bound port.
    public static func run(
        _ backend: ApiBackend, address: DeskAddress, logger: Logger, onReady: @escaping @Sendable (Int) async -> Void
    ) async throws {
        let app = Application(
            router: router(backend),
            configuration: ApplicationConfiguration(
                address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { channel in await onReady(channel.localAddress?.port ?? address.port) },
            logger: logger)
        let sweeper = Task { await backend.sweep() }
        let reader = Task { await backend.reader?.run() }
        defer {
            sweeper.cancel()
            reader.cancel()
        }
        try await app.runService()
    }

    /// The routes behind the guard: what `run` serves.
    public static func router(_ backend: ApiBackend) -> Router<ApiContext> {
        let router = Router(context: ApiContext.self)
        router.add(middleware: ApiGuard(backend: backend))
        ApiRoutes(backend: backend).register(on: router)
        return router
    }

    // MARK: Answers

    /// A JSON answer, byte for byte the document: nothing after it, not even a newline (the
    /// tutorials' apps drop exactly one character at each end of `POST /api/register`'s body).
    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// `{"error": why}` with `status`.
    static func error(_ status: HTTPResponse.Status, _ why: String) -> Response {
        json(JSONText.encode(["error": why], pretty: false), status: status)
    }

    /// Every answer's headers: JSON only, never cached, never framed, nothing sniffed.
    static func secured(_ response: Response) -> Response {
        var response = response
        response.headers[.contentSecurityPolicy] = "default-src 'none'; frame-ancestors 'none'"
        response.headers[.xContentTypeOptions] = "nosniff"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}

/// Before any route: the body's size, the client's address and its rate, the credential (a
/// wrong one is 401, never anonymous) and the user's rate; after: the security headers.
struct ApiGuard: RouterMiddleware {
    typealias Context = ApiContext
    let backend: ApiBackend

    func handle(_ request: Request, context: ApiContext, next: (Request, ApiContext) async throws -> Response)
        async throws -> Response
    {
        do {
            var response = try await guarded(request, context: context, next: next)
            if request.method == .head { response = Response(status: response.status, headers: response.headers) }
            return ApiServer.secured(response)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return ApiServer.secured(ApiServer.error(.contentTooLarge, "the body is over 64 KB"))
        } catch let error as HTTPError where error.status == .notFound {
            guard let allowed = ApiRoutes.methods(of: request.uri.path) else {
                return ApiServer.secured(ApiServer.error(.notFound, "no such route (GET /openapi.json lists them)"))
            }
            var response = ApiServer.error(.methodNotAllowed, "\(request.method) is not a method of this route")
            response.headers[.allow] = allowed
            return ApiServer.secured(response)
        } catch let error as HTTPResponseError {
            return ApiServer.secured(try error.response(from: request, context: context))
        } catch {
            backend.context.logger.error("api: \(request.method) \(request.uri.path): \(error)")
            return ApiServer.secured(ApiServer.error(.serviceUnavailable, ApiRoutes.describe(error)))
        }
    }

    private func guarded(
        _ request: Request, context: ApiContext, next: (Request, ApiContext) async throws -> Response
    ) async throws -> Response {
        var request = request
        var context = context
        let api = backend.context.config.api
        let now = backend.context.clock.now()
        context.address = DeskServer.clientAddress(request, peer: context.peer, trusted: api.trustedProxies)
        context.network = ClientNetwork.key(context.address, ipv4Prefix: api.ipv4Prefix, ipv6Prefix: api.ipv6Prefix)
        if let wait = backend.limits.take("a:" + context.network, limit: api.ratePerAddress, now: now) {
            return tooMany(wait)
        }
        if request.method != .get && request.method != .head {
            let buffer = try await request.collectBody(upTo: context.maxUploadSize)
            context.body = Data(buffer.readableBytesView)
        }
        if request.uri.path == "/openapi.json" { return try await next(request, context) }
        switch await backend.credentials.caller(
            authorization: request.headers[.authorization], network: context.network, now: now)
        {
        case .failure(let refusal) where refusal.retryAfter != nil:
            return tooMany(refusal.retryAfter ?? 1, why: refusal.reason)
        case .failure(let refusal):
            var response = ApiServer.error(.unauthorized, refusal.reason)
            response.headers[ApiServer.wwwAuthenticate] = backend.credentials.challenge
            return response
        case .success(let caller):
            context.caller = caller
        }
        if let name = context.caller.name,
            let wait = backend.limits.take("u:" + name, limit: api.ratePerUser, now: now)
        {
            return tooMany(wait)
        }
        return try await next(request, context)
    }

    private func tooMany(_ seconds: Int, why: String = "too many requests") -> Response {
        var response = ApiServer.error(.tooManyRequests, "\(why): try again in \(seconds) s")
        response.headers[ApiServer.retryAfter] = String(seconds)
        return response
    }
}
