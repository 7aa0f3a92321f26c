import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NewsPushCore
import NewsPushHTTP
import NewsPushSessions

/// The WebSub callback (W3C WebSub §5.3 and §7), at `/websub/{feed}/{token}`: only a
/// subscription's own path answers, and only what was asked for changes anything.
struct WebSubRoutes {
    let listener: WatchListener
    private var parts: WatchListener.Parts { listener.parts }
    private var logger: Logger { listener.context.logger }

    func add(to router: Router<WatchContext>) {
        router.get("/websub/:feed/:token", use: verification)
        router.post("/websub/:feed/:token", use: distribution)
        // A feed's path without a token (or any other) is nobody's callback.
        router.get("/websub/:feed", use: nobodys)
        router.post("/websub/:feed", use: nobodys)
    }

    @Sendable func nobodys(_ request: Request, context: WatchContext) -> Response {
        listener.penalties.refused(context.network, now: listener.context.clock.now())
        return WatchListener.text("no such callback\n", .notFound)
    }

    /// The hub's verification of intent (§5.3), or its denial (§5.2): the challenge is echoed
    /// only for the subscription this path's token names, requested in this mode, for this
    /// topic; a lease that is no whole number of seconds is refused, a longer one than 10 days
    /// is taken as 10 days.
    @Sendable func verification(_ request: Request, context: WatchContext) throws -> Response {
        let query = request.uri.queryParameters
        let (segment, token) = (context.parameters.get("feed") ?? "", context.parameters.get("token") ?? "")
        guard let mode = query.get("hub.mode"), let topic = query.get("hub.topic") else {
            return refused(context, "a verification names hub.mode and hub.topic")
        }
        if mode == "denied" {
            let reason = String((query.get("hub.reason") ?? "no reason given").prefix(200))
            guard try parts.callbacks.denied(segment: segment, token: token, topic: topic, reason: reason) else {
                return refused(context, "no such subscription")
            }
            logger.warning("watch: the hub denied the subscription to \(topic): \(reason); asking again later")
            return WatchListener.text("ok\n")
        }
        guard let lease = WebSubPolicy.leaseSeconds(query.get("hub.lease_seconds")) else {
            return refused(context, "hub.lease_seconds is a whole number of seconds")
        }
        guard let challenge = query.get("hub.challenge"), !challenge.isEmpty, challenge.utf8.count <= 512,
            try parts.callbacks.verify(
                segment: segment, token: token, mode: mode, topic: topic, leaseSeconds: lease)
        else {
            logger.warning("watch: refused a WebSub verification (\(mode) of \(topic)) this watcher did not ask for")
            return refused(context, "not asked for")
        }
        let days = min(WebSubPolicy.longestLease, lease ?? WebSubPolicy.defaultLease)
        logger.notice("watch: WebSub \(mode) of \(topic) verified (lease \(Int(days)) s)")
        return WatchListener.text(challenge)
    }

    /// A distribution (§7): acknowledged whatever it holds (a hub retries only a failure), read
    /// only when its `X-Hub-Signature` is valid for the subscription's secret. Nothing unsigned
    /// ever fetches: one without a signature is not read, one over `fetch.max_bytes` or cut off
    /// is ignored; more than a few at once are asked to come back (503).
    @Sendable func distribution(_ request: Request, context: WatchContext) async throws -> Response {
        let acknowledged = WatchListener.text("", .accepted)
        let (segment, token) = (context.parameters.get("feed") ?? "", context.parameters.get("token") ?? "")
        guard let callback = try parts.callbacks.callback(segment: segment, token: token) else {
            parts.metrics.distributed(valid: false)
            return refused(context, "no such callback")
        }
        let signature = request.headers[FrontEnd.field("X-Hub-Signature")]
        guard let signature, WebSubSignature.method(of: signature) != nil else {
            return ignored(context, acknowledged, "a WebSub distribution of \(callback.feed) without a valid signature")
        }
        guard listener.bodies.enter() else {
            return WatchListener.later(.serviceUnavailable, "too many distributions at once", retryAfter: 5)
        }
        let body: ByteBuffer
        do {
            defer { listener.bodies.leave() }
            body = try await request.body.collect(upTo: listener.context.config.fetch.maxBytes)
        } catch {
            return ignored(
                context, acknowledged, "a WebSub distribution of \(callback.feed) over fetch.max_bytes or cut off")
        }
        let data = Data(buffer: body)
        guard WebSubSignature.isValid(signature, body: data, secret: callback.subscription.secret) else {
            return ignored(context, acknowledged, "a WebSub distribution of \(callback.feed) without a valid signature")
        }
        parts.metrics.distributed(valid: true)
        var document = FetchedFeed(
            url: callback.feed, status: .ok, httpStatus: 200, body: data, contentType: request.headers[.contentType],
            finalURL: callback.feed)
        document.linkHeader = request.headers[values: FrontEnd.field("Link")].joined(separator: ", ")
        parts.inbox.deliver(feed: callback.feed, document: document)
        return acknowledged
    }

    private func refused(_ context: WatchContext, _ why: String) -> Response {
        listener.penalties.refused(context.network, now: listener.context.clock.now())
        return WatchListener.text(why + "\n", .notFound)
    }

    private func ignored(_ context: WatchContext, _ acknowledged: Response, _ what: String) -> Response {
        parts.metrics.distributed(valid: false)
        listener.penalties.refused(context.network, now: listener.context.clock.now())
        logger.warning("watch: ignored \(what)")
        return acknowledged
    }
}
