import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// What the two front ends (`newspush desk` for editors, `newspush api` for phones) do alike:
/// serve a router until SIGTERM, read the client's address behind trusted proxies, write JSON
/// and security headers, and wrap every answer in one guard shell.
public enum FrontEnd {
    /// `X-Forwarded-For`, as a trusted reverse proxy writes it.
    public static let forwardedFor = field("X-Forwarded-For")
    /// `X-Forwarded-Proto`: whether the client spoke TLS to the proxy.
    public static let forwardedProto = field("X-Forwarded-Proto")
    /// `Retry-After`.
    public static let retryAfter = field("Retry-After")

    /// A header name HTTPTypes does not define (each caller's is a valid token, so it is made).
    public static func field(_ name: String) -> HTTPField.Name {
        HTTPField.Name(name) ?? .contentType
    }

    /// Serves `router` on `address` until SIGTERM or SIGINT, then says so on standard error
    /// (`newspush NAME: stopping …`), stops taking connections and lets the requests in flight
    /// finish; `onReady` receives the bound port.
    public static func serve<Context: RequestContext>(
        _ router: Router<Context>, name: String, address: ListenAddress, logger: Logger,
        onReady: @escaping @Sendable (Int) async -> Void
    ) async throws where Context.Source == ApplicationRequestContextSource {
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { channel in await onReady(channel.localAddress?.port ?? address.port) },
            logger: logger)
        // Shut down in reverse order: the notice first, then the server drains.
        let group = ServiceGroup(
            configuration: .init(
                services: [app, StoppingNotice(name: name)], gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }

    /// How long the requests in flight get after SIGTERM: past it the front end stops without
    /// them. Within systemd's stop timeout (90 s) and Kubernetes' grace period (30 s), and longer
    /// than an answer from a working hub takes; a hub that went away holds a request for its whole
    /// timeout (30 s) and every retry. What such a request had started is safe to leave: an
    /// installation's hub write was noted as owed before it went out and is settled by the next
    /// start, and a push that was sending is recorded `unknown` and never sent again.
    public static let drainLimit: Double = 15

    /// Says on standard error that the front end is stopping, the moment the signal is taken:
    /// an operator's journal shows why it went, and a test knows the signal landed. Then the
    /// requests in flight get `drainLimit` seconds.
    private struct StoppingNotice: Service {
        let name: String

        func run() async throws {
            try? await gracefulShutdown()
            FileHandle.standardError.write(
                Data("newspush \(name): stopping: no new connections; finishing the requests in flight\n".utf8))
            let name = name
            // A thread of its own: the service group waits for its services, and this one must not
            // hold the stop up; the process normally ends long before it wakes.
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: FrontEnd.drainLimit)
                FileHandle.standardError.write(
                    Data(
                        ("newspush \(name): requests still in flight after \(Int(FrontEnd.drainLimit)) s; "
                            + "stopping without them (what they started at the hub is settled by the next start)\n")
                            .utf8))
                exit(0)
            }
        }
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

    /// Whether the request came over TLS: the front ends speak plain HTTP, so only a trusted
    /// reverse proxy's `X-Forwarded-Proto: https` says so.
    public static func overTLS(_ request: Request, peer: String, trusted: [String]) -> Bool {
        trusted.contains(peer) && request.headers[forwardedProto]?.lowercased().hasPrefix("https") == true
    }

    /// `text` as the whole body, byte for byte, with its type (`charset=utf-8`).
    public static func answer(_ text: String, type: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "\(type); charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The headers every answer of a front end carries: its content security policy, no
    /// sniffing, never cached unless the route said otherwise, and `extra` (the desk's framing
    /// and referrer rules).
    public static func secured(_ response: Response, policy: String, extra: HTTPFields = [:]) -> Response {
        var response = response
        response.headers[.contentSecurityPolicy] = policy
        response.headers[.xContentTypeOptions] = "nosniff"
        for field in extra { response.headers[field.name] = field.value }
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }

    /// The guard's shell, the same for both front ends: runs `guarded`, drops the body of an
    /// answer to HEAD (RFC 9110: GET without the body), and secures every answer. An
    /// `HTTPError` is first offered to `own` (the API answers 404 and 413 in its own words);
    /// Hummingbird's answer for it otherwise. Any other error is the front end's to say
    /// (`unexpected`: logged, and answered as the command line would say it).
    public static func shell<Context: RequestContext>(
        _ request: Request, context: Context, secure: (Response) -> Response,
        own: (HTTPError) -> Response? = { _ in nil }, unexpected: (any Error, Request, Context) -> Response,
        guarded: () async throws -> Response
    ) async throws -> Response {
        do {
            var response = try await guarded()
            if request.method == .head { response = Response(status: response.status, headers: response.headers) }
            return secure(response)
        } catch let error as HTTPError {
            return secure(try own(error) ?? error.response(from: request, context: context))
        } catch let error as HTTPResponseError {
            return secure(try error.response(from: request, context: context))
        } catch {
            return secure(unexpected(error, request, context))
        }
    }
}
