import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NewsPushCore
import NewsPushModel
import NewsPushSessions

/// The request context of the desk: who is signed in, and the fields of a posted form.
public struct DeskContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address: the connection's.
    let peer: String
    /// The client's address (sign-in attempts are limited per address): the peer's, or behind a
    /// trusted proxy the one its `X-Forwarded-For` names (set by `DeskGuard`).
    var address: String
    /// Whether the request came over TLS (a trusted proxy's `X-Forwarded-Proto: https`).
    var overTLS = false
    /// The signed-in user (set by `DeskGuard`).
    var user: SignedIn?
    /// The session cookie's token.
    var token: String?
    /// The posted body (read once by `DeskGuard`).
    var body = Data()
    /// The posted form's fields.
    var form: [String: String] = [:]

    /// The context of one request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress?.ipAddress ?? "unknown"
        address = peer
    }

    /// Forms and JSON bodies are small.
    public var maxUploadSize: Int { 256 << 10 }
}

/// Where the desk listens.
public struct DeskAddress: Sendable, Equatable {
    /// The address (or host name) to bind.
    public var host: String
    /// The port (0: any free one).
    public var port: Int

    /// `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:80`; nil when it is none of these.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.host = host
        self.port = port
    }

    /// Whether only this machine can reach it.
    public var isLoopback: Bool { host == "127.0.0.1" || host == "::1" || host == "localhost" }
}

/// Serves the desk over HTTP (behind a TLS reverse proxy in production).
public enum DeskServer {
    static let cookie = "newspush_desk"
    // Header names HTTPTypes does not define (each is a valid token, so the names are made).
    static let referrerPolicy = field("Referrer-Policy")
    static let frameOptions = field("X-Frame-Options")
    static let forwardedProto = field("X-Forwarded-Proto")
    static let forwardedFor = field("X-Forwarded-For")
    static let csrfToken = field("X-CSRF-Token")

    private static func field(_ name: String) -> HTTPField.Name {
        HTTPField.Name(name) ?? .contentType
    }

    /// Runs until SIGTERM or SIGINT, then shuts down gracefully; `onReady` receives the bound port.
    public static func run(
        _ desk: Desk, address: DeskAddress, logger: Logger, onReady: @escaping @Sendable (Int) async -> Void
    ) async throws {
        let app = Application(
            router: router(desk),
            configuration: ApplicationConfiguration(
                address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { channel in await onReady(channel.localAddress?.port ?? address.port) },
            logger: logger)
        // SIGTERM (and SIGINT): stop taking connections, let the requests in flight finish (an
        // approval that is sending gets its outcome recorded), then return (SPEC §8).
        try await app.runService()
    }

    /// The desk's routes behind its guard: what `run` serves, and what the tests drive in process.
    public static func router(_ desk: Desk) -> Router<DeskContext> {
        let router = Router(context: DeskContext.self)
        router.add(middleware: DeskGuard(desk: desk))
        DeskRoutes(desk: desk).register(on: router)
        return router
    }

    // MARK: Answers

    /// Every answer's security headers (SPEC §8).
    static func secured(_ response: Response) -> Response {
        var response = response
        response.headers[.contentSecurityPolicy] = DeskAssets.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[DeskServer.referrerPolicy] = "same-origin"
        response.headers[DeskServer.frameOptions] = "DENY"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        answer(text, type: "text/html", status: status)
    }

    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        answer(text + "\n", type: "application/json", status: status)
    }

    static func answer(_ text: String, type: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "\(type); charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func redirect(_ location: String, cookie: String? = nil) -> Response {
        var headers: HTTPFields = [.location: location]
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }

    /// The session cookie: HttpOnly, SameSite=Strict, Secure behind TLS; an empty value ends it.
    static func sessionCookie(_ token: String, maxAge: Int, secure: Bool) -> String {
        "\(cookie)=\(token); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }

    /// Whether the request came over TLS: the desk itself speaks plain HTTP, so only a trusted
    /// reverse proxy's `X-Forwarded-Proto: https` says so.
    static func overTLS(_ request: Request, peer: String, trusted: [String]) -> Bool {
        trusted.contains(peer) && request.headers[DeskServer.forwardedProto]?.lowercased().hasPrefix("https") == true
    }

    /// The client's address: the peer's, unless the peer is a trusted proxy; then the nearest
    /// address in `X-Forwarded-For` (read from the right) that is not itself a trusted proxy
    /// (what a client writes into the header before the proxies is not believed).
    public static func clientAddress(_ request: Request, peer: String, trusted: [String]) -> String {
        guard trusted.contains(peer) else { return peer }
        let forwarded = request.headers[values: forwardedFor].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return forwarded.reversed().first { !trusted.contains($0) } ?? peer
    }
}

/// Sign-in, CSRF and roles before any route, and the security headers on every answer.
struct DeskGuard: RouterMiddleware {
    typealias Context = DeskContext
    let desk: Desk

    func handle(_ request: Request, context: DeskContext, next: (Request, DeskContext) async throws -> Response)
        async throws -> Response
    {
        do {
            var response = try await guarded(request, context: context, next: next)
            // HEAD is GET without the body (RFC 9110; the routes answer both).
            if request.method == .head { response = Response(status: response.status, headers: response.headers) }
            return DeskServer.secured(response)
        } catch let error as HTTPResponseError {
            return DeskServer.secured(try error.response(from: request, context: context))
        } catch {
            // Anything else (a ledger that cannot be read, a hub that cannot be asked) is said
            // as the command line says it, logged, and answered with the security headers.
            desk.context.logger.error("desk: \(request.method) \(request.uri.path): \(error)")
            let why = "\(error)"
            let page =
                request.uri.path.hasPrefix("/api/")
                ? DeskServer.json(JSONText.encode(["error": why]), status: .internalServerError)
                : DeskServer.html(DeskPages.failure(why, user: context.user), status: .internalServerError)
            return DeskServer.secured(page)
        }
    }

    private func guarded(
        _ request: Request, context: DeskContext, next: (Request, DeskContext) async throws -> Response
    ) async throws -> Response {
        var request = request
        var context = context
        let trusted = desk.context.config.deskTrustedProxies
        context.address = DeskServer.clientAddress(request, peer: context.peer, trusted: trusted)
        context.overTLS = DeskServer.overTLS(request, peer: context.peer, trusted: trusted)
        let path = request.uri.path
        let isAPI = path.hasPrefix("/api/")
        if request.method == .post {
            let buffer = try await request.collectBody(upTo: context.maxUploadSize)
            context.body = Data(buffer.readableBytesView)
            if request.headers[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true {
                context.form = FormFields.parse(String(decoding: context.body, as: UTF8.self))
            }
        }
        context.token = request.cookies[DeskServer.cookie]?.value
        if path == "/login" || path == "/desk.js" { return try await next(request, context) }
        guard let user = await desk.session(context.token) else {
            return isAPI
                ? DeskServer.json(JSONText.encode(["error": "sign in first (POST /login)"]), status: .unauthorized)
                : DeskServer.redirect("/login")
        }
        context.user = user
        guard request.method == .post else { return try await next(request, context) }
        let sent = request.headers[DeskServer.csrfToken] ?? context.form["csrf"] ?? ""
        guard DeskSignIns.sameToken(sent, user.csrf) else {
            return refuse(
                "the form is out of date or not from the desk (no valid CSRF token): reload the page", isAPI, user)
        }
        guard path == "/logout" || user.role == .editor else {
            return refuse("\(user.name) is a viewer: only editors decide and publish", isAPI, user)
        }
        return try await next(request, context)
    }

    private func refuse(_ why: String, _ isAPI: Bool, _ user: SignedIn) -> Response {
        isAPI
            ? DeskServer.json(JSONText.encode(["error": why]), status: .forbidden)
            : DeskServer.html(DeskPages.forbidden(why, user: user), status: .forbidden)
    }
}
