import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NewsPushCore
import NewsPushHTTP
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

/// Serves the desk over HTTP (behind a TLS reverse proxy in production).
public enum DeskServer {
    static let cookie = "newspush_desk"
    static let csrfToken = FrontEnd.field("X-CSRF-Token")

    /// Runs until SIGTERM or SIGINT, then shuts down gracefully; `onReady` receives the bound port.
    /// On SIGTERM the requests in flight finish (an approval that is sending gets its outcome
    /// recorded) before it returns (SPEC §8).
    public static func run(
        _ desk: Desk, address: ListenAddress, logger: Logger, onReady: @escaping @Sendable (Int) async -> Void
    ) async throws {
        try await FrontEnd.serve(router(desk), name: "desk", address: address, logger: logger, onReady: onReady)
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
        FrontEnd.secured(
            response, policy: DeskAssets.contentSecurityPolicy,
            extra: [FrontEnd.field("Referrer-Policy"): "same-origin", FrontEnd.field("X-Frame-Options"): "DENY"])
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        FrontEnd.answer(text, type: "text/html", status: status)
    }

    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        FrontEnd.answer(text + "\n", type: "application/json", status: status)
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
}

/// Sign-in, CSRF and roles before any route, and the security headers on every answer.
struct DeskGuard: RouterMiddleware {
    typealias Context = DeskContext
    let desk: Desk

    func handle(_ request: Request, context: DeskContext, next: (Request, DeskContext) async throws -> Response)
        async throws -> Response
    {
        try await FrontEnd.shell(request, context: context, secure: DeskServer.secured, unexpected: failed) {
            try await guarded(request, context: context, next: next)
        }
    }

    /// Anything but an HTTP error (a ledger that cannot be read, a hub that cannot be asked) is
    /// said as the command line says it, logged, and answered.
    private func failed(_ error: any Error, _ request: Request, _ context: DeskContext) -> Response {
        desk.context.logger.error("desk: \(request.method) \(request.uri.path): \(error)")
        let why = "\(error)"
        return request.uri.path.hasPrefix("/api/")
            ? DeskServer.json(JSONText.encode(["error": why]), status: .internalServerError)
            : DeskServer.html(DeskPages.failure(why, user: context.user), status: .internalServerError)
    }

    private func guarded(
        _ request: Request, context: DeskContext, next: (Request, DeskContext) async throws -> Response
    ) async throws -> Response {
        var request = request
        var context = context
        let trusted = desk.context.config.deskTrustedProxies
        context.address = FrontEnd.clientAddress(request, peer: context.peer, trusted: trusted)
        context.overTLS = FrontEnd.overTLS(request, peer: context.peer, trusted: trusted)
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
