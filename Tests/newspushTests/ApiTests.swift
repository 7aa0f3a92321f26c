import Crypto
import Foundation
import HubEmulator
import NewsPushAPI
import NewsPushLedger
import NewsPushTesting
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A running `newspush api` over a newsroom whose hub is the emulator: the config, the users
/// (alice and bob readers, sam a sender, each password NAME-password) and the process.
struct ApiFixture {
    let folder: TemporaryFolder
    let hub: LocalHub
    let config: String
    let api: DeskProcess

    static var environment: [String: String] { hubEnvironment.merging(LocalPostgres.sharedEnvironment) { $1 } }

    /// `apiSection` is the config's `api:` mapping's body (indented two spaces); a generous rate
    /// unless it says otherwise.
    /// `hubSettings` replace the hub's retries, delay and timeout (`retries: 1, retry_delay:
    /// 10ms, timeout: 5m`).
    static func start(
        _ backend: LedgerBackend = .sqlite, api apiSection: String = "", devices: String? = nil, extra: String = "",
        feeds: [String] = [], hubSettings: String? = nil, logFile: String? = nil,
        environment given: [String: String]? = nil, verbose: Bool = false
    ) async throws -> ApiFixture {
        let folder = try TemporaryFolder()
        let hub = try await LocalHub.start(devicesYAML: devices ?? HostileOperatorTests.devices)
        var rate =
            apiSection.contains("rate:")
            ? "" : "  rate: {per_address: 100000/min, per_user: 100000/min, new_anonymous_per_network: 100000/day}\n"
        // The tests' handles are short labels the emulator takes (a staging hub's setting).
        if !apiSection.contains("handle_shapes") { rate += "  handle_shapes: loose\n" }
        let config = try HostileOperatorTests().config(
            folder, hub: hub.endpoint,
            extra: try await backend.stateLine() + "\n" + extra + "\napi:\n" + rate + apiSection,
            feeds: feeds)
        // Read after the ledger's line: a PostgreSQL ledger starts the tests' server, whose
        // password the environment then carries.
        let environment = given ?? environment
        if let hubSettings {
            let text = try String(contentsOfFile: config, encoding: .utf8)
            try text.replacingOccurrences(of: "retries: 1, retry_delay: 10ms, timeout: 5m", with: hubSettings)
                .write(toFile: config, atomically: true, encoding: .utf8)
        }
        for (name, role) in [("alice", "reader"), ("bob", "reader"), ("sam", "sender")] {
            let added = try await newspush(
                ["api", "add-user", name, "--role", role, "--config", config], environment: environment,
                input: "\(name)-password\n")
            #expect(added.status == 0, "\(added.stderr)")
        }
        let api = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", config] + (verbose ? ["-v"] : []),
            environment: environment, logFile: logFile)
        return ApiFixture(folder: folder, hub: hub, config: config, api: api)
    }

    func stop() {
        api.stop()
        hub.stop()
        folder.cleanup()
    }

    static func basic(_ name: String) -> String {
        "Authorization: Basic " + Data("\(name):\(name)-password".utf8).base64EncodedString()
    }

    /// A request with a JSON body (`Content-Type: application/json`).
    func send(_ head: String, json: String = "", headers: [String] = []) async -> RawAnswer {
        await api.send(
            head + " HTTP/1.1", body: json,
            headers: json.isEmpty ? headers : headers + ["Content-Type: application/json"])
    }

    /// `newspush publish --category World --title TITLE --yes` on this config.
    func publishWorld(_ title: String) async throws -> CommandResult {
        try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", title, "--yes"],
            environment: Self.environment)
    }

    /// What the emulator delivered to installation `id` (its template `newspush`).
    func deliveries(to id: String) async -> [Delivery] {
        await hub.emulator.allDeliveries().filter { $0.device == "\(id)/newspush" }
    }

    /// The installation the emulator holds under `id`.
    func atHub(_ id: String) async -> Installation? { await hub.emulator.installation(id) }

    /// `devices list --format json`'s installations.
    func index() async throws -> [[String: Any]] {
        let listed = try await newspush(
            ["devices", "list", "--format", "json", "--config", config], environment: Self.environment)
        #expect(listed.status == 0, "\(listed.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any]
        return try #require(document?["installations"] as? [[String: Any]], "\(listed.stdout)")
    }

    /// The newsroom's desk, started on this config, with editor eve signed in (stop it after).
    func editorsDesk() async throws -> (desk: DeskProcess, cookie: String, csrf: String) {
        let added = try await newspush(
            ["desk", "add-user", "eve", "--role", "editor", "--config", config], input: "eve-password\n")
        #expect(added.status == 0, "\(added.stderr)")
        let desk = try await DeskProcess.start(["desk", "--listen", "127.0.0.1:0", "--config", config])
        let (cookie, csrf) = try await HostileDeskTests().signIn(desk, "eve")
        return (desk, cookie, csrf)
    }

    static func object(_ answer: RawAnswer) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any] ?? [:]
    }
}

/// The app back-end: the tutorials' apps, the rules on tags and owners, identity,
/// limits, the devices commands and the contract, through the built binary against the emulator.
@Suite("The app back-end")
struct ApiTests {
    static let iosToken = "9F2A" + String(repeating: "0B1C", count: 15)  // 64 hex digits, upper case

    // The tutorials' three apps, byte for byte: POST /api/register (with the handle, or without
    // as the Windows app does), PUT /api/register/{id}; after the registration is deleted the PUT
    // answers 410 and the app asks for a new id once; each device then receives a category push.
    @Test(arguments: LedgerBackend.allCases)
    func theTutorialAppsRegisterAndReceiveACategoryPush(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let auth = ApiFixture.basic("alice")
        // iOS: the token as upper-case hex, in the query and in the body.
        let iosId = try await registrationId(fixture, handle: Self.iosToken, auth: auth)
        let ios = await fixture.send(
            "PUT /api/register/\(iosId)",
            json: #"{"Platform":"apns","Handle":"\#(Self.iosToken)","Tags":["World"]}"#, headers: [auth])
        #expect(ios.status == 200, "\(ios.body)")
        // Android: gcm is FCM v1 with the same token.
        let androidId = try await registrationId(fixture, handle: "fcm-token:APA91bH-android_1", auth: auth)
        let android = await fixture.send(
            "PUT /api/register/\(androidId)",
            json: #"{"Platform":"gcm","Handle":"fcm-token:APA91bH-android_1","Tags":["World","Sports"]}"#,
            headers: [auth])
        #expect(android.status == 200, "\(android.body)")
        // Windows: no handle in the POST, the sample's tag myTag dropped, not refused.
        let windowsId = try await registrationId(fixture, handle: nil, auth: auth)
        let windowsBody =
            #"{"Platform":"wns","Handle":"https://db5.notify.windows.com/?token=AwYAAAB","Tags":["myTag","World"]}"#
        let windows = await fixture.send("PUT /api/register/\(windowsId)", json: windowsBody, headers: [auth])
        #expect(windows.status == 200, "\(windows.body)")
        let atHub = try #require(await fixture.atHub(windowsId))
        #expect(atHub.tags == ["World", "username:alice", "newspush:signed-in"] && atHub.platform == "wns")
        #expect(await fixture.atHub(androidId)?.platform == "fcmv1")
        #expect(await fixture.atHub(iosId)?.pushChannel == Self.iosToken.lowercased())
        // The registration is deleted; the app's next PUT is 410, it asks for a new id once.
        #expect(await fixture.send("DELETE /api/register/\(androidId)", headers: [auth]).status == 200)
        #expect(await fixture.atHub(androidId) == nil)
        let stale = await fixture.send(
            "PUT /api/register/\(androidId)",
            json: #"{"Platform":"gcm","Handle":"fcm-token:APA91bH-android_1","Tags":["World"]}"#, headers: [auth])
        #expect(stale.status == 410, "\(stale.body)")
        let newId = try await registrationId(fixture, handle: "fcm-token:APA91bH-android_1", auth: auth)
        #expect(newId != androidId)
        let again = await fixture.send(
            "PUT /api/register/\(newId)",
            json: #"{"Platform":"gcm","Handle":"fcm-token:APA91bH-android_1","Tags":["World"]}"#, headers: [auth])
        #expect(again.status == 200, "\(again.body)")
        // A World push reaches the three devices through their installations' templates.
        let sent = try await newspush(
            ["publish", "--config", fixture.config, "--category", "World", "--title", "Bridge reopens", "--yes"],
            environment: ApiFixture.environment)
        #expect(sent.status == 0, "\(sent.stderr)")
        let deliveries = await fixture.hub.emulator.allDeliveries()
        for id in [iosId, newId, windowsId] {
            let delivered = deliveries.filter { $0.device == "\(id)/newspush" }
            #expect(delivered.count == 1 && delivered[0].payload.contains("Bridge reopens"), "\(id): \(delivered)")
        }
        let index = try await fixture.index()
        #expect(Set(index.compactMap { $0["id"] as? String }) == [iosId, newId, windowsId])
        #expect(index.allSatisfy { $0["owner"] as? String == "alice" })
    }

    private func registrationId(_ fixture: ApiFixture, handle: String?, auth: String) async throws -> String {
        let query = handle.map { "?handle=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) }
        let answer = await fixture.send("POST /api/register\(query ?? "")", headers: [auth])
        #expect(answer.status == 200, "\(answer.body)")
        let id = TutorialApp.registrationId(answer.body)
        #expect(
            id.allSatisfy { $0.isNumber || $0 == "-" } && !id.isEmpty, "the id the app keeps: \(id.debugDescription)")
        return id
    }

    // The handles the apps get wrong: the description of NSData that newer iOS SDKs print is a
    // 400 that says why; mpns is retired; odd-length hex is no APNs token.
    @Test func handlesThatCannotBeUsedAreRefusedWithTheReason() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let auth = ApiFixture.basic("alice")
        let id = try await registrationId(fixture, handle: nil, auth: auth)
        let cases = [
            (#"{"Platform":"apns","Handle":"{LENGTH=32,BYTES=0X9F2A0B1C...4D5E6F70}"}"#, "description of NSData"),
            (#"{"Platform":"mpns","Handle":"https://x.notify.live.net/a"}"#, "mpns"),
            (#"{"Platform":"apns","Handle":"ABC"}"#, "even length"),
            (#"{"Platform":"wns","Handle":"http://insecure.example/"}"#, "https"),
            (#"{"Platform":"apns","Handle":"AB","Tags":"World"}"#, "'Tags' must be an array"),
            (#"{"Platform":"apns","Handle":"AB""#, "not valid JSON"),
        ]
        for (body, reason) in cases {
            let answer = await fixture.send("PUT /api/register/\(id)", json: body, headers: [auth])
            #expect(answer.status == 400 && answer.body.contains(reason), "\(body): \(answer.status) \(answer.body)")
        }
        #expect(await fixture.hub.emulator.allInstallations().isEmpty)
    }

    // Hijack attempts, each refused, and bob's installation stays as it was at the hub and in
    // the index.
    @Test(arguments: LedgerBackend.allCases)
    func hijackAttemptsLeaveTheVictimsInstallationAsItWas(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let bob = ApiFixture.basic("bob"), alice = ApiFixture.basic("alice")
        let bobId = try await registrationId(fixture, handle: "bob-fcm-token", auth: bob)
        let put = await fixture.send(
            "PUT /api/register/\(bobId)", json: #"{"Platform":"fcm","Handle":"bob-fcm-token","Tags":["World"]}"#,
            headers: [bob])
        #expect(put.status == 200)
        let before = try #require(await fixture.atHub(bobId))
        // Alice asks for bob's tag as a topic: dropped; her installation carries her own.
        let aliceOwn = await fixture.send(
            "PUT /api/installations/alice-phone",
            json: #"{"platform":"apns","pushChannel":"aa11","topics":["username:bob","World"]}"#, headers: [alice])
        #expect(aliceOwn.status == 200)
        #expect(ApiFixture.object(aliceOwn)["tags"] as? [String] == ["World", "username:alice", "newspush:signed-in"])
        #expect(ApiFixture.object(aliceOwn)["ignored"] as? [String] == ["username:bob"])
        // Alice's PUT of bob's registration id with her own handle: 410.
        let taken = await fixture.send(
            "PUT /api/register/\(bobId)", json: #"{"Platform":"fcm","Handle":"alice-token","Tags":["World"]}"#,
            headers: [alice])
        #expect(taken.status == 410, "\(taken.body)")
        // An anonymous installation asking for a user tag: the tag is dropped.
        let anonymous = await fixture.send(
            "PUT /api/installations/anon-1",
            json: #"{"platform":"fcmv1","pushChannel":"anon-token","topics":["username:bob","Sports"]}"#)
        #expect(anonymous.status == 200 && ApiFixture.object(anonymous)["tags"] as? [String] == ["Sports"])
        // Bob's installation id without its handle, anonymously and as alice: a PUT is 403; a
        // DELETE is 204 as for an id no one has (no oracle of ids in use), and changes nothing.
        let absent = await fixture.send("DELETE /api/installations/never-registered", headers: [alice])
        for headers in [[], [alice]] {
            let hijack = await fixture.send(
                "PUT /api/installations/\(bobId)",
                json: #"{"platform":"fcmv1","pushChannel":"attacker-token","topics":["World"]}"#, headers: headers)
            #expect(hijack.status == 403, "\(headers): \(hijack.body)")
            let delete = await fixture.send("DELETE /api/installations/\(bobId)", headers: headers)
            #expect(delete.status == 204 && delete.status == absent.status, "\(headers): \(delete.body)")
            #expect(delete.body == absent.body)
            #expect(await fixture.atHub(bobId) != nil, "bob's installation stays")
        }
        // `.` and `..` are path steps, not ids: refused before anything reaches the hub (libcurl
        // would have sent the back-end's PUT and DELETE to the hub's own path).
        for id in [".", "..", "..."] {
            let put = await fixture.send(
                "PUT /api/installations/\(id)",
                json: #"{"platform":"fcmv1","pushChannel":"dots-token","topics":["World"]}"#)
            #expect(put.status == 400 || put.status == 404, "\(id): \(put.status) \(put.body)")
        }
        #expect(await fixture.hub.emulator.allInstallations().allSatisfy { !$0.installationId.hasPrefix(".") })
        // A service tag as a topic: dropped.
        let service = await fixture.send(
            "PUT /api/installations/anon-2",
            json: #"{"platform":"fcmv1","pushChannel":"anon-token-2","topics":["$InstallationId:{\#(bobId)}"]}"#)
        #expect(service.status == 200 && ApiFixture.object(service)["tags"] as? [String] == [])
        // A wrong password is 401, never anonymous.
        let wrong = await fixture.send(
            "PUT /api/installations/anon-3", json: #"{"platform":"fcmv1","pushChannel":"t3","topics":["World"]}"#,
            headers: ["Authorization: Basic " + Data("bob:guess".utf8).base64EncodedString()])
        #expect(wrong.status == 401 && wrong.headers["www-authenticate"]?.contains("Basic") == true)
        #expect(await fixture.atHub(bobId) == before, "bob's installation changed")
        let bobRow = try await fixture.index().first { $0["id"] as? String == bobId }
        #expect(
            bobRow?["owner"] as? String == "bob"
                && bobRow?["tags"] as? [String] == ["World", "username:bob", "newspush:signed-in"])
        // The device itself (same handle) may move to another user: how a phone changes hands.
        let handover = await fixture.send(
            "PUT /api/installations/\(bobId)",
            json: #"{"platform":"fcmv1","pushChannel":"bob-fcm-token","topics":["World"]}"#, headers: [alice])
        #expect(
            handover.status == 200
                && ApiFixture.object(handover)["tags"] as? [String] == [
                    "World", "username:alice", "newspush:signed-in",
                ])
    }

    // Forgetting: after DELETE /api/users/me the hub and the index hold no
    // installation of alice, bob's stay, a push to her tag reaches nobody, the audit names who
    // did it; her phone registering again without signing in carries topics only. An operator's
    // `devices forget-user` does the same for bob, on the record under the operator's name.
    @Test(arguments: LedgerBackend.allCases)
    func aReaderWhoLeavesIsForgottenByTheHubAndTheIndex(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let alice = ApiFixture.basic("alice"), bob = ApiFixture.basic("bob")
        for (id, handle, auth) in [("a-1", "aa01", alice), ("a-2", "fcm-alice", alice), ("b-1", "fcm-bob", bob)] {
            let platform = handle.hasPrefix("fcm") ? "fcmv1" : "apns"
            let answer = await fixture.send(
                "PUT /api/installations/\(id)",
                json: #"{"platform":"\#(platform)","pushChannel":"\#(handle)","topics":["World"]}"#, headers: [auth])
            #expect(answer.status == 200)
        }
        #expect(await fixture.send("DELETE /api/users/me").status == 401)
        #expect(await fixture.send("DELETE /api/users/me", headers: [alice]).status == 204)
        let atHub = await fixture.hub.emulator.allInstallations()
        #expect(atHub.map(\.installationId) == ["b-1"], "\(atHub.map(\.installationId))")
        #expect(try await fixture.index().compactMap { $0["owner"] as? String } == ["bob"])
        let trial = try await newspush(
            [
                "publish", "--config", fixture.config, "--category", "World", "--title", "For alice", "--tags",
                "username:alice", "--yes",
            ], environment: ApiFixture.environment)
        #expect(!(await fixture.hub.emulator.allDeliveries()).contains { $0.device.hasPrefix("a-") }, "\(trial.stdout)")
        let again = await fixture.send(
            "PUT /api/installations/a-1", json: #"{"platform":"apns","pushChannel":"aa01","topics":["World"]}"#)
        #expect(ApiFixture.object(again)["tags"] as? [String] == ["World"])
        let forgot = try await newspush(
            ["devices", "forget-user", "bob", "--editor", "carol", "--config", fixture.config],
            environment: ApiFixture.environment)
        #expect(forgot.status == 0 && forgot.stdout.hasPrefix("1 installations of bob removed"), "\(forgot.stderr)")
        #expect(await fixture.atHub("b-1") == nil)
        let history = try await newspush(
            ["review", "history", "--format", "json", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(history.stdout.contains("\"forgotten\""), "\(history.stdout)")
        // Asked by the reader herself, and by carol for bob.
        for editor in ["\"the reader\"", "\"carol\""] { #expect(history.stdout.contains(editor), "\(editor)") }
        #expect(!history.stdout.contains("alice"), "the audit keeps no forgotten reader's name")
        #expect(!history.stdout.contains("bob"), "the audit keeps no forgotten reader's name")
    }

    // Reach on the desk: a held push and the Publish preview say how many
    // installations of the index they reach.
    @Test func theDeskSaysHowManyInstallationsAHeldPushAndAPreviewReach() async throws {
        let feed = try await LocalHTTPServer.serving([
            "/world.xml": CannedResponse(
                text: rssFeed(
                    title: "World desk", items: [(guid: "w-1", title: "Summit ends with a deal", minutesAgo: 5)]))
        ])
        defer { feed.stop() }
        let fixture = try await ApiFixture.start(
            extra: "review: {rules: [{category: World, mode: review}]}\ndesk: {users: desk-users.yaml}",
            feeds: ["{url: \"\(feed.baseURL)/world.xml\", category: World}"])
        defer { fixture.stop() }
        for (n, topics) in [["World"], ["World", "Sports"], ["Sports"]].enumerated() {
            let list = topics.map { "\"\($0)\"" }.joined(separator: ",")
            let answer = await fixture.send(
                "PUT /api/installations/r\(n)",
                json: #"{"platform":"fcmv1","pushChannel":"t\#(n)","topics":[\#(list)]}"#)
            #expect(answer.status == 200)
        }
        let run = try await newspush(["run", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(run.stdout.contains("held") || run.status == 0, "\(run.stdout) \(run.stderr)")
        let (desk, cookie, csrf) = try await fixture.editorsDesk()
        defer { desk.stop() }
        let waiting = await desk.send("GET / HTTP/1.1", headers: ["Cookie: \(cookie)"])
        #expect(waiting.body.contains("Summit ends with a deal"), "\(waiting.body.prefix(2000))")
        #expect(waiting.body.contains("reaches 2 installations registered through newspush api"))
        let preview = await desk.send(
            "POST /publish HTTP/1.1", body: "csrf=\(csrf)&category=Sports&title=Cup+final&action=preview",
            headers: ["Cookie: \(cookie)", "Content-Type: application/x-www-form-urlencoded"])
        #expect(preview.body.contains("reaches 2 installations registered through newspush api"), "\(preview.status)")
    }

    // Send to a user: `publish --user alice` reaches exactly her two phones and no
    // other device; a second time it is refused, to bob it goes; after the story went to
    // everyone it is refused for anyone, unless --force. The story's own push is not blocked by
    // a personal one.
    @Test(arguments: LedgerBackend.allCases)
    func publishToOneReaderReachesOnlyTheirPhones(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let alice = ApiFixture.basic("alice"), bob = ApiFixture.basic("bob")
        let phones = [
            ("a-ios", "apns", "aa01", [alice]), ("a-droid", "fcmv1", "fcm-a", [alice]),
            ("b-droid", "fcmv1", "fcm-b", [bob]), ("anon", "fcmv1", "fcm-n", []),
        ]
        for (id, platform, handle, headers) in phones {
            let answer = await fixture.send(
                "PUT /api/installations/\(id)",
                json: #"{"platform":"\#(platform)","pushChannel":"\#(handle)","topics":["World"]}"#, headers: headers)
            #expect(answer.status == 200)
        }
        func publish(_ extra: [String]) async throws -> CommandResult {
            try await newspush(
                [
                    "publish", "--config", fixture.config, "--category", "World", "--title", "Exclusive interview",
                    "--url", "https://news.example/interview", "--yes",
                ] + extra, environment: ApiFixture.environment)
        }
        func received() async -> Set<String> {
            Set(
                await fixture.hub.emulator.allDeliveries().filter { $0.payload.contains("Exclusive interview") }
                    .map(\.device))
        }
        let first = try await publish(["--user", "alice"])
        #expect(first.status == 0, "\(first.stdout) \(first.stderr)")
        #expect(await received() == ["a-ios/newspush", "a-droid/newspush"])
        let again = try await publish(["--user", "alice"])
        #expect(again.status == 1 && again.stderr.contains("already went to alice"), "\(again.stderr)")
        #expect(try await publish(["--user", "bob"]).status == 0)
        #expect(await received().count == 3)
        let everyone = try await publish([])
        #expect(everyone.status == 0, "a personal alert is not the story's push: \(everyone.stderr)")
        #expect(await received().contains("anon/newspush"))
        let late = try await publish(["--user", "sam"])
        #expect(late.status == 1 && late.stderr.contains("already pushed"), "\(late.stderr)")
        #expect(try await publish(["--user", "alice", "--force"]).status == 0)
        let history = try await newspush(
            ["review", "history", "--format", "json", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(history.stdout.contains("to one reader: username:alice"), "\(history.stdout)")
    }

    // Messages to one reader: a sender reaches exactly that user's phones; a reader
    // gets 403 and nothing is sent; the tutorials' unescaped body and text with quotes,
    // backslashes, markup, entities and a flag emoji arrive as typed in apple, FCM v1 and WNS
    // payloads.
    @Test(arguments: LedgerBackend.allCases)
    func aSendersMessageReachesOnlyThatUsersPhonesAsTyped(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let alice = ApiFixture.basic("alice"), bob = ApiFixture.basic("bob"), sam = ApiFixture.basic("sam")
        let phones = [
            ("a-ios", "apns", "aa01", [alice]), ("a-droid", "fcmv1", "fcm-a", [alice]),
            ("a-win", "wns", "https://db5.notify.windows.com/?token=a", [alice]), ("b-ios", "apns", "bb01", [bob]),
            ("anon", "apns", "cc01", []),
        ]
        for (id, platform, handle, headers) in phones {
            let answer = await fixture.send(
                "PUT /api/installations/\(id)",
                json: #"{"platform":"\#(platform)","pushChannel":"\#(handle)","topics":["World"]}"#, headers: headers)
            #expect(answer.status == 200)
        }
        let typed = #"He said "hi" \ </text> &amp; 🇫🇷"#
        let reader = await fixture.send(
            "POST /api/notifications?pns=apns&to_tag=alice", json: "\"\(typed)\"", headers: [bob])
        #expect(reader.status == 403, "\(reader.body)")
        #expect(await fixture.hub.emulator.allDeliveries().isEmpty)
        #expect(try await HostileOperatorTests().outbox(fixture.config).isEmpty, "nothing recorded, nothing sent")
        for pns in ["apns", "gcm", "wns"] {
            // The tutorials' apps put the text between quotes without escaping it.
            let answer = await fixture.send(
                "POST /api/notifications?pns=\(pns)&to_tag=alice", json: "\"\(typed)\"", headers: [sam])
            #expect(answer.status == 200, "\(pns): \(answer.body)")
        }
        let deliveries = await fixture.hub.emulator.allDeliveries()
        #expect(Set(deliveries.map(\.device)) == ["a-ios", "a-droid", "a-win"], "\(deliveries.map(\.device))")
        let expected = "From sam: \(typed)"
        for delivery in deliveries {
            let text: String?
            switch delivery.platform {
            case "apple":
                let json = try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any]
                text = (json?["aps"] as? [String: Any])?["alert"] as? String
            case "fcmv1":
                let json = try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any]
                let message = json?["message"] as? [String: Any]
                text = (message?["notification"] as? [String: Any])?["body"] as? String
                #expect((message?["data"] as? [String: String])?["message"] == expected)
            default:
                text = XMLText.of(delivery.payload)
            }
            #expect(text == expected, "\(delivery.platform): \(delivery.payload)")
        }
        let missing = await fixture.send("POST /api/notifications?to_tag=alice", json: "\"x\"", headers: [sam])
        #expect(missing.status == 400 && missing.body.contains("pns"))
    }

    // The tutorials' secure-push flow (the app back-end's half): alice registers an
    // iPhone and an Android phone, triggers a secure push; each device receives only a secureId
    // (nothing of the text anywhere at the hub or in the outbox); her GET returns the text, Read
    // the second time; bob's GET of the same id, an unknown id and an expired one are 404; the
    // eleventh in an hour is 429.
    @Test(arguments: LedgerBackend.allCases)
    func aSecurePushCarriesOnlyItsIdAndOnlyItsReaderFetchesTheText(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let alice = ApiFixture.basic("alice"), bob = ApiFixture.basic("bob")
        for (platform, handle) in [("apns", Self.iosToken), ("gcm", "fcm-alice-secure")] {
            let id = try await registrationId(fixture, handle: handle, auth: alice)
            let put = await fixture.send(
                "PUT /api/register/\(id)", json: #"{"Platform":"\#(platform)","Handle":"\#(handle)","Tags":[]}"#,
                headers: [alice])
            #expect(put.status == 200)
        }
        let bobs = await fixture.send(
            "PUT /api/installations/bob-phone", json: #"{"platform":"fcmv1","pushChannel":"fcm-bob-s"}"#, headers: [bob]
        )
        #expect(bobs.status == 200)
        let sent = await fixture.send("POST /api/notifications", json: #""Secret "merger" story""#, headers: [alice])
        #expect(sent.status == 200, "\(sent.body)")
        let secureId = try #require(ApiFixture.object(sent)["secureId"] as? Int)
        #expect((1...Int(Int32.max)).contains(secureId))
        let deliveries = await fixture.hub.emulator.allDeliveries()
        #expect(deliveries.count == 2, "\(deliveries.map(\.device))")
        for delivery in deliveries {
            let json = try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? NSDictionary
            let expected: NSDictionary =
                delivery.platform == "apple"
                ? ["aps": ["content-available": 1], "secureId": String(secureId)]
                : ["message": ["data": ["secureId": String(secureId)]]]
            #expect(json == expected, "\(delivery.payload)")
        }
        let export = try await newspush(
            ["state", "export", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(!export.stdout.contains("merger"), "the outbox keeps no text of a secure push")
        let fetched = await fixture.send("GET /api/notifications/\(secureId)", headers: [alice])
        #expect(fetched.status == 200)
        let body = ApiFixture.object(fetched)
        #expect(body["Id"] as? Int == secureId && body["Payload"] as? String == #"Secret "merger" story"#)
        #expect(body["Read"] as? Bool == false)
        let again = await fixture.send("GET /api/notifications/\(secureId)", headers: [alice])
        #expect(ApiFixture.object(again)["Read"] as? Bool == true)
        let bobsAnswer = await fixture.send("GET /api/notifications/\(secureId)", headers: [bob])
        let unknown = await fixture.send("GET /api/notifications/\(secureId == 7 ? 8 : 7)", headers: [alice])
        #expect(bobsAnswer.status == 404 && unknown.status == 404)
        #expect(bobsAnswer.body == unknown.body, "the same answer whatever the reason")
        // Two days on, the push has expired: 404 (an instance whose clock reads then).
        let later = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", fixture.config],
            environment: ApiFixture.environment.merging(testClock(Date().addingTimeInterval(2 * 86400))) { $1 })
        defer { later.stop() }
        let expired = await later.send("GET /api/notifications/\(secureId) HTTP/1.1", headers: [alice])
        #expect(expired.status == 404)
        for n in 2...10 {
            let more = await fixture.send("POST /api/notifications", json: "\"secret \(n)\"", headers: [alice])
            #expect(more.status == 200, "\(n): \(more.body)")
        }
        let eleventh = await fixture.send("POST /api/notifications", json: #""one too many""#, headers: [alice])
        #expect(eleventh.status == 429 && Int(eleventh.headers["retry-after"] ?? "") != nil, "\(eleventh.body)")
        // Forgetting alice deletes the texts addressed to her alone.
        #expect(await fixture.send("DELETE /api/users/me", headers: [alice]).status == 204)
        if backend == .sqlite {
            let ledger = try Ledger.open(configured: fixture.folder.file("newspush-state.db"), access: .read)
            #expect(try ledger.securePush(id: secureId, now: Date()) == nil, "the text is gone with its reader")
        }
    }

    // One handle, one installation: the same handle under a new id replaces the old one, at the
    // hub and in the index.
    @Test func aHandleRegisteredAgainUnderANewIdReplacesTheOld() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        for id in ["first-id", "second-id"] {
            let answer = await fixture.send(
                "PUT /api/installations/\(id)",
                json: #"{"platform":"apns","pushChannel":"ABCD0123","topics":["World"]}"#)
            #expect(answer.status == 200, "\(answer.body)")
        }
        #expect(await fixture.atHub("first-id") == nil)
        #expect(await fixture.atHub("second-id")?.pushChannel == "abcd0123")
        #expect(try await fixture.index().compactMap { $0["id"] as? String } == ["second-id"])
        // The device removes itself with its handle and no credential.
        let removed = await fixture.send("DELETE /api/installations/second-id", headers: ["X-Push-Channel: abcd0123"])
        #expect(removed.status == 204)
        #expect(await fixture.hub.emulator.allInstallations().isEmpty)
        #expect(try await fixture.index().isEmpty)
    }
}

/// What the tutorials' apps do with an answer, exactly as their code does it (SPEC §9): no
/// trimming, no normalising.
enum TutorialApp {
    /// The registration id the apps keep from `POST /api/register`'s body: one UTF-16 unit
    /// dropped at each end (iOS `substringWithRange:NSMakeRange(1, length-2)`, Android
    /// `substring(1, length()-1)`, Windows `Substring(1, Length-2)`).
    static func registrationId(_ body: String) -> String {
        let units = Array(body.utf16)
        guard units.count >= 2 else { return "" }
        return String(decoding: units[1..<(units.count - 1)], as: UTF16.self)
    }
}

/// The text of a WNS toast's `<text>` element, as an XML parser reads it.
final class XMLText: NSObject, XMLParserDelegate {
    private var inside = false
    private var text = ""

    static func of(_ xml: String) -> String? {
        let reader = XMLText()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = reader
        return parser.parse() ? reader.text : nil
    }

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String]
    ) { if name == "text" { inside = true } }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "text" { inside = false }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { if inside { text += string } }
}
