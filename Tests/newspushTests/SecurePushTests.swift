import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// Categories with `format: id-only`: a run's push, a publish and a personal
/// alert each send every device only a `secureId`; the text waits in the ledger for the
/// signed-in reader; a platform the push reached is never sent it again.
@Suite("Secure pushes of id-only categories")
struct SecurePushTests {
    static let story = "Minister resigns over merger"

    /// The categories: World id-only (silent on Apple, messages in French too), Science id-only
    /// with a `secure_alert`, the rest as usual.
    static let categories = """
        categories:
          World: {tags: "World", format: id-only, messages: {fr: "Alerte {category} : {title}"}, names: {fr: Monde}}
          Science: {tags: "Science", format: id-only, secure_alert: "New {category} alert"}
        """

    /// A fixture whose feed lists one World story, and whose phones are registered through the
    /// app back-end: alice's iPhone (French), Android phone and Windows PC, an anonymous Android
    /// phone and iPhone, bob's phone without topics.
    static func start(_ backend: LedgerBackend, devices: String? = nil) async throws -> (ApiFixture, LocalHTTPServer) {
        let feeds = try await LocalHTTPServer.serving([
            "/w.xml": CannedResponse(text: rssFeed(title: "Wire", items: [("resign", story, 2)]))
        ])
        let fixture = try await ApiFixture.start(
            backend, devices: devices, extra: categories,
            feeds: ["{url: \"\(feeds.baseURL)/w.xml\", name: Wire, category: World}"])
        let alice = ApiFixture.basic("alice"), bob = ApiFixture.basic("bob")
        let phones = [
            ("a-ios", "apns", "aa01", #","language":"fr""#, [alice]), ("a-droid", "fcmv1", "fcm-a", "", [alice]),
            ("a-win", "wns", "https://db5.notify.windows.com/?token=alice", "", [alice]),
            ("anon", "fcmv1", "fcm-n", "", []), ("anon-ios", "apns", "cc01", "", []),
            ("b-droid", "fcmv1", "fcm-b", "", [bob]),
        ]
        for (id, platform, handle, language, headers) in phones {
            let topics = id == "b-droid" ? "[]" : #"["World","Science"]"#
            let answer = await fixture.send(
                "PUT /api/installations/\(id)",
                json: #"{"platform":"\#(platform)","pushChannel":"\#(handle)","topics":\#(topics)\#(language)}"#,
                headers: headers)
            #expect(answer.status == 200, "\(answer.body)")
        }
        return (fixture, feeds)
    }

    static func run(_ fixture: ApiFixture) async throws -> CommandResult {
        try await newspush(["run", "--config", fixture.config], environment: ApiFixture.environment)
    }

    /// Each delivery's payload as JSON (a WNS toast's text as `{"toast": text}`).
    static func payloads(_ fixture: ApiFixture) async throws -> [(
        device: String, json: NSDictionary, headers: [String: String]
    )] {
        try await fixture.hub.emulator.allDeliveries().map { delivery in
            if delivery.payload.hasPrefix("<") {
                return (delivery.device, ["toast": XMLText.of(delivery.payload) ?? ""], delivery.headers ?? [:])
            }
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? NSDictionary,
                "\(delivery.payload)")
            return (delivery.device, json, delivery.headers ?? [:])
        }
    }

    /// The `secureId` a payload carries.
    static func secureId(_ json: NSDictionary) -> Int? {
        ((json["secureId"] as? String) ?? ((json["message"] as? NSDictionary)?["data"] as? NSDictionary)?["secureId"]
            as? String).flatMap(Int.init)
    }

    // A run's push of an id-only category reaches every signed-in device of its tags with only
    // the secureId (a silent Apple push at priority 5; FCM v1 data; a WNS raw notification);
    // the anonymous phones, which could never fetch the text, and the seed app's template
    // registration get nothing (World has no secure_alert); nothing of the story is at the hub
    // or left in the outbox; alice fetches the text in her installation's language, bob (whose
    // phone is not on World) and an unknown id get 404; the next run sends nothing again.
    @Test(arguments: LedgerBackend.allCases)
    func aRunsIdOnlyPushCarriesOnlyTheIdAndTheReaderFetchesTheText(_ backend: LedgerBackend) async throws {
        let (fixture, feeds) = try await Self.start(backend)
        defer {
            fixture.stop()
            feeds.stop()
        }
        let run = try await Self.run(fixture)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let delivered = try await Self.payloads(fixture)
        #expect(Set(delivered.map(\.device)) == ["a-ios", "a-droid", "a-win"], "\(delivered.map(\.device))")
        let ids = Set(delivered.compactMap { Self.secureId($0.json) })
        let id = try #require(ids.first)
        #expect(ids.count == 1 && delivered.count == 3)
        for (device, json, headers) in delivered {
            let expected: NSDictionary =
                switch device {
                case "a-ios": ["aps": ["content-available": 1], "secureId": String(id)]
                case "a-win": ["secureId": String(id)]
                default: ["message": ["data": ["secureId": String(id)]]]
                }
            #expect(json == expected, "\(device): \(json)")
            if device == "a-ios" {
                #expect(headers["apns-push-type"] == "background" && headers["apns-priority"] == "5", "\(headers)")
            }
            if device == "a-win" { #expect(headers["x-wns-type"] == "wns/raw", "\(headers)") }
        }
        let everything = await fixture.hub.emulator.allDeliveries().map(\.payload).joined()
        #expect(!everything.contains("Minister"))
        let outbox = try await HostileOperatorTests().outbox(fixture.config)
        let properties = try #require(outbox.first?["properties"] as? [String: String], "\(outbox)")
        #expect(properties["secureId"] == String(id) && properties["messageParam"] == nil, "\(properties)")
        #expect(!"\(properties)".contains("Minister"), "the outbox keeps no text of a secure push")
        let alices = await fixture.send("GET /api/notifications/\(id)", headers: [ApiFixture.basic("alice")])
        #expect(alices.status == 200, "\(alices.body)")
        #expect(ApiFixture.object(alices)["Payload"] as? String == "Alerte Monde : \(Self.story)", "\(alices.body)")
        let bobs = await fixture.send("GET /api/notifications/\(id)", headers: [ApiFixture.basic("bob")])
        #expect(bobs.status == 404)
        let unknown = await fixture.send(
            "GET /api/notifications/\(id == 1 ? 2 : id - 1)", headers: [ApiFixture.basic("alice")])
        #expect(unknown.status == 404)
        let again = try await Self.run(fixture)
        let total = await fixture.hub.emulator.allDeliveries().count
        #expect(again.status == 0 && total == 3, "never twice")
    }

    // A publish to a category with `secure_alert` shows signed-in Apple devices that generic
    // alert with mutable-content and the id, and the devices that cannot fetch the text
    // (anonymous installations, the seed app's template registration) the generic alert alone,
    // never the headline; `publish --user` to an id-only category is a secure push to that
    // reader's devices only, which she can fetch; `--at` is refused with the reason.
    @Test func aPublishAndAPersonalAlertOfIdOnlyCategoriesAreSecure() async throws {
        let (fixture, feeds) = try await Self.start(.sqlite)
        defer {
            fixture.stop()
            feeds.stop()
        }
        func publish(_ title: String, _ extra: [String]) async throws -> CommandResult {
            try await newspush(
                ["publish", "--config", fixture.config, "--title", title, "--yes"] + extra,
                environment: ApiFixture.environment)
        }
        let science = try await publish("Comet found by amateur", ["--category", "Science"])
        #expect(science.status == 0, "\(science.stderr)")
        let sent = try await Self.payloads(fixture)
        #expect(
            Set(sent.map(\.device)) == [
                "a-ios", "a-droid", "a-win", "anon/newspush", "anon-ios/newspush", "phone-science",
            ],
            "\(sent.map(\.device))")
        let generic = sent.filter { $0.device.hasPrefix("anon") || $0.device == "phone-science" }
        #expect(generic.allSatisfy { Self.secureId($0.json) == nil && "\($0.json)".contains("New Science alert") })
        let anonymousIPhone = try #require(generic.first { $0.device == "anon-ios/newspush" })
        #expect(anonymousIPhone.headers["apns-collapse-id"]?.hasPrefix("np-") == true, "\(anonymousIPhone.headers)")
        let ios = try #require(sent.first { $0.device == "a-ios" })
        let id = try #require(Self.secureId(ios.json))
        let expected: NSDictionary = [
            "aps": ["alert": "New Science alert", "mutable-content": 1, "sound": "default"], "secureId": String(id),
        ]
        #expect(ios.json == expected, "\(ios.json)")
        #expect(ios.headers["apns-push-type"] == "alert")
        let atHub = await fixture.hub.emulator.allDeliveries().map(\.payload).joined()
        #expect(!atHub.contains("Comet"))
        let personal = try await publish("Your subscription renews", ["--category", "World", "--user", "alice"])
        #expect(personal.status == 0, "\(personal.stderr)")
        let toAlice = try await Self.payloads(fixture).dropFirst(sent.count)
        #expect(Set(toAlice.map(\.device)) == ["a-ios", "a-droid", "a-win"], "\(toAlice.map(\.device))")
        let personalId = try #require(toAlice.first.flatMap { Self.secureId($0.json) })
        #expect(toAlice.allSatisfy { Self.secureId($0.json) == personalId })
        let fetched = await fixture.send("GET /api/notifications/\(personalId)", headers: [ApiFixture.basic("alice")])
        #expect(ApiFixture.object(fetched)["Payload"] as? String == "Alerte Monde : Your subscription renews")
        let bobs = await fixture.send("GET /api/notifications/\(personalId)", headers: [ApiFixture.basic("bob")])
        #expect(bobs.status == 404)
        let scheduled = try await publish("Vote at noon", ["--category", "World", "--at", "+1h"])
        #expect(scheduled.status == 64 && scheduled.stderr.contains("id-only"), "\(scheduled.stderr)")
    }

    // A held id-only push shows its text to the editor; approved with a new headline, it goes
    // out sealed like any other (only the id to each device), and the reader fetches the edited
    // text in her language.
    @Test func aHeldIdOnlyPushIsEditedAndApprovedAsASecurePush() async throws {
        let feeds = try await LocalHTTPServer.serving([
            "/w.xml": CannedResponse(text: rssFeed(title: "Wire", items: [("resign", Self.story, 2)]))
        ])
        defer { feeds.stop() }
        let fixture = try await ApiFixture.start(
            .sqlite, extra: Self.categories + "\nreview: {rules: [{category: World, mode: review}]}",
            feeds: ["{url: \"\(feeds.baseURL)/w.xml\", name: Wire, category: World}"])
        defer { fixture.stop() }
        let phone = await fixture.send(
            "PUT /api/installations/a-ios",
            json: #"{"platform":"apns","pushChannel":"aa01","topics":["World"],"language":"fr"}"#,
            headers: [ApiFixture.basic("alice")])
        #expect(phone.status == 200)
        #expect(try await Self.run(fixture).status == 0)
        #expect(await fixture.hub.emulator.allDeliveries().isEmpty, "held")
        let list = try await newspush(
            ["review", "list", "--format", "json", "--config", fixture.config], environment: ApiFixture.environment)
        let held = try #require(try HostileOperatorTests().json(list)["held"] as? [[String: Any]])
        let entry = try #require(held.first)
        #expect((entry["properties"] as? [String: String])?["messageParam"]?.contains("Minister") == true, "\(entry)")
        let approved = try await newspush(
            [
                "review", "approve", try #require(entry["id"] as? String), "--title", "Minister quits", "--config",
                fixture.config,
            ], environment: ApiFixture.environment)
        #expect(approved.status == 0, "\(approved.stdout) \(approved.stderr)")
        let delivered = try await Self.payloads(fixture)
        let id = try #require(delivered.first.flatMap { Self.secureId($0.json) })
        #expect(delivered.count == 1 && delivered[0].json == ["aps": ["content-available": 1], "secureId": String(id)])
        let fetched = await fixture.send("GET /api/notifications/\(id)", headers: [ApiFixture.basic("alice")])
        #expect(ApiFixture.object(fetched)["Payload"] as? String == "Alerte Monde : Minister quits", "\(fetched.body)")
    }

    // A platform that took the push is never sent it again: FCM fails (503) while Apple takes
    // the push; the run says so and keeps it pending for FCM (and WNS, if sending stopped before
    // it); the next run sends those alone, with the same id.
    @Test func aSecurePushOwedToOnePlatformIsSentOnlyThereNextRun() async throws {
        let (fixture, feeds) = try await Self.start(.sqlite)
        defer {
            fixture.stop()
            feeds.stop()
        }
        await fixture.hub.emulator.inject(Fault(status: 503, count: 10, format: "fcmv1"))
        let first = try await Self.run(fixture)
        #expect(first.status != 0, "the hub failure is reported: \(first.stderr)")
        #expect(first.stdout.contains("fcmv1") || first.stderr.contains("fcmv1"), "\(first.stdout) \(first.stderr)")
        #expect(try await Self.payloads(fixture).map(\.device) == ["a-ios"])
        let waiting = try await HostileOperatorTests().outbox(fixture.config)
        #expect(waiting.first?["status"] as? String == "pending", "\(waiting)")
        let owed = (waiting.first?["properties"] as? [String: String])?["platforms"]?.split(separator: ",") ?? []
        #expect(owed.contains("fcmv1") && !owed.contains("apple"), "\(waiting)")
        await fixture.hub.emulator.clearFaults()
        let second = try await Self.run(fixture)
        #expect(second.status == 0, "\(second.stderr)")
        let delivered = try await Self.payloads(fixture)
        #expect(delivered.filter { $0.device == "a-ios" }.count == 1, "Apple got it once")
        #expect(Set(delivered.map(\.device)) == ["a-ios", "a-droid", "a-win"])
        #expect(Set(delivered.compactMap { Self.secureId($0.json) }).count == 1, "one id on every platform")
        #expect(try await HostileOperatorTests().outbox(fixture.config).first?["status"] as? String == "sent")
    }

    // A hub without an FCM credential cannot reach Android phones at all: the secure push goes
    // to Apple, is sent, and the run succeeds, saying FCM was left out.
    @Test func aPlatformWithoutACredentialIsLeftOutNotWaitedFor() async throws {
        let devices = HostileOperatorTests.devices + "\ncredentials: [apple]\n"
        let (fixture, feeds) = try await Self.start(.sqlite, devices: devices)
        defer {
            fixture.stop()
            feeds.stop()
        }
        let run = try await Self.run(fixture)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(try await Self.payloads(fixture).map(\.device) == ["a-ios"])
        let entry = try #require(try await HostileOperatorTests().outbox(fixture.config).first)
        #expect(entry["status"] as? String == "sent", "\(entry)")
        #expect((entry["error"] as? String)?.contains("fcmv1") == true, "\(entry)")
    }

    // `check` and the desk say how many installations of an id-only category cannot read its
    // secure pushes: World (no secure_alert) leaves its two anonymous phones with nothing, a
    // warning; Science shows them its generic alert.
    @Test func checkSaysHowManyInstallationsCannotReadASecurePush() async throws {
        let (fixture, feeds) = try await Self.start(.sqlite)
        defer {
            fixture.stop()
            feeds.stop()
        }
        let check = try await newspush(["check", "--config", fixture.config], environment: ApiFixture.environment)
        let all = check.stdout + check.stderr
        #expect(
            all.contains("categories.World: 2 installations of the app back-end's index reach World but cannot read")
                && all.contains("they get nothing"), "\(all)")
        #expect(all.contains("categories.Science: 2 installations") && all.contains("New {category} alert"), "\(all)")
    }

    // `secure_alert` belongs to id-only categories and names nothing of the story.
    @Test func aSecureAlertOutsideIdOnlyOrNamingTheStoryIsAConfigError() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try HostileOperatorTests().config(
            folder, hub: "http://127.0.0.1:1",
            extra: """
                categories:
                  World: {tags: "World", secure_alert: "New alert"}
                  Science: {tags: "Science", format: id-only, secure_alert: "{title}"}
                """)
        let check = try await newspush(["check", "--config", config], environment: hubEnvironment)
        #expect(check.status != 0)
        #expect(
            check.stderr.contains("categories.World.secure_alert") && check.stderr.contains("id-only"),
            "\(check.stderr)")
        #expect(
            check.stderr.contains("categories.Science.secure_alert") && check.stderr.contains("{title}"),
            "\(check.stderr)")
    }
}
