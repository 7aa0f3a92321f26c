import Foundation
import NewsPushModel
import NotificationHubs
import Testing

@testable import HubEmulator
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

/// Every outcome of the client against the emulator, over real HTTP on 127.0.0.1.
@Suite("Hub client against the emulator")
struct HubClientTests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone-1, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: phone-2, platform: fcmv1, tags: [World, "user:alice"],
                template: '{"message":{"notification":{"body":".(title,12)"}}}'}
          - {id: phone-3, platform: apple, tags: [World]}
          - {id: phone-4, platform: fcmv1, tags: [World]}
        policies:
          - {name: ListenOnly, key: bGlzdGVu, rights: [Listen]}
        """

    final class Sleeps: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Double] = []
        func record(_ value: Double) {
            lock.lock()
            values.append(value)
            lock.unlock()
        }
        var all: [Double] {
            lock.lock()
            defer { lock.unlock() }
            return values
        }
    }

    func client(
        _ hub: LocalHub, connectionString: String = testConnectionString, hubName: String = "breaking-news",
        sleeps: Sleeps = Sleeps(), timeout: Double = 20  // (room for two busy cores)
    ) throws -> NotificationHubClient {
        NotificationHubClient(
            connection: try HubConnectionString(parsing: connectionString), hubName: hubName,
            endpoint: hub.endpoint, transport: CurlHubTransport(userAgent: "newspush-test", timeout: timeout),
            retryPolicy: RetryPolicy(sleep: { sleeps.record($0) }))
    }

    func send(_ client: NotificationHubClient, _ request: HubRequest) async -> SendOutcome {
        await offThePool { client.send(request) }
    }

    let properties = [
        "messageParam": "Breaking World News : Storm barrier closes", "title": "Storm barrier closes",
        "category": "World", "url": "https://news.example.org/1", "source": "Desk", "id": "guid:1",
    ]

    @Test func acceptedSendReturnsTheNotificationIdAndReachesDevices() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .accepted(let status, let id, let tracking, _) = outcome else {
            Issue.record("not accepted: \(outcome)")
            return
        }
        #expect(status == 201)
        let deliveries = await hub.emulator.allDeliveries()
        #expect(deliveries.map(\.device) == ["phone-1", "phone-2"])
        #expect(id == deliveries.first?.notificationId)
        #expect(tracking != nil)
        #expect(deliveries[0].payload == #"{"aps":{"alert":"Breaking World News : Storm barrier closes"}}"#)
        #expect(deliveries[1].payload == #"{"message":{"notification":{"body":"Storm bar..."}}}"#)
    }

    @Test func wrongKeyIsRefusedWithAHint() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let wrong = testConnectionString.replacingOccurrences(of: "SharedAccessKey=AAEC", with: "SharedAccessKey=ZZEC")
        let client = try client(hub, connectionString: wrong)
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .refused(401, let reason) = outcome else {
            Issue.record("expected 401: \(outcome)")
            return
        }
        #expect(reason.contains("InvalidSignature"))
        #expect(reason.contains("SharedAccessKey"))
    }

    @Test func expiredTokenMentionsTheClock() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        let request = try client.templateRequest(
            properties: properties, tags: "World", now: Date().addingTimeInterval(-7200))
        let outcome = await send(client, request)
        guard case .refused(401, let reason) = outcome else {
            Issue.record("expected 401: \(outcome)")
            return
        }
        #expect(reason.contains("ExpiredToken"))
        #expect(reason.contains("clock"))
    }

    @Test func listenOnlyPolicyIsRefusedWith403() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let listen =
            "Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName=ListenOnly;SharedAccessKey=bGlzdGVu"
        let client = try client(hub, connectionString: listen)
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .refused(403, let reason) = outcome else {
            Issue.record("expected 403: \(outcome)")
            return
        }
        #expect(reason.contains("Send right"))
    }

    @Test func unknownHubIs404() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        // A misspelt hub.name: the token is signed for it, and the namespace has no such hub.
        let client = try client(hub, hubName: "breaking-newz")
        guard
            case .refused(404, let reason) = await send(
                client, try client.templateRequest(properties: properties, tags: "World"))
        else {
            Issue.record("expected 404")
            return
        }
        #expect(reason.contains("hub.name"))
        #expect(await hub.emulator.allDeliveries().isEmpty)
    }

    @Test func oversizePayloadIsRefusedBeforeOrBySending() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        let huge = ["messageParam": String(repeating: "x", count: 70_000)]
        #expect(throws: HubError.self) { try client.templateRequest(properties: huge, tags: "World") }
        var lenient = client
        lenient.maxPayloadBytes = 1 << 20
        let outcome = await send(lenient, try lenient.templateRequest(properties: huge, tags: "World"))
        guard case .refused(413, let reason) = outcome else {
            Issue.record("expected 413: \(outcome)")
            return
        }
        #expect(reason.contains("too large"))
        #expect(throws: HubError.self) {
            try client.nativeRequest(
                .apple, payload: ["aps": ["alert": String(repeating: "y", count: 5000)]], tags: "World")
        }
    }

    @Test func throttlingIsRetriedHonouringRetryAfter() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let sleeps = Sleeps()
        let client = try client(hub, sleeps: sleeps)
        await hub.emulator.inject(Fault(status: 429, retryAfter: "2", count: 2))
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .accepted = outcome else {
            Issue.record("expected success after retries: \(outcome)")
            return
        }
        #expect(sleeps.all == [2, 2])
    }

    @Test func exhaustedThrottlingIsNotAccepted() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let sleeps = Sleeps()
        let client = try client(hub, sleeps: sleeps)
        await hub.emulator.inject(Fault(status: 503, count: 4))
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .notAccepted(503, _) = outcome else {
            Issue.record("expected notAccepted: \(outcome)")
            return
        }
        #expect(sleeps.all.count == 3, "at most 3 retries")
        // Exponential from 1 s with at most 8 % jitter.
        #expect(sleeps.all[0] >= 1 && sleeps.all[0] <= 1.08)
        #expect(sleeps.all[1] >= 2 && sleeps.all[1] <= 2.16)
        #expect(sleeps.all[2] >= 4 && sleeps.all[2] <= 4.32)
        #expect(await hub.emulator.allDeliveries().isEmpty)
    }

    @Test func quota403WithRetryAfterIsRetried() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        await hub.emulator.inject(Fault(status: 403, retryAfter: "1", count: 1))
        guard case .accepted = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        else {
            Issue.record("expected success after one retry")
            return
        }
    }

    @Test func serverErrorsExhaustedAreUnknownNotRetriedLater() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        await hub.emulator.inject(Fault(status: 500, count: 4))
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .unknown(500, _) = outcome else {
            Issue.record("expected unknown: \(outcome)")
            return
        }
    }

    @Test func droppedConnectionAfterSendingIsUnknown() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        await hub.emulator.inject(Fault(drop: true, count: 1))
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .unknown(nil, _) = outcome else {
            Issue.record("expected unknown: \(outcome)")
            return
        }
    }

    @Test func timeoutAfterSendingIsUnknown() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub, timeout: 1)
        await hub.emulator.inject(Fault(delaySeconds: 3, count: 1))
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .unknown(nil, let reason) = outcome else {
            Issue.record("expected unknown: \(outcome)")
            return
        }
        #expect(reason.contains("timed out"))
    }

    @Test func theFaultAPITakesOneByDefaultAndDelaysBeforeOrAfterDelivery() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let control = CurlHubTransport(userAgent: "test", timeout: 20)
        for fault in [
            #"{"drop": true}"#, #"{"delay_seconds": 12}"#, #"{"status": 504, "delay_seconds": 12}"#,
            #"{"delay_seconds": 12, "delay_after_delivery": true}"#,
        ] {
            let answer = await offThePool {
                control.perform(
                    HubRequest(
                        method: "POST", url: "\(hub.endpoint)_emulator/faults",
                        headers: [("Content-Type", "application/json")],
                        body: Data(fault.utf8)))
            }
            #expect((try? answer.get().status) == 204, "\(fault) was refused")
        }
        let client = try client(hub, timeout: 1)
        let request = try client.templateRequest(properties: properties, tags: "user:alice")  // one device
        // Dropped after delivery: delivered, and the client cannot know.
        guard case .unknown = await send(client, request) else {
            Issue.record("drop: expected unknown")
            return
        }
        #expect(await hub.emulator.allDeliveries().count == 1)
        // Delayed before delivery past the client's timeout: given up by hub.timeout (1 s), not
        // by curl's low-speed limit (10 s, "too slow"), with nothing delivered while the
        // emulator's clock stands still.
        guard case .unknown(_, let delayed) = await send(client, request) else {
            Issue.record("delay: expected unknown")
            return
        }
        #expect(delayed.contains("timed out") && !delayed.contains("too slow"), "\(delayed)")
        #expect(await hub.emulator.allDeliveries().count == 1, "a delayed send was delivered before its delay")
        await hub.emulator.advanceClock(by: 12)
        await hub.emulator.settle()
        #expect(await hub.emulator.allDeliveries().count == 2, "after its delay the hub delivers it anyway")
        // A hub that times out before accepting: 504 after the delay, never delivered.
        guard case .unknown(_, let refused) = await send(client, request) else {
            Issue.record("504 after delay: expected unknown")
            return
        }
        #expect(refused.contains("timed out") && !refused.contains("too slow"), "\(refused)")
        await hub.emulator.advanceClock(by: 12)
        await hub.emulator.settle()
        #expect(await hub.emulator.allDeliveries().count == 2, "a 504 is never delivered")
        // Delayed after delivery: delivered at once, answered too late.
        guard case .unknown = await send(client, request) else {
            Issue.record("late answer: expected unknown")
            return
        }
        #expect(await hub.emulator.allDeliveries().count == 3)
        await hub.emulator.advanceClock(by: 12)
        await hub.emulator.settle()
        // Each fault took one request: the next send is normal (sent by a client that waits as
        // long as a starved machine may need: the 1 s timeout above is for the faults' cases).
        let patient = try self.client(hub, timeout: 20)
        guard case .accepted = await send(patient, request) else {
            Issue.record("expected accepted")
            return
        }
    }

    @Test func noHubListeningIsNotAccepted() async throws {
        let client = NotificationHubClient(
            connection: try HubConnectionString(parsing: testConnectionString), hubName: "breaking-news",
            endpoint: "http://127.0.0.1:1/", transport: CurlHubTransport(userAgent: "t", timeout: 2),
            retryPolicy: RetryPolicy(sleep: { _ in }))
        let outcome = await send(client, try client.templateRequest(properties: properties, tags: "World"))
        guard case .notAccepted(nil, let reason) = outcome else {
            Issue.record("expected notAccepted: \(outcome)")
            return
        }
        #expect(reason.contains("connection refused"))
    }

    @Test func testSendReportsEachDevice() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        let outcome = await send(
            client, try client.templateRequest(properties: properties, tags: "user:alice", test: true))
        guard case .accepted(_, _, _, let body) = outcome else {
            Issue.record("not accepted")
            return
        }
        let result = try #require(TestSendOutcome(xml: body))
        #expect(result.success == 1)
        #expect(result.results.map(\.registrationId) == ["phone-2"])
        #expect(result.results.first?.platform == "fcmv1")
    }

    @Test func nativeFormatsReachNativeRegistrations() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        let settings = CategorySettings(tags: "World", message: CategorySettings.defaultMessage, format: .apple)
        let content = PushContent(
            category: .world, title: "Storm", url: "https://news.example.org/1", source: "Desk", id: "guid:1")
        let properties = PushRequests.properties(content, settings: settings)
        let apple = try PushRequests.request(
            format: .apple, tags: "World", properties: properties, expiresAfter: 3600, deliveredAt: Date(),
            client: client, now: Date())
        #expect(apple.header("ServiceBusNotification-Format") == "apple")
        #expect(apple.header("apns-push-type") == "alert")
        guard case .accepted = await send(client, apple) else {
            Issue.record("apple not accepted")
            return
        }
        guard
            case .accepted = await send(
                client,
                try PushRequests.request(
                    format: .fcmv1, tags: "World", properties: properties, expiresAfter: 3600, deliveredAt: Date(),
                    client: client, now: Date()))
        else {
            Issue.record("fcmv1 not accepted")
            return
        }
        let deliveries = await hub.emulator.allDeliveries()
        #expect(deliveries.map(\.device) == ["phone-3", "phone-4"])
        #expect(deliveries[0].payload.contains(#""alert":"Breaking World News : Storm""#))
        #expect(deliveries[1].payload.contains(#""body":"Breaking World News : Storm""#))
        #expect(throws: HubError.self) {
            try client.nativeRequest(.fcmv1, payload: ["notification": ["body": "x"]], tags: "World")
        }
    }

    /// An id-only push keeps its texts until it is sealed; sealed, it keeps none of them and
    /// each platform's request carries only the `secureId`.
    @Test func aSealedIdOnlyPushSendsOnlyItsIdToEachPlatform() throws {
        var settings = CategorySettings(tags: "World", message: CategorySettings.defaultMessage, format: .idOnly)
        settings.secureAlert = "New {category} alert"
        let content = PushContent(
            category: .world, title: "Storm", url: "https://news.example.org/1", source: "Desk", id: "guid:1")
        let properties = PushRequests.properties(content, settings: settings)
        #expect(properties["messageParam"] == "Breaking World News : Storm")
        #expect(properties["secureAlert"] == "New World alert")
        let entry = OutboxEntry(
            storyKey: "guid:1", origin: .run, category: .world, format: .idOnly, tags: "World", properties: properties,
            createdAt: Date(), freshUntil: Date())
        #expect(SecurePush.texts(of: entry) == ["default": "Breaking World News : Storm"])
        let sealed = SecurePush.sealed(entry, id: 424_242)
        #expect(!sealed.properties.values.contains { $0.contains("Storm") || $0.contains("news.example") })
        let client = NotificationHubClient(
            connection: try HubConnectionString(parsing: testConnectionString), hubName: "breaking-news",
            transport: CurlHubTransport(userAgent: "newspush-test", timeout: 1))
        let requests = try PushRequests.requests(sealed, client: client, now: Date())
        #expect(requests.map(\.format) == [.apple, .fcmv1, .wns, .template])
        let bodies = try requests.map { try JSONSerialization.jsonObject(with: $0.request.body) as? NSDictionary }
        #expect(
            bodies[0]
                == [
                    "aps": ["alert": "New World alert", "mutable-content": 1, "sound": "default"], "secureId": "424242",
                ])
        #expect(bodies[1] == ["message": ["data": ["secureId": "424242"]]])
        #expect(bodies[2] == ["secureId": "424242"])
        // The readers' platforms go to the signed-in devices; the generic alert to the others,
        // with nothing of the story (no title, link or key).
        let tags = requests.map { $0.request.headers.first { $0.name == "ServiceBusNotification-Tags" }?.value }
        #expect(
            tags == Array(repeating: "(World) && newspush:signed-in", count: 3) + ["(World) && !newspush:signed-in"])
        let generic = try #require(bodies[3] as? [String: String])
        #expect(generic["messageParam"] == "New World alert" && generic["title"] == "" && generic["id"] == "")
        #expect(!generic.values.contains { $0.contains("Storm") || $0.contains("guid:1") })
    }

    @Test func tokensAreReusedUntilNearExpiry() throws {
        let provider = SASTokenProvider(
            connection: try HubConnectionString(parsing: testConnectionString), hub: "breaking-news")
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let first = provider.authorization(now: start)
        #expect(first.contains("se=1800003600"))
        #expect(provider.authorization(now: start.addingTimeInterval(3000)) == first)
        #expect(provider.authorization(now: start.addingTimeInterval(3400)) != first)
    }

    /// The installation's JSON as written by hand is what `JSONEncoder` writes: the same document
    /// for quotes, backslashes, control characters, emoji and every optional part.
    @Test func anInstallationsJSONIsTheEncodersDocument() throws {
        let odd = "q\"b\\s/\n\t\u{01} 🇫🇷 é"
        let installations = [
            HubInstallation(installationId: "a", platform: "apns", pushChannel: "ab12", tags: []),
            HubInstallation(
                installationId: "b.\(odd)", platform: "fcmv1", pushChannel: odd, tags: ["World", odd],
                templates: [
                    "newspush": .init(body: #"{"aps":{"alert":"$(messageParam)"}}"#),
                    "other": .init(body: odd, headers: ["apns-priority": "10", "X": odd], expiry: "$(expiry)"),
                    "third": .init(body: "<toast/>", headers: ["h": "v"]),
                ], userId: odd),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for installation in installations {
            let byHand = try JSONSerialization.jsonObject(with: Data(installation.json.utf8)) as? NSDictionary
            let encoded = try JSONSerialization.jsonObject(with: encoder.encode(installation)) as? NSDictionary
            #expect(byHand != nil && byHand == encoded, "\(installation.json)")
        }
    }

    /// The client's half of installations: the back-end writes and deletes installations through
    /// the hub client; the emulator holds them and routes sends to them.
    @Test func theClientWritesAndDeletesInstallations() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let client = try client(hub)
        let platform = try #require(HubInstallation.platform(forApp: "gcm"))
        #expect(platform == "fcmv1", "legacy FCM apps register on v1 with the same token")
        let phone = HubInstallation(
            installationId: "inst-7", platform: "apns", pushChannel: "ABCDEF0123", tags: ["World", "user:bob"],
            templates: ["alert": .init(body: #"{"aps":{"alert":"$(messageParam)"}}"#, expiry: "$(expiry)")],
            userId: "bob")
        #expect(await offThePool { client.put(phone, now: Date()) } == .done)
        #expect(await hub.emulator.installation("inst-7")?.tags == ["World", "user:bob"])
        guard case .accepted = await send(client, try client.templateRequest(properties: properties, tags: "user:bob"))
        else {
            Issue.record("a send to bob's tag was not accepted")
            return
        }
        #expect(await hub.emulator.allDeliveries().map(\.device) == ["inst-7/alert"])
        var tooMany = phone
        tooMany.tags = (0..<61).map { "t\($0)" }
        let crowded = tooMany
        guard case .refused(400, let detail, _) = await offThePool({ client.put(crowded, now: Date()) }) else {
            Issue.record("61 tags were not refused")
            return
        }
        #expect(detail.contains("60 tags"), "\(detail)")
        #expect(await offThePool { client.deleteInstallation(id: "inst-7", now: Date()) } == .done)
        #expect(await hub.emulator.installation("inst-7") == nil)
        #expect(await offThePool { client.deleteInstallation(id: "inst-7", now: Date()) } == .done)
    }
}
