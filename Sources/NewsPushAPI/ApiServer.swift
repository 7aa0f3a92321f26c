import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NewsPushCore
import NewsPushHTTP
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
    static let wwwAuthenticate = FrontEnd.field("WWW-Authenticate")
    static let retryAfter = FrontEnd.retryAfter
    static let pushChannel = FrontEnd.field("X-Push-Channel")

    /// Runs until SIGTERM or SIGINT, then stops taking requests and lets those in flight finish;
    /// `onReady` receives the bound port.
    public static func run(
        _ backend: ApiBackend, address: ListenAddress, logger: Logger, onReady: @escaping @Sendable (Int) async -> Void
    ) async throws {
        // The users file read before the first request: a surge at start waits for no parse.
        _ = await backend.credentials.users.current()
        let sweeper = Task { await backend.sweep() }
        let connections = Task { await backend.sessions.run() }
        defer {
            sweeper.cancel()
            connections.cancel()
        }
        try await FrontEnd.serve(router(backend), name: "api", address: address, logger: logger, onReady: onReady)
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
        FrontEnd.answer(text, type: "application/json", status: status)
    }

    /// `{"error": why}` with `status`.
    static func error(_ status: HTTPResponse.Status, _ why: String) -> Response {
        answer(ErrorAnswer(error: why), status: status)
    }

    /// The one way a route answers with a document: its JSON (`ApiAnswer.json`), byte for byte.
    static func answer(_ document: some ApiAnswer, status: HTTPResponse.Status = .ok) -> Response {
        json(document.json, status: status)
    }

    /// Every answer's headers: JSON only, never cached, never framed, nothing sniffed.
    static func secured(_ response: Response) -> Response {
        FrontEnd.secured(response, policy: "default-src 'none'; frame-ancestors 'none'")
    }
}

/// Before any route: the client's address and its rate, and the body's size; after: the security
/// headers, and 404, 405 and 413 in the API's words. Who is calling is `ApiAuthenticator`'s.
struct ApiGuard: RouterMiddleware {
    typealias Context = ApiContext
    let backend: ApiBackend

    func handle(_ request: Request, context: ApiContext, next: (Request, ApiContext) async throws -> Response)
        async throws -> Response
    {
        try await FrontEnd.shell(
            request, context: context, secure: ApiServer.secured, own: { routeless($0, request) }, unexpected: failed
        ) {
            try await guarded(request, context: context, next: next)
        }
    }

    /// 413 and 404 in the API's words; a route asked with a method it does not have is 405 with
    /// the methods it has.
    private func routeless(_ error: HTTPError, _ request: Request) -> Response? {
        switch error.status {
        case .contentTooLarge: return ApiServer.error(.contentTooLarge, "the body is over 64 KB")
        case .notFound:
            guard let allowed = ApiRoutes.methods(of: request.uri.path) else {
                return ApiServer.error(.notFound, "no such route (GET /openapi.json lists them)")
            }
            var response = ApiServer.error(.methodNotAllowed, "\(request.method) is not a method of this route")
            response.headers[.allow] = allowed
            return response
        default: return nil
        }
    }

    /// A ledger or hub that cannot be reached: logged, and 503 with what the command line would
    /// say and when to try again (every 5xx carries `Retry-After`: phones wait for it). A change
    /// that waited too long for another change of the same installation is not an error of the
    /// back-end: a notice, and a short wait.
    private func failed(_ error: any Error, _ request: Request, _ context: ApiContext) -> Response {
        let retryAfter: Int
        if let busy = error as? HubWriteGate.Busy {
            return ApiRoutes.later(
                .serviceUnavailable, "this instance's writes to the hub are all in use: try again later",
                retryAfter: busy.retryAfter)
        } else if case SessionError.ledger(.busy) = error {
            backend.context.logger.notice("api: \(request.method) \(request.uri.path): \(error)")
            retryAfter = 2
        } else {
            backend.context.logger.error("api: \(request.method) \(request.uri.path): \(error)")
            retryAfter = 5
        }
        return ApiRoutes.later(.serviceUnavailable, ApiRoutes.describe(error), retryAfter: retryAfter)
    }

    private func guarded(
        _ request: Request, context: ApiContext, next: (Request, ApiContext) async throws -> Response
    ) async throws -> Response {
        var request = request
        var context = context
        let api = backend.context.config.api
        let now = backend.context.clock.now()
        context.address = FrontEnd.clientAddress(request, peer: context.peer, trusted: api.trustedProxies)
        context.network = ClientNetwork.key(context.address, ipv4Prefix: api.ipv4Prefix, ipv6Prefix: api.ipv6Prefix)
        if let wait = backend.limits.take(
            "a:" + context.network, count: api.ratePerAddress.count, per: api.ratePerAddress.period, now: now)
        {
            return Self.tooMany(wait)
        }
        if request.method != .get && request.method != .head {
            if let coding = Self.unknownTransferCoding(request) {
                return ApiServer.error(.badRequest, "the transfer coding '\(coding)' is not taken (chunked is)")
            }
            do {
                let buffer = try await request.collectBody(upTo: context.maxUploadSize)
                context.body = Data(buffer.readableBytesView)
            } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
                throw error  // NIO's too-many-bytes, answered 413 in the API's words
            } catch {
                // A chunked body that breaks off or lies about its sizes: the client's fault.
                return ApiServer.error(.badRequest, "the body is malformed (its chunks or its length)")
            }
        }
        return try await next(request, context)
    }

    /// A transfer coding of the request other than `chunked` (`gzip, chunked`), which the back-end
    /// does not undo: the body would be read as if it were not compressed.
    static func unknownTransferCoding(_ request: Request) -> String? {
        request.headers[values: .transferEncoding].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.first { !$0.isEmpty && $0 != "chunked" }
    }

    /// 429 with `Retry-After`.
    static func tooMany(_ seconds: Int, why: String = "too many requests") -> Response {
        var response = ApiServer.error(.tooManyRequests, "\(why): try again in \(seconds) s")
        response.headers[ApiServer.retryAfter] = String(seconds)
        return response
    }
}
