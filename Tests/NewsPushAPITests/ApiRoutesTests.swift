import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NewsPushCore
import NewsPushHTTP
import NewsPushSessions
import NewsPushTesting
import Testing

@testable import NewsPushAPI

/// Every route of the app back-end in process, through Hummingbird's testing framework: the
/// controllers, the authenticator and the signed-in group, the request bodies and the answers,
/// against a SQLite ledger and the hub emulator. (The built binary's exchanges, the tutorials'
/// apps and the faults are newspushTests'.)
@Suite("The app back-end in process")
struct ApiRoutesTests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
        """

    /// The back-end over a new ledger with readers alice and bob and sender sam, on the
    /// emulator, handed to `body` as an application.
    func withApi(_ body: (Application<RouterResponder<ApiContext>>, LocalHub) async throws -> Void) async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let file = try folder.write(
                "feeds.yaml",
                """
                hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                    endpoint: "\(hub.endpoint)", retries: 0}
                api: {handle_shapes: loose, users: api-users.yaml}
                feeds: []
                """)
            let config = try ConfigLoader(environment: ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString])
                .load(path: file)
            let path = config.api.usersPath
            // bcrypt is slow on purpose: off the concurrency pool.
            try await offThePool { () -> Result<Void, UsersFileError> in
                Result { () throws(UsersFileError) -> Void in
                    var users = try ApiUsers.load(path: path)
                    for (name, role) in [("alice", ApiRole.reader), ("bob", .reader), ("sam", .sender)] {
                        try users.set(name, role: role, password: "\(name)-password")
                    }
                }
            }.get()
            var logger = Logger(label: "api-test")
            logger.logLevel = .critical
            let backend = try ApiBackend(context: SessionContext(config: config, logger: logger))
            try await body(Application(router: ApiServer.router(backend)), hub)
        }
    }

    static func basic(_ name: String) -> HTTPFields {
        [.authorization: "Basic " + Data("\(name):\(name)-password".utf8).base64EncodedString()]
    }

    static func json(_ text: String, _ headers: HTTPFields = [:]) -> (HTTPFields, ByteBuffer) {
        var fields = headers
        fields[.contentType] = "application/json"
        return (fields, ByteBuffer(string: text))
    }

    @Test func theDocumentAndHealthAnswerAnyone() async throws {
        try await withApi { app, _ in
            try await app.test(.router) { client in
                let document = try await client.execute(uri: "/openapi.json", method: .get)
                #expect(document.status == .ok && String(buffer: document.body).contains("\"openapi\""))
                let head = try await client.execute(uri: "/openapi.json", method: .head)
                #expect(head.status == .ok && head.body.readableBytes == 0)
                let health = try await client.execute(uri: "/healthz", method: .get)
                #expect(health.status == .ok && String(buffer: health.body) == #"{"status":"ok"}"#)
                #expect(health.headers[.contentSecurityPolicy] != nil && health.headers[.cacheControl] == "no-store")
            }
        }
    }

    @Test func anInstallationIsPutWhateverTheCaseOfItsFieldsAndDeleted() async throws {
        try await withApi { app, hub in
            try await app.test(.router) { client in
                let (headers, body) = Self.json(#"{"Platform":"fcmv1","PUSHCHANNEL":"token-1","topics":["World"]}"#)
                let put = try await client.execute(
                    uri: "/api/installations/inst-1", method: .put, headers: headers, body: body)
                #expect(put.status == .ok, "\(String(buffer: put.body))")
                #expect(String(buffer: put.body) == #"{"ignored":[],"installationId":"inst-1","tags":["World"]}"#)
                #expect(await hub.emulator.installation("inst-1") != nil)
                let delete = try await client.execute(
                    uri: "/api/installations/inst-1", method: .delete, headers: [ApiServer.pushChannel: "token-1"])
                #expect(delete.status == .noContent)
                #expect(await hub.emulator.installation("inst-1") == nil)
            }
        }
    }

    @Test(arguments: [
        (#"{"platform":"fcmv1","pushChannel":"t","platform":"apns"}"#, "field 'platform' is given twice"),
        (#"{"platform":"fcmv1","pushChannel":"t","Platform":"apns"}"#, "fields 'platform' and 'Platform' differ"),
        (#"{"platform":"fcmv1","pushChannel":"t","\u0050latform":"apns"}"#, "fields 'platform' and 'Platform' differ"),
        // A name with an escaped quote, as the JSON answer spells it.
        (#"{"platform":"fcmv1","pushChannel":"t","a\"b":1,"a\"b":2}"#, #"field 'a\"b' is given twice"#),
        (#"{"platform":"fcmv1"}"#, "field 'pushChannel' is required"),
        (#"{"platform":null,"pushChannel":"t"}"#, "field 'platform' is required"),
        (#"{"platform":7,"pushChannel":"t"}"#, "field 'platform' must be a string"),
        (#"{"platform":"fcmv1","pushChannel":"t","topics":"World"}"#, "field 'topics' must be an array of strings"),
        (#"{"platform":"fcmv1","pushChannel":"t","topics":[1]}"#, "field 'topics' must be an array of strings"),
        (#"["platform"]"#, "the body must be a JSON object"),
        (#"{"platform":"#, "the body is not valid JSON"),
        ("", "the body is empty"),
    ])
    func aBodyThatCannotBeReadIsA400NamingWhy(_ text: String, _ why: String) async throws {
        try await withApi { app, _ in
            try await app.test(.router) { client in
                let (headers, body) = Self.json(text)
                let put = try await client.execute(
                    uri: "/api/installations/inst-2", method: .put, headers: headers, body: body)
                #expect(
                    put.status == .badRequest && String(buffer: put.body).contains(why), "\(String(buffer: put.body))")
            }
        }
    }

    @Test func theTutorialsFlowNeedsASignedInReader() async throws {
        try await withApi { app, _ in
            try await app.test(.router) { client in
                let anonymous = try await client.execute(uri: "/api/register?handle=h1", method: .post)
                #expect(anonymous.status == .unauthorized && anonymous.headers[ApiServer.wwwAuthenticate] != nil)
                let wrong = try await client.execute(
                    uri: "/api/register", method: .post,
                    headers: [.authorization: "Basic " + Data("alice:nope".utf8).base64EncodedString()])
                #expect(wrong.status == .unauthorized)
                let asked = try await client.execute(
                    uri: "/api/register?handle=h1", method: .post, headers: Self.basic("alice"))
                let answer = String(buffer: asked.body)
                #expect(asked.status == .ok && answer.hasPrefix("\"") && answer.hasSuffix("\""), "\(answer)")
                let id = String(answer.dropFirst().dropLast())
                let (headers, body) = Self.json(
                    #"{"Platform":"fcm","Handle":"h1","Tags":["World"]}"#, Self.basic("alice"))
                let put = try await client.execute(
                    uri: "/api/register/\(id)", method: .put, headers: headers, body: body)
                #expect(put.status == .ok, "\(String(buffer: put.body))")
                let (_, again) = Self.json(#"{"Platform":"fcm","Handle":"h1","Tags":["World"]}"#)
                let unknown = try await client.execute(
                    uri: "/api/register/never-given", method: .put, headers: headers, body: again)
                #expect(unknown.status == .gone)
                let delete = try await client.execute(
                    uri: "/api/register/\(id)", method: .delete, headers: Self.basic("alice"))
                #expect(delete.status == .ok)
            }
        }
    }

    @Test func theTutorialsIdCanBeAskedWithTheHandleInTheBody() async throws {
        try await withApi { app, _ in
            try await app.test(.router) { client in
                let (headers, body) = Self.json(
                    #"{"Platform":"fcm","Handle":"h-body","Tags":["World"]}"#, Self.basic("alice"))
                let first = try await client.execute(uri: "/api/register", method: .post, headers: Self.basic("alice"))
                let id = String(String(buffer: first.body).dropFirst().dropLast())
                let put = try await client.execute(
                    uri: "/api/register/\(id)", method: .put, headers: headers, body: body)
                #expect(put.status == .ok, "\(String(buffer: put.body))")
                let (asking, handle) = Self.json(#"{"handle":"h-body"}"#, Self.basic("alice"))
                let again = try await client.execute(uri: "/api/register", method: .post, headers: asking, body: handle)
                #expect(
                    again.status == .ok && String(buffer: again.body) == "\"\(id)\"", "\(String(buffer: again.body))")
                let (_, wrong) = Self.json(#"{"handle":7}"#)
                let refused = try await client.execute(
                    uri: "/api/register", method: .post, headers: asking, body: wrong)
                #expect(refused.status == .badRequest && String(buffer: refused.body).contains("handle"))
            }
        }
    }

    @Test func messagesSecurePushesAndForgetMe() async throws {
        try await withApi { app, hub in
            try await app.test(.router) { client in
                let (headers, body) = Self.json(
                    #"{"platform":"fcmv1","pushChannel":"bob-token","topics":["World"]}"#, Self.basic("bob"))
                let put = try await client.execute(
                    uri: "/api/installations/bob-phone", method: .put, headers: headers, body: body)
                #expect(put.status == .ok, "\(String(buffer: put.body))")
                let (plain, message) = Self.json(#""Your table is ready""#, Self.basic("sam"))
                let sent = try await client.execute(
                    uri: "/api/notifications?pns=fcm&to_tag=bob", method: .post, headers: plain, body: message)
                #expect(sent.status == .ok && String(buffer: sent.body).contains(#""status":"sent""#))
                let (readerHeaders, _) = Self.json("", Self.basic("alice"))
                let notSender = try await client.execute(
                    uri: "/api/notifications?pns=fcm&to_tag=bob", method: .post, headers: readerHeaders,
                    body: ByteBuffer(string: #""hi""#))
                #expect(notSender.status == .forbidden)
                let (bobHeaders, _) = Self.json("", Self.basic("bob"))
                let secure = try await client.execute(
                    uri: "/api/notifications", method: .post, headers: bobHeaders,
                    body: ByteBuffer(string: #""The vote is tonight""#))
                let secureBody = String(buffer: secure.body)
                #expect(secure.status == .ok, "\(secureBody)")
                let document = try JSONSerialization.jsonObject(with: Data(secureBody.utf8)) as? [String: Any]
                let secureId = try #require(document?["secureId"] as? Int, "\(secureBody)")
                let text = try await client.execute(
                    uri: "/api/notifications/\(secureId)", method: .get, headers: Self.basic("bob"))
                #expect(text.status == .ok && String(buffer: text.body).contains("The vote is tonight"))
                let others = try await client.execute(
                    uri: "/api/notifications/\(secureId)", method: .get, headers: Self.basic("alice"))
                #expect(others.status == .notFound)
                let forget = try await client.execute(uri: "/api/users/me", method: .delete, headers: Self.basic("bob"))
                #expect(forget.status == .noContent)
                #expect(await hub.emulator.installation("bob-phone") == nil)
            }
        }
    }

    @Test func unknownRoutesAndMethodsAreSaidInTheApisWords() async throws {
        try await withApi { app, _ in
            try await app.test(.router) { client in
                let missing = try await client.execute(uri: "/api/nothing", method: .get)
                #expect(missing.status == .notFound && String(buffer: missing.body).contains("no such route"))
                let method = try await client.execute(uri: "/api/register", method: .get)
                #expect(method.status == .methodNotAllowed && method.headers[.allow] == "POST")
            }
        }
    }
}
