import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NewsPushCore
import NewsPushHTTP
import NewsPushSessions

/// The publish ping (SPEC §10): `POST /ping/{feed}` with the feed's token (`Authorization:
/// Bearer`, or `?token=` for a CMS whose webhooks send no header, such as Ghost), or an app
/// back-end sender's Basic credential, checked by the same sign-in rules as the back-end; `202`,
/// and the feed is fetched at once by this watcher, whichever holds it.
struct PingRoutes {
    let listener: WatchListener

    func add(to router: Router<WatchContext>) {
        router.post("/ping/:feed", use: ping)
    }

    @Sendable func ping(_ request: Request, context: WatchContext) async -> Response {
        let now = listener.context.clock.now()
        guard let segment = context.parameters.get("feed"),
            let feed = WatchFeeds.find(segment, in: listener.context.config.feeds)
        else {
            listener.penalties.refused(context.network, now: now)
            return ApiStyle.error(.notFound, "no such feed")
        }
        switch await allowed(request, feed: feed, network: context.network, now: now) {
        case .allowed:
            listener.parts.metrics.pinged()
            listener.parts.inbox.ping(feed: feed.url, at: now)
            return ApiStyle.json(
                PingAnswer(feed: WatchFeeds.id(feed), status: "fetching").json, status: .accepted)
        case .refused(let why):
            listener.penalties.refused(context.network, now: now)
            listener.context.logger.warning(
                "watch: refused a ping of \(WatchFeeds.id(feed)) from \(context.address): \(why)")
            var refused = ApiStyle.error(
                .unauthorized, "a ping needs the feed's token (Bearer) or a sender's credential (Basic)")
            refused.headers[.wwwAuthenticate] = "Bearer realm=\"newspush watch\", Basic realm=\"newspush watch\""
            return refused
        case .later(let seconds, let why):
            listener.context.logger.warning(
                "watch: refused a ping of \(WatchFeeds.id(feed)) from \(context.address): \(why)")
            var later = ApiStyle.error(.tooManyRequests, why)
            later.headers[FrontEnd.retryAfter] = String(seconds)
            return later
        }
    }

    enum Verdict {
        case allowed
        /// Why (never the credential itself).
        case refused(String)
        case later(Int, String)
    }

    /// Whether the request may ping `feed`: its token, or a sender's Basic credential.
    private func allowed(_ request: Request, feed: FeedSettings, network: String, now: Date) async -> Verdict {
        let token = listener.context.config.watch.pingTokens[WatchFeeds.id(feed)]
        if let given = request.uri.queryParameters.get("token") {
            guard let token, Self.sameSecret(String(given), token) else { return .refused("a wrong token") }
            return .allowed
        }
        guard let header = request.headers[.authorization], let (scheme, credential) = BasicCredential.split(header)
        else { return .refused("no credential") }
        switch scheme {
        case "bearer":
            guard let token, Self.sameSecret(credential, token) else { return .refused("a wrong token") }
            return .allowed
        case "basic":
            guard let (name, password) = BasicCredential.parse(credential) else {
                return .refused("a malformed Basic credential")
            }
            switch await listener.passwords.check(name: name, password: password, network: network, now: now) {
            case .signedIn(.sender): return .allowed
            case .signedIn: return .refused("\(name) is not a sender")
            case .wrong: return .refused("a wrong name or password")
            case .tooMany(let wait): return .later(wait, "too many failed sign-ins for \(name)")
            case .busy: return .later(1, "too many sign-ins being checked")
            }
        default:
            return .refused("the scheme is neither Bearer nor Basic")
        }
    }

    /// Whether two secrets are equal, in a time that does not depend on where they differ (their
    /// HMACs are compared with swift-crypto's constant-time check).
    static func sameSecret(_ given: String, _ expected: String) -> Bool {
        let key = SymmetricKey(data: Data(expected.utf8))
        let code = HMAC<SHA256>.authenticationCode(for: Data(given.utf8), using: key)
        return HMAC<SHA256>.isValidAuthenticationCode(Data(code), authenticating: Data(expected.utf8), using: key)
    }
}

/// A ping's answer.
struct PingAnswer: Encodable {
    var feed: String
    var status: String

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self) + "\n"
    }
}

/// JSON answers in the app back-end's style (`{"error": "…"}`).
enum ApiStyle {
    static func json(_ text: String, status: HTTPResponse.Status) -> Response {
        FrontEnd.answer(text, type: "application/json", status: status)
    }

    static func error(_ status: HTTPResponse.Status, _ why: String) -> Response {
        struct Refusal: Encodable { var error: String }
        let data = (try? JSONEncoder().encode(Refusal(error: why))) ?? Data("{}".utf8)
        return json(String(decoding: data, as: UTF8.self) + "\n", status: status)
    }
}
