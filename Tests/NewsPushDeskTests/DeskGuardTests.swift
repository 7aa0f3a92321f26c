import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NewsPushCore
import NewsPushDesk
import NewsPushHTTP
import NewsPushSessions
import NewsPushTesting
import Testing

/// The desk's guard, forms and answers in process, through Hummingbird's testing framework:
/// sign-in, sessions, CSRF, roles and SPEC §8's headers, on every machine.
@Suite("The desk in process")
struct DeskGuardTests {
    /// A newsroom whose users file has editor alice and viewer vera, and its desk's application.
    func application(_ folder: TemporaryFolder) async throws -> some ApplicationProtocol {
        let file = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "http://127.0.0.1:1/"}
            desk: {users: desk-users.yaml}
            feeds:
              - {url: "http://127.0.0.1:1/w.xml", category: World}
            """)
        let config = try ConfigLoader(environment: ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString])
            .load(path: file)
        // bcrypt is slow on purpose: off the concurrency pool, which the feed servers of the
        // other tests in this process run on.
        let path = config.deskUsersPath
        let written = await offThePool { () -> UsersFileError? in
            do {
                var users = try DeskUsers.load(path: path)
                try users.set("alice", role: .editor, password: "alice-password")
                try users.set("vera", role: .viewer, password: "vera-password")
                return nil
            } catch {
                return error as? UsersFileError
            }
        }
        if let written { throw written }
        var logger = Logger(label: "desk-test")
        logger.logLevel = .critical
        return Application(router: DeskServer.router(Desk(context: SessionContext(config: config, logger: logger))))
    }

    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    /// Signs in; the session cookie and the page's CSRF token.
    func signIn(_ client: some TestClientProtocol, _ user: String) async throws -> (cookie: String, csrf: String) {
        let answer = try await client.execute(
            uri: "/login", method: .post, headers: Self.form,
            body: ByteBuffer(string: "user=\(user)&password=\(user)-password"))
        #expect(answer.status == .seeOther)
        let cookie = try #require(answer.headers[.setCookie]?.split(separator: ";").first.map(String.init))
        let page = try await client.execute(uri: "/", method: .get, headers: [.cookie: cookie])
        let body = String(buffer: page.body)
        let range = try #require(body.range(of: #"name="csrf-token" content="[^"]+""#, options: .regularExpression))
        return (cookie, String(body[range].split(separator: "\"").last ?? ""))
    }

    func secured(_ headers: HTTPFields) -> Bool {
        headers[.contentSecurityPolicy] != nil && headers[.xContentTypeOptions] == "nosniff"
            && headers[HTTPField.Name("Referrer-Policy")!] == "same-origin"
    }

    @Test func withoutASessionNothingIsShown() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await application(folder).test(.router) { client in
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.status == .seeOther && page.headers[.location] == "/login")
            let api = try await client.execute(uri: "/api/review", method: .get)
            #expect(api.status == .unauthorized)
            #expect(secured(page.headers) && secured(api.headers))
            let wrong = try await client.execute(
                uri: "/login", method: .post, headers: Self.form, body: ByteBuffer(string: "user=alice&password=nope"))
            #expect(wrong.status == .unauthorized && wrong.headers[.setCookie] == nil)
        }
    }

    @Test func aSessionIsHttpOnlyStrictAndPostsNeedTheTokenAndAnEditor() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await application(folder).test(.router) { client in
            let answer = try await client.execute(
                uri: "/login", method: .post, headers: Self.form,
                body: ByteBuffer(string: "user=alice&password=alice-password"))
            let cookie = answer.headers[.setCookie] ?? ""
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && !cookie.contains("Secure"))
            let alice = try await signIn(client, "alice")
            let publish = "category=World&title=In+process&dry_run=1"
            let noToken = try await client.execute(
                uri: "/api/publish", method: .post, headers: Self.form + [.cookie: alice.cookie],
                body: ByteBuffer(string: publish))
            #expect(noToken.status == .forbidden)
            let withToken = try await client.execute(
                uri: "/api/publish", method: .post,
                headers: Self.form + [.cookie: alice.cookie, HTTPField.Name("X-CSRF-Token")!: alice.csrf],
                body: ByteBuffer(string: publish))
            #expect(withToken.status == .ok, "\(String(buffer: withToken.body))")
            let vera = try await signIn(client, "vera")
            let viewer = try await client.execute(
                uri: "/api/publish", method: .post,
                headers: Self.form + [.cookie: vera.cookie, HTTPField.Name("X-CSRF-Token")!: vera.csrf],
                body: ByteBuffer(string: publish))
            #expect(viewer.status == .forbidden && secured(viewer.headers))
        }
    }

    @Test func malformedFormsAndQueriesAreAnswered() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try await application(folder).test(.router) { client in
            let alice = try await signIn(client, "alice")
            var random = SystemRandomNumberGenerator()
            for _ in 0..<200 {
                let text = hostileFormText(using: &random)
                let login = try await client.execute(
                    uri: "/login", method: .post, headers: Self.form, body: ByteBuffer(string: text))
                #expect(login.status.code < 500, "\(text.debugDescription): \(login.status)")
                let form = try await client.execute(
                    uri: "/publish", method: .post,
                    headers: Self.form + [.cookie: alice.cookie, HTTPField.Name("X-CSRF-Token")!: alice.csrf],
                    body: ByteBuffer(string: text))
                #expect(form.status.code < 500, "\(text.debugDescription): \(form.status)")
            }
        }
    }
}

extension HTTPFields {
    static func + (lhs: HTTPFields, rhs: HTTPFields) -> HTTPFields {
        var fields = lhs
        fields.append(contentsOf: rhs)
        return fields
    }
}

/// The desk reads the newsroom's session clock, not the machine's: a held push
/// made by a run on that clock shows the freshness that clock gives it.
@Suite("The desk's clock")
struct DeskClockTests {
    @Test func aHeldPushShowsItsFreshnessByTheSessionClock() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let clock = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        let feed = rssFeed(
            title: "World", dated: [("h1", "Ceasefire talks resume", clock.addingTimeInterval(-600))])
        // No Date header: the run has no server clock to hold its own against.
        let server = try RawTCPServer { connection in
            connection.write(
                "HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nContent-Length: \(feed.utf8.count)\r\n"
                    + "Connection: close\r\n\r\n\(feed)")
            connection.reset()
        }
        defer { server.stop() }
        let file = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "http://127.0.0.1:1/"}
            desk: {users: desk-users.yaml}
            policy: {first_run: send, max_age: 3h}
            review: {rules: [{category: World, mode: review}]}
            feeds:
              - {url: "\(server.baseURL)/w.xml", category: World}
            """)
        let config = try ConfigLoader(environment: ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString])
            .load(path: file)
        var logger = Logger(label: "desk-clock-test")
        logger.logLevel = .critical
        let context = SessionContext(config: config, logger: logger, clock: .fixed(clock))
        let held = await offThePool { () -> Int? in
            var users = try? DeskUsers.load(path: config.deskUsersPath)
            try? users?.set("alice", role: .editor, password: "alice-password")
            return try? RunSession(context: context).run(RunRequest()).report.summary.reviewHeld
        }
        try #require(held == 1)
        try await Application(router: DeskServer.router(Desk(context: context))).test(.router) { client in
            let (cookie, _) = try await DeskGuardTests().signIn(client, "alice")
            let page = String(buffer: try await client.execute(uri: "/", method: .get, headers: [.cookie: cookie]).body)
            #expect(page.contains("Ceasefire talks resume"))
            // Published 10 min before the session's now, fresh for 3 h from its publication.
            #expect(page.contains("fresh for 2 h 50 min"), "\(page)")
        }
    }
}
