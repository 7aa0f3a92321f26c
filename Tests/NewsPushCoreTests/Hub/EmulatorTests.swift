import Foundation
import NotificationHubs
import Testing

@testable import HubEmulator

@Suite("Hub emulator: expressions, templates, SAS checks")
struct EmulatorTests {
    // MARK: Template language (hub-api.md §4)

    let properties = [
        "title": "Storm barrier closes", "category": "World", "url": "https://news.example.org/a b?x=1&y=2",
        "badge": "7", "messageParam": "Breaking World News : Storm barrier closes",
    ]

    @Test(arguments: [
        ("$(title)", "Storm barrier closes"),
        ("$(TITLE)", "Storm barrier closes"),  // property names are case-insensitive
        ("$(missing)", ""),
        ("$(title,5)", "Storm"),
        (".(title,10)", "Storm b..."),
        (".(title,50)", "Storm barrier closes"),
        ("%(url)", "https%3A%2F%2Fnews.example.org%2Fa%20b%3Fx%3D1%26y%3D2"),
        ("{'Breaking: ' + $(title)}", "Breaking: Storm barrier closes"),
        ("{$(category) + \" - \" + .(title,8)}", "World - Storm..."),
        ("Some text. $(title)", "Some text. $(title)"),  // not wrapped in {}: a literal
        ("plain literal", "plain literal"),
    ])
    func expressions(template: String, expected: String) {
        #expect(
            TemplateRenderer.evaluateText(
                template, Dictionary(uniqueKeysWithValues: properties.map { ($0.key.lowercased(), $0.value) }))
                == expected)
    }

    @Test func seedTemplateRendersTheMessage() throws {
        let rendered = try TemplateRenderer.renderJSON(#"{"aps":{"alert":"$(messageParam)"}}"#, properties: properties)
        #expect(rendered == #"{"aps":{"alert":"Breaking World News : Storm barrier closes"}}"#)
    }

    @Test func badgeBecomesANumber() throws {
        let rendered = try TemplateRenderer.renderJSON(
            ##"{"aps":{"badge":"#(badge)","alert":"$(title)"}}"##, properties: properties)
        #expect(rendered == #"{"aps":{"alert":"Storm barrier closes","badge":7}}"#)
    }

    @Test func valuesAreJSONEscaped() throws {
        let rendered = try TemplateRenderer.renderJSON(#"{"a":"$(t)"}"#, properties: ["t": "He said \"go\"\n"])
        #expect(rendered == #"{"a":"He said \"go\"\n"}"#)
    }

    @Test func windowsXMLTemplates() {
        let xml =
            #"<toast><visual><binding template="ToastText01"><text id="1">$(title)</text></binding></visual></toast>"#
        #expect(
            TemplateRenderer.renderXML(xml, properties: ["title": "A & B"])
                == #"<toast><visual><binding template="ToastText01"><text id="1">A &amp; B</text>"#
                + #"</binding></visual></toast>"#
        )
    }

    // MARK: Tag expressions

    @Test(arguments: [
        ("World", ["World"], true),
        ("World", ["Politics"], false),
        ("World || Politics", ["Politics"], true),
        ("World && Politics", ["World"], false),
        ("World && !Politics", ["World"], true),
        ("World && !Politics", ["World", "Politics"], false),
        ("Sports || World && Politics", ["Sports"], true),  // && binds tighter than ||
        ("(Sports || World) && Politics", ["Sports"], false),
        ("!(a || b)", ["c"], true),
        ("user:alice", ["user:alice", "World"], true),
    ])
    func tagRouting(expression: String, tags: [String], matches: Bool) throws {
        #expect(try TagPredicate(parsing: expression).matches(Set(tags)) == matches)
    }

    // MARK: Devices file

    @Test func devicesFileErrorsAreNamed() {
        #expect(throws: DeviceRegistry.LoadError.self) {
            try DeviceRegistry.parse("devices:\n  - {id: a, platform: blackberry}\n", file: "d.yaml")
        }
        do {
            _ = try DeviceRegistry.parse(
                "devices:\n  - {id: a, platform: apple, template: '{not json'}\n", file: "d.yaml")
        } catch {
            #expect("\(error)".contains("d.yaml:2"))
        }
        #expect(throws: DeviceRegistry.LoadError.self) {
            try DeviceRegistry.parse(
                "devices:\n  - {id: a, platform: apple}\n  - {id: a, platform: fcmv1}\n", file: "d.yaml")
        }
    }

    // MARK: SAS verification and routing, in process

    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone-1, platform: apple, tags: [World, Politics], template: '{"aps":{"alert":"$(messageParam)"}}'}
          - {id: phone-2, platform: fcmv1, tags: [Sports], template: '{"message":{"notification":{"body":"$(title)"}}}'}
          - {id: phone-3, platform: apple, tags: [World]}
        policies:
          - {name: ListenOnly, key: bGlzdGVu, rights: [Listen]}
        """

    func emulator() throws -> HubEmulator {
        try HubEmulator(
            connection: try HubConnectionString(parsing: testConnectionString),
            registry: try DeviceRegistry.parse(Self.devices, file: "devices.yaml"), logPath: nil)
    }

    func send(
        _ emulator: HubEmulator, token: String?, hub: String = "breaking-news",
        body: String = #"{"messageParam":"Hi","title":"T"}"#,
        format: String = "template", tags: String? = "World", query: [String: String] = ["api-version": "2020-06"]
    ) async -> EmulatorResponse {
        var headers = ["Content-Type": "application/json;charset=utf-8", "ServiceBusNotification-Format": format]
        if let token { headers["Authorization"] = token }
        if let tags { headers["ServiceBusNotification-Tags"] = tags }
        let request = EmulatorRequest(
            method: "POST", path: "/\(hub)/messages/", query: query, headers: headers, body: Data(body.utf8))
        return await emulator.handle(request, fault: await emulator.nextFault(for: request))
    }

    func token(
        _ resource: String = "https://contoso-news.servicebus.windows.net/breaking-news",
        keyName: String = "DefaultFullSharedAccessSignature",
        key: String = testKey, expiry: Int = Int(Date().timeIntervalSince1970) + 3600
    ) -> String {
        SharedAccessSignature.token(resourceURI: resource, keyName: keyName, key: key, expiry: expiry)
    }

    @Test func validTokenDeliversToMatchingTemplateRegistrations() async throws {
        let hub = try emulator()
        let response = await send(hub, token: token())
        #expect(response.status == 201)
        let location = try #require(response.headers.first { $0.0 == "Location" }?.1)
        #expect(location.hasPrefix("https://contoso-news.servicebus.windows.net/breaking-news/messages/NH-"))
        let deliveries = await hub.allDeliveries()
        #expect(deliveries.map(\.device) == ["phone-1"])  // phone-3 is native: template sends skip it
        #expect(deliveries.first?.payload == #"{"aps":{"alert":"Hi"}}"#)
        #expect(location.contains(deliveries[0].notificationId))
    }

    @Test func everyTokenStyleTheSDKsUseIsAccepted() async throws {
        let hub = try emulator()
        let now = Int(Date().timeIntervalSince1970) + 3600
        // .NET: http, messages path, lower-case hex; JS: namespace root with upper-case hex; Java: with the query.
        let dotnetSR = SharedAccessSignature.percentEncode(
            "http://contoso-news.servicebus.windows.net/breaking-news/messages/", lowercaseHex: true)
        let dotnetSig = SharedAccessSignature.percentEncode(
            SharedAccessSignature.sign(sr: dotnetSR, expiry: now, key: testKey), lowercaseHex: true)
        let dotnet =
            "SharedAccessSignature sr=\(dotnetSR)&sig=\(dotnetSig)&se=\(now)&skn=DefaultFullSharedAccessSignature"
        let jsSR = SharedAccessSignature.percentEncode(
            "https://contoso-news.servicebus.windows.net/", lowercaseHex: false)
        let jsSig = SharedAccessSignature.percentEncode(
            SharedAccessSignature.sign(sr: jsSR, expiry: now, key: testKey), lowercaseHex: false)
        let js = "SharedAccessSignature sig=\(jsSig)&se=\(now)&skn=DefaultFullSharedAccessSignature&sr=\(jsSR)"
        let java = token("https://contoso-news.servicebus.windows.net/breaking-news/messages?api-version=2020-06")
        for header in [dotnet, js, java] {
            #expect(await send(hub, token: header).status == 201, "rejected: \(header)")
        }
    }

    @Test func tokenFailuresAnswerLikeTheService() async throws {
        let hub = try emulator()
        let missing = await send(hub, token: nil)
        #expect(missing.status == 401)
        let wrongKey = await send(hub, token: token(key: "not-the-key"))
        #expect(wrongKey.status == 401)
        #expect(String(decoding: wrongKey.body, as: UTF8.self).contains("InvalidSignature"))
        let expired = await send(hub, token: token(expiry: Int(Date().timeIntervalSince1970) - 60))
        #expect(expired.status == 401)
        #expect(String(decoding: expired.body, as: UTF8.self).contains("ExpiredToken"))
        let unknownRule = await send(hub, token: token(keyName: "Nobody"))
        #expect(unknownRule.status == 401)
        let otherHub = await send(hub, token: token("https://contoso-news.servicebus.windows.net/other-hub"))
        #expect(otherHub.status == 401)
        #expect(String(decoding: otherHub.body, as: UTF8.self).contains("InvalidAudience"))
        let listenOnly = await send(hub, token: token(keyName: "ListenOnly", key: "bGlzdGVu"))
        #expect(listenOnly.status == 403)
        let wrongHub = await send(hub, token: token("https://contoso-news.servicebus.windows.net/"), hub: "no-such-hub")
        #expect(wrongHub.status == 404)
        let tooLarge = await send(
            hub, token: token(), body: "{\"messageParam\":\"\(String(repeating: "x", count: 70_000))\"}")
        #expect(tooLarge.status == 413)
        let badTags = await send(hub, token: token(), tags: "$InstallationId:{1}")
        #expect(badTags.status == 400)
        let nested = await send(hub, token: token(), body: #"{"a":{"b":"c"}}"#)
        #expect(nested.status == 400)
        #expect(await hub.allDeliveries().isEmpty)
    }

    @Test func nativeSendsReachOnlyNativeRegistrationsOfThatPlatform() async throws {
        let hub = try emulator()
        #expect(await send(hub, token: token(), body: #"{"aps":{"alert":"Native"}}"#, format: "apple").status == 201)
        #expect(await hub.allDeliveries().map(\.device) == ["phone-3"])
        let fcmWithoutMessage = await send(
            hub, token: token(), body: #"{"notification":{}}"#, format: "fcmv1", tags: "Sports")
        #expect(fcmWithoutMessage.status == 400)
    }

    @Test func testFlagReturnsPerDeviceOutcomes() async throws {
        let hub = try emulator()
        let response = await send(
            hub, token: token(), tags: "World || Sports", query: ["api-version": "2020-06", "test": ""])
        #expect(response.status == 201)
        let outcome = try #require(TestSendOutcome(xml: response.body))
        #expect(outcome.success == 2)
        #expect(Set(outcome.results.map(\.registrationId)) == ["phone-1", "phone-2"])
        let none = await send(hub, token: token(), tags: "Nobody", query: ["test": "true"])
        #expect(TestSendOutcome(xml: none.body)?.results.isEmpty == true)
    }

    @Test func aDeepTagExpressionIsA400NotACrash() async throws {
        let emulator = try emulator()
        let deep = String(repeating: "(", count: 30_000) + "World" + String(repeating: ")", count: 30_000)
        let response = await send(emulator, token: token(), tags: deep)
        #expect(response.status == 400)
    }

    @Test func injectedFaultsApplyToTheNextSends() async throws {
        let hub = try emulator()
        await hub.inject(Fault(status: 429, retryAfter: "2", count: 2))
        let first = await send(hub, token: token())
        #expect(first.status == 429)
        #expect(first.headers.contains { $0.0 == "Retry-After" && $0.1 == "2" })
        #expect(await send(hub, token: token()).status == 429)
        #expect(await send(hub, token: token()).status == 201)
    }

    /// The emulator's clock moves on when told: what waits for a time (a scheduled send, a phone
    /// that is off) happens then, not after real seconds.
    @Test func theClockMovesScheduledSendsAndPhonesThatWereOff() async throws {
        let hub = try HubEmulator(
            connection: try HubConnectionString(parsing: testConnectionString),
            registry: try DeviceRegistry.parse(
                """
                hub: breaking-news
                devices:
                  - {id: on, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
                  - {id: off, platform: apple, tags: [Sports], template: '{"aps":{"alert":"$(messageParam)"}}',
                        offline_seconds: 600}
                """, file: "devices.yaml"), logPath: nil)
        let start = await hub.now()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        let scheduled = EmulatorRequest(
            method: "POST", path: "/breaking-news/schedulednotifications/", query: ["api-version": "2020-06"],
            headers: [
                "Content-Type": "application/json;charset=utf-8", "ServiceBusNotification-Format": "template",
                "ServiceBusNotification-Tags": "World", "Authorization": token(),
                "ServiceBusNotification-ScheduleTime": formatter.string(from: start.addingTimeInterval(3600)),
            ], body: Data(#"{"messageParam":"Later"}"#.utf8))
        #expect(await hub.handle(scheduled).status == 201)
        #expect(await send(hub, token: token(), tags: "Sports").status == 201)
        await hub.settle()
        #expect(await hub.allDeliveries().isEmpty, "nothing is due yet")
        await hub.advanceClock(by: 600)
        await hub.settle()
        #expect(await hub.allDeliveries().map(\.device) == ["off"], "the phone came back after 600 s")
        let control = EmulatorRequest(
            method: "POST", path: "/_emulator/clock", query: [:], headers: [:],
            body: Data(#"{"advance_seconds": 3000}"#.utf8))
        let moved = await hub.handle(control)
        #expect(moved.status == 200 && String(decoding: moved.body, as: UTF8.self).contains(#""now""#))
        await hub.settle()
        #expect(await hub.allDeliveries().map(\.device) == ["off", "on"], "the scheduled send went out at its time")
        #expect(await hub.now().timeIntervalSince(start) >= 3600)
        let backwards = EmulatorRequest(
            method: "POST", path: "/_emulator/clock", query: [:], headers: [:],
            body: Data(#"{"advance_seconds": -5}"#.utf8))
        #expect(await hub.handle(backwards).status == 400, "the clock never goes back")
    }

    func installation(_ hub: HubEmulator, _ method: String, _ id: String, body: String = "", token: String? = nil)
        async -> EmulatorResponse
    {
        let request = EmulatorRequest(
            method: method, path: "/breaking-news/installations/\(id)", query: ["api-version": "2020-06"],
            headers: ["Content-Type": "application/json", "Authorization": token ?? self.token()], body: Data(body.utf8)
        )
        return await hub.handle(request)
    }

    /// The emulator's half of installations: an installation is a device that receives the sends
    /// its tags match, rendered with its templates; GET, PATCH and DELETE as the service answers.
    @Test func anInstallationReceivesWhatItsTagsMatchAndChangesByPatch() async throws {
        let hub = try emulator()
        let put = await installation(
            hub, "PUT", "inst-1",
            body: #"""
                {"installationId": "inst-1", "platform": "apns", "pushChannel": "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0",
                 "tags": ["World", "user:alice"], "userId": "alice",
                 "templates": {"alert": {"body": "{\"aps\":{\"alert\":\"$(messageParam)\"}}"},
                               "sports": {"body": "{\"aps\":{\"alert\":\"Sport: $(messageParam)\"}}", "tags": ["Sports"]}}}
                """#)
        #expect(put.status == 200)
        #expect(await send(hub, token: token(), tags: "World").status == 201)
        var deliveries = await hub.allDeliveries().filter { $0.device.hasPrefix("inst-1") }
        #expect(deliveries.map(\.device) == ["inst-1/alert"], "the Sports template waits for a Sports send")
        #expect(deliveries.first?.payload == #"{"aps":{"alert":"Hi"}}"#)
        let got = await installation(hub, "GET", "inst-1")
        let read = try JSONDecoder().decode(Installation.self, from: got.body)
        #expect(got.status == 200 && read.tags == ["World", "user:alice"] && read.lastUpdate != nil)
        #expect(read.expirationTime == "9999-12-31T23:59:59.9999999Z")
        let patch = await installation(
            hub, "PATCH", "inst-1",
            body: #"[{"op": "add", "path": "/tags", "value": "Sports"}, {"op": "remove", "path": "/tags/World"}]"#)
        #expect(patch.status == 200)
        #expect(await send(hub, token: token(), tags: "World").status == 201)
        #expect(await send(hub, token: token(), tags: "Sports").status == 201)
        deliveries = await hub.allDeliveries().filter { $0.device.hasPrefix("inst-1") }
        #expect(deliveries.map(\.device) == ["inst-1/alert", "inst-1/alert", "inst-1/sports"])
        #expect(await installation(hub, "DELETE", "inst-1").status == 204)
        let gone = await installation(hub, "GET", "inst-1")
        #expect(gone.status == 404 && String(decoding: gone.body, as: UTF8.self).contains("Installation not found"))
        #expect(await installation(hub, "DELETE", "inst-1").status == 204, "DELETE of what is gone is 204")
        #expect(await send(hub, token: token(), tags: "Sports").status == 201)
        #expect(await hub.allDeliveries().filter { $0.device.hasPrefix("inst-1") }.count == 3)
    }

    @Test func installationsTheServiceRefusesAre400AndListenMayRegister() async throws {
        let hub = try emulator()
        func put(_ json: String, id: String = "i", token: String? = nil) async -> Int {
            await installation(hub, "PUT", id, body: json, token: token).status
        }
        let tags = (0..<61).map { "\"t\($0)\"" }.joined(separator: ",")
        #expect(
            await put(#"{"installationId": "i", "platform": "apns", "pushChannel": "ab", "tags": [\#(tags)]}"#) == 400)
        #expect(
            await put(
                #"{"installationId": "i", "platform": "apns", "pushChannel": "ab", "tags": ["$InstallationId:{x}"]}"#)
                == 400)
        #expect(await put(#"{"installationId": "i", "platform": "baidu", "pushChannel": "ab"}"#) == 400)
        #expect(await put(#"{"installationId": "other", "platform": "apns", "pushChannel": "ab"}"#) == 400)
        #expect(await put("not json") == 400)
        let listen = token(keyName: "ListenOnly", key: "bGlzdGVu")
        #expect(await put(#"{"installationId": "i", "platform": "fcmv1", "pushChannel": "tok"}"#, token: listen) == 200)
        #expect(await send(hub, token: listen).status == 403, "Listen registers, it does not send")
        #expect(await put(#"{"installationId": "i", "platform": "apns", "pushChannel": "ab"}"#, token: "nope") == 401)
    }
}
