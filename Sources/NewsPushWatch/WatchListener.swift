import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NewsPushCore
import NewsPushHTTP
import NewsPushSessions

/// The watcher's listener (`watch.listen`, SPEC §10): the WebSub callbacks, the publish pings,
/// `/metrics` and `/healthz`. Its handlers only check and hand over: what arrives goes into the
/// watcher's inbox, and the loop does the work under the ledger's lock.
public struct WatchListener: Sendable {
    /// The watcher's inbox.
    public var inbox: WatchInbox
    /// The configured feeds (the paths name them).
    public var feeds: [FeedSettings]
    /// The config's `watch:`.
    public var settings: WatchSettings
    /// The largest distribution taken (`fetch.max_bytes`, as for a fetch).
    public var maxBytes: Int
    /// The app back-end's users file: a sender's Basic credential may ping any feed.
    public var apiUsersPath: String
    /// What `/metrics` reports.
    public var metrics: WatchMetrics
    /// Where it logs.
    public var logger: Logger

    /// A listener over `inbox` for `config`'s feeds.
    public init(inbox: WatchInbox, config: NewsPushConfig, metrics: WatchMetrics, logger: Logger) {
        self.inbox = inbox
        feeds = config.feeds
        settings = config.watch
        maxBytes = config.fetch.maxBytes
        apiUsersPath = config.api.usersPath
        self.metrics = metrics
        self.logger = logger
    }

    /// Serves until SIGTERM or SIGINT; `onReady` receives the bound port.
    public func run(address: ListenAddress, onReady: @escaping @Sendable (Int) async -> Void) async throws {
        try await FrontEnd.serve(router(), name: "watch", address: address, logger: logger, onReady: onReady)
    }

    /// The routes.
    public func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.get("/healthz") { _, _ in FrontEnd.answer("ok\n", type: "text/plain") }
        router.get("/metrics") { _, _ in
            FrontEnd.answer(
                metrics.text(subscriptions: inbox.activeSubscriptions(at: Date())), type: "text/plain; version=0.0.4")
        }
        router.get("/websub/:feed") { request, context in verification(request, feed: context.parameters.get("feed")) }
        router.post("/websub/:feed") { request, context in
            await distribution(request, feed: context.parameters.get("feed"))
        }
        router.post("/ping/:feed") { request, context in await ping(request, feed: context.parameters.get("feed")) }
        return router
    }

    /// The hub's verification of intent (§5.3), or its denial (§5.2): the challenge is echoed
    /// only for a subscription this watcher asked for, in this mode, for this topic.
    func verification(_ request: Request, feed segment: String?) -> Response {
        let query = request.uri.queryParameters
        guard let feed = segment.flatMap({ WatchFeeds.find($0, in: feeds) }),
            let mode = query.get("hub.mode"), let topic = query.get("hub.topic")
        else { return FrontEnd.answer("unknown feed or request\n", type: "text/plain", status: .notFound) }
        let now = Date()
        if mode == "denied" {
            let reason = query.get("hub.reason") ?? "no reason given"
            guard inbox.denied(feed: feed.url, topic: topic, reason: reason, at: now) else {
                return FrontEnd.answer("no such subscription\n", type: "text/plain", status: .notFound)
            }
            logger.warning("watch: the hub denied the subscription to \(topic): \(reason); asking again later")
            return FrontEnd.answer("ok\n", type: "text/plain")
        }
        let lease = query.get("hub.lease_seconds").flatMap(Double.init)
        guard let challenge = query.get("hub.challenge"),
            inbox.verify(feed: feed.url, mode: mode, topic: topic, leaseSeconds: lease, at: now)
        else {
            logger.warning("watch: refused a WebSub verification (\(mode) of \(topic)) this watcher did not ask for")
            return FrontEnd.answer("not asked for\n", type: "text/plain", status: .notFound)
        }
        logger.notice("watch: WebSub \(mode) of \(topic) verified (lease \(lease.map { "\(Int($0)) s" } ?? "unset"))")
        return FrontEnd.answer(challenge, type: "text/plain")
    }

    /// A distribution (§7): acknowledged whatever it holds (a hub retries only a failure); read
    /// in the next cycle only when its `X-Hub-Signature` is valid for the subscription's
    /// secret. One too large for `fetch.max_bytes` is not read: the feed is fetched instead.
    func distribution(_ request: Request, feed segment: String?) async -> Response {
        let acknowledged = FrontEnd.answer("", type: "text/plain", status: .accepted)
        guard let feed = segment.flatMap({ WatchFeeds.find($0, in: feeds) }) else {
            metrics.distributed(valid: false)
            return FrontEnd.answer("unknown feed\n", type: "text/plain", status: .notFound)
        }
        guard let buffer = try? await request.body.collect(upTo: maxBytes) else {
            metrics.distributed(valid: false)
            logger.warning("watch: a WebSub distribution of \(feed.url) is over fetch.max_bytes; fetching it instead")
            inbox.ping(feed: feed.url, at: Date())
            return acknowledged
        }
        let body = Data(buffer: buffer)
        guard let secret = inbox.secret(feed: feed.url),
            WebSubSignature.isValid(request.headers[FrontEnd.field("X-Hub-Signature")], body: body, secret: secret)
        else {
            metrics.distributed(valid: false)
            logger.warning("watch: ignored a WebSub distribution of \(feed.url) without a valid X-Hub-Signature")
            return acknowledged
        }
        metrics.distributed(valid: true)
        var document = FetchedFeed(
            url: feed.url, status: .ok, httpStatus: 200, body: body, contentType: request.headers[.contentType],
            finalURL: feed.url)
        document.linkHeader = request.headers[values: FrontEnd.field("Link")].joined(separator: ", ")
        inbox.deliver(feed: feed.url, document: document)
        return acknowledged
    }

    /// A publish ping: `Authorization: Bearer` the feed's token (`watch.ping_tokens`), or a
    /// sender's Basic credential of the app back-end; 202, and the feed is fetched now.
    func ping(_ request: Request, feed segment: String?) async -> Response {
        guard let feed = segment.flatMap({ WatchFeeds.find($0, in: feeds) }) else {
            return FrontEnd.answer("{\"error\":\"no such feed\"}\n", type: "application/json", status: .notFound)
        }
        guard
            await PingAuthorization.allows(
                request.headers[.authorization], feed: feed, settings: settings, usersPath: apiUsersPath)
        else {
            var refused = FrontEnd.answer(
                "{\"error\":\"a ping needs the feed's token (Bearer) or a sender's credential (Basic)\"}\n",
                type: "application/json", status: .unauthorized)
            refused.headers[.wwwAuthenticate] = "Bearer realm=\"newspush watch\", Basic realm=\"newspush watch\""
            return refused
        }
        metrics.pinged()
        inbox.ping(feed: feed.url, at: Date())
        return FrontEnd.answer(
            "{\"feed\":\"\(WatchFeeds.id(feed).jsonEscaped)\",\"status\":\"fetching\"}\n", type: "application/json",
            status: .accepted)
    }
}

extension String {
    /// The string's content as it goes between JSON quotes.
    fileprivate var jsonEscaped: String {
        let data = (try? JSONEncoder().encode(self)) ?? Data("\"\"".utf8)
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }
}
