import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NewsPushCore
import NewsPushHTTP
import NewsPushSessions
import Synchronization

/// The request context of the watcher's listener: who is calling, from which network.
public struct WatchContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address: the connection's.
    let peer: String
    /// The client's address: the peer's, or behind a trusted proxy its `X-Forwarded-For`'s.
    var address: String
    /// The client's network (`ClientNetwork`): what the penalties and the sign-in counts count.
    var network = ""

    /// The context of one request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress?.ipAddress ?? "unknown"
        address = peer
    }

    /// No route reads a body through the context: a distribution's is read by its handler, once
    /// the path and signature header are known good, up to `fetch.max_bytes`.
    public var maxUploadSize: Int { 0 }
}

/// The watcher's listener (`watch.listen`, SPEC §10): the WebSub callbacks, the publish pings,
/// `/metrics` and `/healthz`. It faces the internet (the hubs and the CMS must reach it), so it
/// is a guard first and handlers second, as the app back-end is: every request's network is
/// known and one that keeps asking for what it may not have is answered 429 before anything is
/// read; a callback path is a subscription's random token; a body is read only for a known
/// callback with a signature header, at most a few at once, at most `fetch.max_bytes`; a ping's
/// Basic credential goes through the one `PasswordCheck`. Its handlers check and hand over to the
/// inbox; the loop does the work under the ledger's lock.
public struct WatchListener: Sendable {
    /// What the listener works with.
    public struct Parts: Sendable {
        /// The watcher's inbox.
        public var inbox: WatchInbox
        /// The subscriptions (the ledger's, shared by the watchers).
        public var callbacks: WebSubCallbacks
        /// What `/metrics` reports.
        public var metrics: WatchMetrics
        /// What `/healthz` says.
        public var health: WatchHealth

        /// The listener's parts.
        public init(inbox: WatchInbox, callbacks: WebSubCallbacks, metrics: WatchMetrics, health: WatchHealth) {
            self.inbox = inbox
            self.callbacks = callbacks
            self.metrics = metrics
            self.health = health
        }
    }

    let parts: Parts
    let context: SessionContext
    let passwords: PasswordCheck<ApiRole>
    let penalties = Penalties()
    let bodies = BodyGate(limit: 4)

    /// A listener over `parts` for `context`'s feeds; a sender's Basic credential (`api.users`)
    /// may ping, checked by the back-end's sign-in rules.
    public init(parts: Parts, context: SessionContext) {
        self.parts = parts
        self.context = context
        // One bcrypt thread: a CMS pings rarely, and a flood of guesses takes at most one core
        // from the watcher's cycles.
        passwords = PasswordCheck(
            usersPath: context.config.api.usersPath, limits: .init(failures: context.config.api.signInFailures),
            threads: 1)
    }

    /// Serves until SIGTERM or SIGINT; `onReady` receives the bound port.
    public func run(address: ListenAddress, onReady: @escaping @Sendable (Int) async -> Void) async throws {
        try await FrontEnd.serve(router(), name: "watch", address: address, logger: context.logger, onReady: onReady)
    }

    /// The routes behind the guard.
    public func router() -> Router<WatchContext> {
        let router = Router(context: WatchContext.self)
        router.add(middleware: ListenerGuard(listener: self))
        ServiceRoutes(listener: self).add(to: router)
        WebSubRoutes(listener: self).add(to: router)
        PingRoutes(listener: self).add(to: router)
        return router
    }

    /// A small plain-text answer.
    static func text(_ text: String, _ status: HTTPResponse.Status = .ok) -> Response {
        FrontEnd.answer(text, type: "text/plain", status: status)
    }

    /// `status` with `Retry-After: seconds`.
    static func later(_ status: HTTPResponse.Status, _ why: String, retryAfter seconds: Int) -> Response {
        var response = text(why + "\n", status)
        response.headers[FrontEnd.retryAfter] = String(seconds)
        return response
    }
}

/// Before any route: the client's address and network, and a network that has been refused too
/// often lately is answered 429 at once; after: HEAD without a body and the security headers.
struct ListenerGuard: RouterMiddleware {
    typealias Context = WatchContext
    let listener: WatchListener

    func handle(_ request: Request, context: WatchContext, next: (Request, WatchContext) async throws -> Response)
        async throws -> Response
    {
        var context = context
        let api = listener.context.config.api
        context.address = FrontEnd.clientAddress(request, peer: context.peer, trusted: api.trustedProxies)
        context.network = ClientNetwork.key(context.address, ipv4Prefix: api.ipv4Prefix, ipv6Prefix: api.ipv6Prefix)
        let now = listener.context.clock.now()
        return try await FrontEnd.shell(
            request, context: context, secure: { FrontEnd.secured($0, policy: "default-src 'none'") },
            unexpected: { error, _, _ in WatchListener.later(.serviceUnavailable, "\(error)", retryAfter: 5) }
        ) {
            if let wait = listener.penalties.waiting(context.network, now: now) {
                return WatchListener.later(
                    .tooManyRequests, "too many refused requests from this network", retryAfter: wait)
            }
            return try await next(request, context)
        }
    }
}

/// Networks that keep asking for what they may not have (unknown callbacks, bad signatures, bad
/// ping credentials): 30 such requests a minute, then 429 until the bucket refills. A hub's or a
/// CMS's own good requests never count.
final class Penalties: Sendable {
    private let buckets = RateLimits(capacity: 100_000)
    static let perMinute = 30

    /// Counts a refused request from `network`.
    func refused(_ network: String, now: Date) {
        _ = buckets.take(network, count: Self.perMinute, per: 60, now: now)
    }

    /// Seconds until `network` is heard again, or nil.
    func waiting(_ network: String, now: Date) -> Int? {
        buckets.waiting(network, count: Self.perMinute, per: 60, now: now)
    }
}

/// At most `limit` request bodies read at once (each up to `fetch.max_bytes`).
final class BodyGate: Sendable {
    private let reading = Atomic<Int>(0)
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Whether one more may be read now; `leave` once it is read.
    func enter() -> Bool {
        guard reading.add(1, ordering: .relaxed).newValue <= limit else {
            reading.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func leave() { reading.subtract(1, ordering: .relaxed) }
}

/// `/healthz` and `/metrics` (GET and HEAD).
struct ServiceRoutes {
    let listener: WatchListener

    func add(to router: Router<WatchContext>) {
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/healthz", method: method, use: health)
            router.on("/metrics", method: method, use: metrics)
        }
    }

    /// 200 `ok` while the loop and the lease keeper last found the ledger usable; else 503 (the
    /// reason for a caller on this machine, only `unavailable` for others).
    @Sendable func health(_ request: Request, context: WatchContext) -> Response {
        guard let problem = listener.parts.health.problem else { return WatchListener.text("ok\n") }
        let told = ClientNetwork.isLoopback(context.address)
        return WatchListener.later(
            .serviceUnavailable, told ? "unavailable: \(problem)" : "unavailable", retryAfter: 30)
    }

    @Sendable func metrics(_ request: Request, context: WatchContext) -> Response {
        let active = (try? listener.parts.callbacks.activeCount()) ?? 0
        return FrontEnd.answer(
            listener.parts.metrics.text(subscriptions: active), type: "text/plain; version=0.0.4")
    }
}
