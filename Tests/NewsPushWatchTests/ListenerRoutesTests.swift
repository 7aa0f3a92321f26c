import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NewsPushCore
import NewsPushHTTP
import NewsPushLedger
import NewsPushModel
import NewsPushSessions
import NewsPushTesting
import Testing

@testable import NewsPushWatch

/// The watcher's listener in process, route by route (SPEC §10, "The listener faces the
/// internet"), over a SQLite ledger holding one subscription that awaits its hub's verification:
/// nothing guessed (Basic guessing stopped, callbacks only at their token), nothing spoofed
/// (unsigned, forged, oversized distributions never read, never fetching), nothing crashing
/// (hostile leases), and what the health says.
@Suite("The watcher's listener in process")
struct ListenerRoutesTests {
    static let topic = "https://wire.example/topic.xml"
    static let hub = "https://hub.example/hub"

    /// A listener and what it writes to, with its ledger's one subscription.
    struct Listener {
        var app: Application<RouterResponder<WatchContext>>
        var inbox: WatchInbox
        var health: WatchHealth
        var subscription: WebSubSubscription
        var ledgerPath: String

        /// The subscription as the ledger has it now.
        func kept() throws -> WebSubSubscription? {
            try Ledger.open(configured: ledgerPath, access: .read).subscriptions(feeds: [ListenerRoutesTests.topic])
                .values.first
        }
    }

    /// A newsroom of one feed (`topic`, its hub named), a sender `cms` and a reader, and a
    /// listener over it (fetch.max_bytes 4 KB).
    func withListener(_ body: (Listener) async throws -> Void) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let file = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "http://127.0.0.1:9/"}
            fetch: {max_bytes: 4KB}
            api: {users: api-users.yaml, sign_in_failures: 5}
            watch: {callback_url: "https://push.example/websub/", ping_tokens: "topic=topic-token-0123456789"}
            feeds:
              - {url: "\(Self.topic)", name: topic, category: World, websub: "\(Self.hub)"}
            """)
        let config = try ConfigLoader(environment: ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString])
            .load(path: file)
        let path = config.api.usersPath
        try await offThePool { () -> Result<Void, UsersFileError> in
            Result { () throws(UsersFileError) -> Void in
                var users = try ApiUsers.load(path: path)
                try users.set("cms", role: .sender, password: "cms-password-1")
                try users.set("reader", role: .reader, password: "reader-password")
            }
        }.get()
        var subscription = WebSubSubscription(
            feed: Self.topic, links: WebSubLinks(hub: Self.hub, topic: Self.topic), secret: WebSubPolicy.newSecret(),
            token: WebSubPolicy.newToken())
        subscription.state = .requested(mode: "subscribe", at: Date())
        let ledger = try Ledger.open(configured: config.statePath, access: .write)
        try ledger.changeSubscription(feed: Self.topic) { _ in .some(subscription) }
        var logger = Logger(label: "watch-test")
        logger.logLevel = .critical
        let context = SessionContext(config: config, logger: logger)
        let (inbox, health) = (WatchInbox(), WatchHealth())
        let parts = WatchListener.Parts(
            inbox: inbox, callbacks: WebSubCallbacks(context: context), metrics: WatchMetrics(), health: health)
        let app = Application(router: WatchListener(parts: parts, context: context).router())
        try await body(
            Listener(app: app, inbox: inbox, health: health, subscription: subscription, ledgerPath: config.statePath))
    }

    static func basic(_ credential: String) -> HTTPFields {
        [.authorization: "Basic " + Data(credential.utf8).base64EncodedString()]
    }

    static func signed(_ body: String, secret: String) -> HTTPFields {
        let code = HMAC<SHA256>.authenticationCode(for: Data(body.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return [
            HTTPField.Name("X-Hub-Signature")!: "sha256=" + code.map { String(format: "%02x", $0) }.joined(),
            .contentType: "application/rss+xml",
        ]
    }

    static let story =
        #"<rss version="2.0"><channel><title>wire</title><item><title>Dam bursts</title><guid>d1</guid></item></channel></rss>"#

    // Guessing through the ping: a sender's password is checked by the back-end's sign-in rules.
    // Five wrong guesses from a network, then 429 with Retry-After for that name there, the right
    // password included (before, the thirty-first try with the right one was taken at once).
    @Test func guessingASendersPasswordThroughThePingIsStopped() async throws {
        try await withListener { listener in
            try await listener.app.test(.router) { client in
                var statuses: [Int] = []
                for n in 0..<30 {
                    let answer = try await client.execute(
                        uri: "/ping/topic", method: .post, headers: Self.basic("cms:guess-\(n)"))
                    statuses.append(answer.status.code)
                    if answer.status == .tooManyRequests {
                        #expect(Int(answer.headers[FrontEnd.retryAfter] ?? "") ?? 0 > 0)
                    }
                }
                #expect(statuses.prefix(5).allSatisfy { $0 == 401 }, "\(statuses)")
                #expect(statuses.dropFirst(5).allSatisfy { $0 == 429 }, "\(statuses)")
                let right = try await client.execute(
                    uri: "/ping/topic", method: .post, headers: Self.basic("cms:cms-password-1"))
                #expect(right.status == .tooManyRequests, "the right password is not let in from here now")
                #expect(listener.inbox.takeForTests().pings.isEmpty, "no ping was taken")
            }
        }
    }

    // A sender pings; a reader may not; the feed's token may, as a header or (for a CMS whose
    // webhooks send no header, such as Ghost) in the query; a wrong token is 401.
    @Test func whoMayPing() async throws {
        try await withListener { listener in
            try await listener.app.test(.router) { client in
                let sender = try await client.execute(
                    uri: "/ping/topic", method: .post, headers: Self.basic("cms:cms-password-1"))
                #expect(sender.status == .accepted)
                let reader = try await client.execute(
                    uri: "/ping/topic", method: .post, headers: Self.basic("reader:reader-password"))
                #expect(reader.status == .unauthorized && reader.headers[.wwwAuthenticate] != nil)
                let bearer = try await client.execute(
                    uri: "/ping/topic", method: .post, headers: [.authorization: "Bearer topic-token-0123456789"])
                #expect(bearer.status == .accepted)
                let query = try await client.execute(uri: "/ping/topic?token=topic-token-0123456789", method: .post)
                #expect(query.status == .accepted)
                let wrong = try await client.execute(uri: "/ping/topic?token=topic-token-0123456780", method: .post)
                #expect(wrong.status == .unauthorized)
                let unknown = try await client.execute(uri: "/ping/nosuch", method: .post)
                #expect(unknown.status == .notFound)
                #expect(listener.inbox.takeForTests().pings.keys.sorted() == [Self.topic])
            }
        }
    }

    // Nothing unsigned fetches: a distribution without a signature, with a wrong one, or over
    // fetch.max_bytes is acknowledged (202) and ignored: no document and no ping (before, one too
    // large was turned into a fetch). Only a signed one is read.
    @Test func aDistributionIsReadOnlyWhenSignedAndNeverFetches() async throws {
        try await withListener { listener in
            let path = "/websub/topic/\(listener.subscription.token)"
            try await listener.app.test(.router) { client in
                let unsigned = try await client.execute(
                    uri: path, method: .post, headers: [.contentType: "application/rss+xml"],
                    body: ByteBuffer(string: Self.story))
                #expect(unsigned.status == .accepted)
                let forged = try await client.execute(
                    uri: path, method: .post, headers: Self.signed(Self.story, secret: "not the secret"),
                    body: ByteBuffer(string: Self.story))
                #expect(forged.status == .accepted)
                let huge = String(repeating: "<!-- padding -->", count: 600) + Self.story
                let oversized = try await client.execute(
                    uri: path, method: .post, headers: Self.signed(huge, secret: listener.subscription.secret),
                    body: ByteBuffer(string: huge))
                #expect(oversized.status == .accepted)
                var arrived = listener.inbox.takeForTests()
                #expect(arrived.documents.isEmpty && arrived.pings.isEmpty, "nothing read, nothing fetched")
                let good = try await client.execute(
                    uri: path, method: .post, headers: Self.signed(Self.story, secret: listener.subscription.secret),
                    body: ByteBuffer(string: Self.story))
                #expect(good.status == .accepted)
                arrived = listener.inbox.takeForTests()
                #expect(arrived.documents[Self.topic].map { String(decoding: $0.body, as: UTF8.self) } == Self.story)
            }
        }
    }

    // Callbacks are not guessable: only `/websub/{feed}/{token}` of the subscription answers;
    // the feed's name alone, another token, a short one or another feed's segment is 404 and
    // changes nothing.
    @Test func onlyTheSubscriptionsOwnPathIsACallback() async throws {
        try await withListener { listener in
            let token = listener.subscription.token
            let query =
                "hub.mode=subscribe&hub.topic=\(Self.encoded(Self.topic))&hub.challenge=c-123&hub.lease_seconds=60"
            try await listener.app.test(.router) { client in
                for path in [
                    "/websub/topic", "/websub/topic/\(WebSubPolicy.newToken())", "/websub/topic/\(token.prefix(16))",
                    "/websub/other/\(token)", "/websub/topic/\(token.uppercased())",
                ] {
                    let verification = try await client.execute(uri: path + "?" + query, method: .get)
                    #expect(verification.status == .notFound, "\(path)")
                    #expect(!String(buffer: verification.body).contains("c-123"))
                    let distribution = try await client.execute(
                        uri: path, method: .post,
                        headers: Self.signed(Self.story, secret: listener.subscription.secret),
                        body: ByteBuffer(string: Self.story))
                    #expect(distribution.status == .notFound, "\(path)")
                }
                #expect(try listener.kept()?.state == listener.subscription.state, "nothing changed")
                #expect(listener.inbox.takeForTests().documents.isEmpty)
            }
        }
    }

    // 3 and 10. A verification is answered only for the topic and mode asked for; a lease that is
    // no whole number (1e308, inf, nan, 10^20: before, each crashed the watcher) is refused and
    // changes nothing; a lease of any length is taken as at most 10 days.
    @Test func verificationsForWhatWasNotAskedOrWithHostileLeasesAreRefused() async throws {
        try await withListener { listener in
            let path = "/websub/topic/\(listener.subscription.token)"
            @Sendable func query(mode: String = "subscribe", topic: String = Self.topic, lease: String) -> String {
                "\(path)?hub.mode=\(mode)&hub.topic=\(Self.encoded(topic))&hub.challenge=c-42&hub.lease_seconds=\(lease)"
            }
            try await listener.app.test(.router) { client in
                for uri in [
                    query(topic: "https://evil.example/feed", lease: "60"), query(mode: "unsubscribe", lease: "60"),
                    query(lease: "1e308"), query(lease: "inf"), query(lease: "nan"),
                    query(lease: "100000000000000000000"), query(lease: "-5"),
                ] {
                    let answer = try await client.execute(uri: uri, method: .get)
                    #expect(answer.status == .notFound && !String(buffer: answer.body).contains("c-42"), "\(uri)")
                }
                #expect(try listener.kept()?.state == listener.subscription.state, "still awaiting its verification")
                let before = Date()
                let granted = try await client.execute(uri: query(lease: "999999999"), method: .get)
                #expect(granted.status == .ok && String(buffer: granted.body) == "c-42")
                guard case .active(let until, _) = try listener.kept()?.state else {
                    Issue.record("not active: \(String(describing: try listener.kept()))")
                    return
                }
                #expect(until <= before.addingTimeInterval(10 * 86400 + 60), "capped at 10 days: \(until)")
                let again = try await client.execute(uri: query(lease: "60"), method: .get)
                #expect(again.status == .notFound, "verified once: not asked for now")
            }
        }
    }

    // A denial at the subscription's own path is taken (asked again later); at another, not.
    @Test func aDenialIsTakenOnlyAtTheSubscriptionsPath() async throws {
        try await withListener { listener in
            let denial = "hub.mode=denied&hub.topic=\(Self.encoded(Self.topic))&hub.reason=no"
            try await listener.app.test(.router) { client in
                let elsewhere = try await client.execute(
                    uri: "/websub/topic/\(WebSubPolicy.newToken())?\(denial)", method: .get)
                #expect(elsewhere.status == .notFound)
                let denied = try await client.execute(
                    uri: "/websub/topic/\(listener.subscription.token)?\(denial)", method: .get)
                #expect(denied.status == .ok)
                guard case .retrying = try listener.kept()?.state else {
                    Issue.record("not retrying: \(String(describing: try listener.kept()))")
                    return
                }
            }
        }
    }

    // A network that keeps asking for what it may not have (a flood of bad pings) is answered
    // 429 with Retry-After before anything is checked.
    @Test func aFloodOfBadPingsIsAnswered429() async throws {
        try await withListener { listener in
            try await listener.app.test(.router) { client in
                var statuses: [Int] = []
                for n in 0..<40 {
                    let answer = try await client.execute(
                        uri: "/ping/topic", method: .post, headers: [.authorization: "Bearer wrong-token-\(n)-000000"])
                    statuses.append(answer.status.code)
                }
                #expect(statuses.prefix(30).allSatisfy { $0 == 401 }, "\(statuses)")
                #expect(statuses.dropFirst(30).allSatisfy { $0 == 429 }, "\(statuses)")
            }
        }
    }

    // HEAD /healthz and /metrics answer as GET without the body; the health says what the
    // loop knows (503 once the loop or the leases failed), not a constant.
    @Test func healthAndMetricsAnswerHeadAndTheHealthIsTheLoops() async throws {
        try await withListener { listener in
            try await listener.app.test(.router) { client in
                for uri in ["/healthz", "/metrics"] {
                    let head = try await client.execute(uri: uri, method: .head)
                    #expect(head.status == .ok && head.body.readableBytes == 0, "\(uri)")
                }
                #expect(String(buffer: try await client.execute(uri: "/healthz", method: .get).body) == "ok\n")
                listener.health.failed("loop", "ledger x is corrupt")
                let sick = try await client.execute(uri: "/healthz", method: .get)
                #expect(sick.status == .serviceUnavailable && sick.headers[FrontEnd.retryAfter] != nil)
                #expect(!String(buffer: sick.body).contains("corrupt"), "a stranger is told only unavailable")
            }
        }
    }

    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }
}
