import Foundation
import HubEmulator
import NewsPushCore
import NewsPushModel
import NewsPushTesting
import NotificationHubs
import Testing

/// The alert as newsrooms send it, through the binary against the emulator: image, expiry,
/// collapse id and corrections, importance, languages, tracking, schedules and telemetry.
@Suite("Alerts: image, expiry, replace, importance, languages, schedule, delivery")
struct AlertFeaturesTests {
    /// The recommended registrations (README): an Apple template with its headers and expiry
    /// from properties, an FCM v1 template, a French one, native registrations.
    static let devices = """
        hub: breaking-news
        devices:
          - id: iphone
            platform: apple
            tags: [World, Politics]
            template: '{"aps":{"alert":"$(messageParam)","mutable-content":1},"image":"$(image)","url":"$(url)"}'
            headers: {apns-priority: "$(priority)", apns-collapse-id: "$(collapseId)"}
            expiry: "$(expiry)"
          - {id: android, platform: fcmv1, tags: [World],
                template: '{"message":{"notification":{"body":"$(messageParam)","image":"$(image)"},\
                "android":{"collapse_key":"$(collapseId)"}}}'}
          - {id: iphone-fr, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam_fr)"}}'}
          - {id: ipad-native, platform: apple, tags: [Sports]}
          - {id: pixel-native, platform: fcmv1, tags: [Business]}
        """

    func feedWithImage(title: String = "Storm closes the harbour for the first time", guid: String = "storm") -> String
    {
        """
        <rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>Desk</title>
        <language>fr-FR</language>
        <item><title>\(title)</title><link>https://news.example.org/\(guid)?utm_source=rss</link><guid>\(guid)</guid>
        <pubDate>\(rfc822(minutesAgo: 2))</pubDate>
        <media:content url="https://img.example.org/\(guid)-big.jpg" medium="image" width="1200" height="800"/>
        <media:thumbnail url="https://img.example.org/\(guid)-thumb.jpg" width="120" height="80"/></item></channel>
        </rss>
        """
    }

    func config(_ folder: TemporaryFolder, hub: LocalHub, feeds: [(String, String)], extra: String = "") throws
        -> String
    {
        try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", retries: 0}
            policy: {first_run: send, budget: {per_category: 20, per: 1h}}
            categories:
              World: {messages: {fr: "Dernière minute ({category}) : {title}"}, names: {fr: Monde}, importance: minor}
              Sports: {format: apple, importance: minor}
              Business: {format: fcmv1, expiry: 30m}
            importance_rules:
              - {title: "^BREAKING:"}
            link_params: {utm_source: newspush, utm_medium: push, utm_campaign: "{category}"}
            \(extra)
            feeds:\(feeds.isEmpty ? " []" : "")
            \(feeds.map { "  - {url: \"\($0.0)\", category: \($0.1)}" }.joined(separator: "\n"))
            """)
    }

    func payload(_ delivery: Delivery) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any])
    }

    @Test func templateSendsCarryImageExpiryCollapseIdImportanceAndLanguages() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let feeds = try await LocalHTTPServer.serving([
                "/world.xml": CannedResponse(text: feedWithImage()),
                "/breaking.xml": CannedResponse(
                    text: feedWithImage(title: "BREAKING: Parliament dissolved", guid: "dissolved")),
            ])
            defer { feeds.stop() }
            let config = try config(
                folder, hub: hub,
                feeds: [("\(feeds.baseURL)/world.xml", "World"), ("\(feeds.baseURL)/breaking.xml", "Politics")])
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 0, "\(run.stderr)")
            let deliveries = await hub.emulator.allDeliveries()
            let iphone = try #require(deliveries.first { $0.device == "iphone" && $0.payload.contains("Storm") })
            let body = try payload(iphone)
            #expect(body["image"] as? String == "https://img.example.org/storm-big.jpg", "the largest media image")
            #expect(
                body["url"] as? String
                    == "https://news.example.org/storm?utm_source=newspush&utm_medium=push&utm_campaign=World")
            #expect(iphone.collapseId == CollapseID.of("guid:127.0.0.1/storm"))
            #expect(iphone.headers?["apns-priority"] == "5", "World is minor")
            // The feed is French: its items use the French message, and the French device its own property.
            #expect(
                (body["aps"] as? [String: Any])?["alert"] as? String
                    == "Dernière minute (Monde) : Storm closes the harbour for the first time")
            let french = try #require(deliveries.first { $0.device == "iphone-fr" && $0.payload.contains("Storm") })
            #expect(french.payload.contains("Dernière minute (Monde) : Storm"))
            let android = try #require(deliveries.first { $0.device == "android" && $0.payload.contains("Storm") })
            #expect(android.collapseId == CollapseID.of("guid:127.0.0.1/storm"))
            #expect(android.payload.contains("https://img.example.org/storm-big.jpg"))
            // The importance rule makes a BREAKING title major in a minor category.
            let breaking = try #require(deliveries.first { $0.device == "iphone" && $0.payload.contains("Parliament") })
            #expect(breaking.headers?["apns-priority"] == "10")
        }
    }

    @Test func nativeSendsSetTheirPlatformsFields() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let feeds = try await LocalHTTPServer.serving([
                "/sport.xml": CannedResponse(text: feedWithImage(title: "Late winner in the derby", guid: "derby")),
                "/biz.xml": CannedResponse(text: feedWithImage(title: "Central bank holds rates", guid: "rates")),
            ])
            defer { feeds.stop() }
            let config = try config(
                folder, hub: hub,
                feeds: [("\(feeds.baseURL)/sport.xml", "Sports"), ("\(feeds.baseURL)/biz.xml", "Business")])
            let before = Date()
            #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
            let deliveries = await hub.emulator.allDeliveries()
            let apple = try #require(deliveries.first { $0.device == "ipad-native" })
            let aps = try #require(try payload(apple)["aps"] as? [String: Any])
            #expect(aps["mutable-content"] as? Int == 1)
            #expect(aps["sound"] == nil, "a minor alert is silent")
            #expect(aps["interruption-level"] as? String == "active")
            #expect(try payload(apple)["image"] as? String == "https://img.example.org/derby-big.jpg")
            #expect(apple.headers?["apns-priority"] == "5")
            #expect(apple.collapseId == CollapseID.of("guid:127.0.0.1/derby"))
            let expiration = try #require(apple.headers?["apns-expiration"].flatMap(Double.init))
            #expect(abs(expiration - before.addingTimeInterval(3600).timeIntervalSince1970) < 30, "one hour by default")
            let fcm = try #require(deliveries.first { $0.device == "pixel-native" })
            let message = try #require(try payload(fcm)["message"] as? [String: Any])
            #expect(
                (message["notification"] as? [String: Any])?["image"] as? String
                    == "https://img.example.org/rates-big.jpg")
            let android = try #require(message["android"] as? [String: Any])
            #expect(android["ttl"] as? String == "1800s", "Business expiry: 30m")
            #expect(android["collapse_key"] as? String == CollapseID.of("guid:127.0.0.1/rates"))
            #expect(android["priority"] as? String == "high")
        }
    }

    @Test func anExpiredAlertIsNotDeliveredToAPhoneThatWasOff() async throws {
        let hub = try await LocalHub.start(
            devicesYAML: """
                hub: breaking-news
                devices:
                  - {id: off-briefly, platform: apple, tags: [World],
                        template: '{"aps":{"alert":"$(messageParam)"}}', expiry: "$(expiry)", offline_seconds: 30}
                  - {id: on, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}',
                        expiry: "$(expiry)"}
                """)
        defer { hub.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)"}
            categories: {World: {expiry: 20s}}
            feeds: []
            """)
        // (An expiry of 20 s, counted from the send's planning: two busy cores and a full test
        // run in parallel once delayed the send by more than 6 s, and the phone that was on
        // found it expired too. The phone that was off is off for 30 s from the send.)
        let sent = try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", "Polls close", "--yes"],
            environment: hubEnvironment)
        #expect(sent.status == 0)
        // The phone comes back 30 s later on the hub's clock.
        await hub.emulator.advanceClock(by: 30)
        await hub.emulator.settle()
        let status = try await newspush(
            ["hub", "status", "--config", config, "--last", "1", "--format", "json"], environment: hubEnvironment)
        #expect(status.status == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: Any]])
        let telemetry = try #require(rows.first?["telemetry"] as? [String: Any])
        #expect(await hub.emulator.allDeliveries().map(\.device) == ["on"], "the phone that was off never shows it")
        #expect(telemetry["state"] as? String == "Completed")
        #expect((telemetry["outcome_counts"] as? [String: [String: Int]])?["Apns"] == ["Success": 1, "Dropped": 1])
    }

    @Test func aCorrectionReplacesTheAlertAndIsTheOnlyRepeatWithoutForce() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub, feeds: [])
            let first = try await newspush(
                [
                    "publish", "--config", config, "--category", "World", "--title", "Bridge closed after crash",
                    "--url", "https://news.example.org/bridge", "--yes",
                ], environment: hubEnvironment)
            #expect(first.status == 0)
            let unknown = try await newspush(
                ["publish", "--config", config, "--replace", "link:nowhere.example/x", "--title", "x", "--yes"],
                environment: hubEnvironment)
            #expect(unknown.status == 64)
            #expect(unknown.stderr.contains("no story with this key"))
            let fix = try await newspush(
                [
                    "publish", "--config", config, "--replace", "link:news.example.org/bridge",
                    "--title", "Bridge reopened after crash", "--yes",
                ], environment: hubEnvironment)
            #expect(fix.status == 0, "\(fix.stderr)")
            let iphone = await hub.emulator.allDeliveries().filter { $0.device == "iphone" }
            #expect(iphone.count == 2)
            #expect(iphone[0].collapseId == iphone[1].collapseId, "the correction replaces the first alert")
            #expect(iphone[1].payload.contains("Bridge reopened"))
            let show = try await newspush(["state", "show", "--config", config], environment: hubEnvironment)
            #expect(show.stdout.contains("[outbox: correction sent"))
            #expect(show.stdout.contains("1 stories (1 pushed)"), "a correction is not a second story")
        }
    }

    @Test func importanceComesFromTheCategoryTheRulesOrTheEditor() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub, feeds: [])
            func publish(_ title: String, _ extra: [String] = []) async throws -> Delivery? {
                let result = try await newspush(
                    ["publish", "--config", config, "--category", "World", "--title", title, "--yes"] + extra,
                    environment: hubEnvironment)
                #expect(result.status == 0, "\(result.stderr)")
                return await hub.emulator.allDeliveries().last { $0.device == "iphone" }
            }
            #expect(try await publish("Weather warning for the coast")?.headers?["apns-priority"] == "5")
            #expect(try await publish("BREAKING: Prime minister resigns")?.headers?["apns-priority"] == "10")
            #expect(
                try await publish("BREAKING: Minor thing", ["--importance", "minor"])?.headers?["apns-priority"] == "5")
        }
    }

    @Test func aScheduledSendIsDeliveredAtItsTimeCancellableAndNeverRepeatedByTheRun() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let feeds = try await LocalHTTPServer.serving([
            "/world.xml": CannedResponse(
                text: """
                    <rss version="2.0"><channel><title>Desk</title><item><title>Results are in</title>
                    <link>https://news.example.org/results</link><guid>r1</guid>
                    <pubDate>\(rfc822(minutesAgo: 1))</pubDate></item></channel></rss>
                    """)
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(folder, hub: hub, feeds: [("\(feeds.baseURL)/world.xml", "World")])
        // Two hours ahead: the run sees the send scheduled and the hub holds it however slow the
        // machine; the emulator delivers it when its clock is moved on two hours.
        let t0 = wholeSecondsNow()
        let scheduled = try await newspush(
            [
                "publish", "--config", config, "--category", "World", "--title", "Results are in",
                "--url", "https://news.example.org/results", "--at", "+2h", "--yes", "--format", "json",
            ],
            environment: hubEnvironment.merging(testClock(t0), uniquingKeysWith: { $1 }))
        #expect(scheduled.status == 0, "\(scheduled.stderr)")
        #expect(await hub.emulator.allDeliveries().isEmpty)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(scheduled.stdout.utf8)) as? [String: Any])
        #expect(answer["status"] as? String == "scheduled")
        let id = try #require(answer["notification_id"] as? String)
        #expect(await hub.emulator.notification(id)?.state == "Scheduled")
        // The feed carries the embargoed article: the run leaves it to the scheduled send.
        let run = try await newspush(
            ["run", "--config", config, "--format", "json"],
            environment: hubEnvironment.merging(testClock(t0.addingTimeInterval(1)), uniquingKeysWith: { $1 }))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let items = report["items"] as? [[String: Any]]
        #expect(items?.first?["decision"] as? String == "scheduled")
        #expect(await hub.emulator.allDeliveries().isEmpty, "not before its time")
        await hub.emulator.advanceClock(by: 7200)
        await hub.emulator.settle()
        let delivered = await hub.emulator.allDeliveries().filter { $0.device == "iphone" }.count
        #expect(delivered == 1, "delivered at its time (two hours on, on the hub's clock)")

        let second = try await newspush(
            [
                "publish", "--config", config, "--category", "World", "--title", "Embargo two",
                "--at", "+4h", "--yes", "--format", "json",
            ], environment: hubEnvironment)  // (the hub's clock is two hours ahead now)
        let secondAnswer = try #require(
            try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        let secondId = secondAnswer["notification_id"] as? String
        let cancelled = try #require(secondId)
        let cancel = try await newspush(["hub", "cancel", "--config", config, cancelled], environment: hubEnvironment)
        #expect(cancel.status == 0, "\(cancel.stderr)")
        #expect(
            !(await hub.emulator.allDeliveries().contains { $0.payload.contains("Embargo two") }),
            "a cancelled send is never delivered")
        let status = try await newspush(["hub", "status", "--config", config, cancelled], environment: hubEnvironment)
        #expect(status.stdout.contains("state Cancelled"))
    }

    @Test func lowerTiersSayTelemetryAndSchedulesNeedStandard() async throws {
        let hub = try await LocalHub.start(
            devicesYAML: Self.devices.replacingOccurrences(
                of: "hub: breaking-news", with: "hub: breaking-news\ntier: basic"))
        defer { hub.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try config(folder, hub: hub, feeds: [])
        let sent = try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", "Basic tier alert", "--yes"],
            environment: hubEnvironment)
        #expect(sent.status == 0)
        // Below Standard a send has no Location, so the ledger holds no id to ask about; an id
        // asked about directly is refused with 403.
        let last = try await newspush(
            ["hub", "status", "--config", config, "--last", "1"], environment: hubEnvironment)
        #expect(last.stderr.contains("ids come from Standard-tier hubs"), "\(last.stderr)")
        let status = try await newspush(
            ["hub", "status", "--config", config, "NH-20261127000000000-0123456789abcdef0123456789abcdef-01"],
            environment: hubEnvironment)
        #expect(status.status == 1)
        #expect(status.stdout.contains("needs the Standard tier"))
        let later = try await newspush(
            [
                "publish", "--config", config, "--category", "World", "--title", "Scheduled on basic",
                "--at", "+1h", "--yes",
            ], environment: hubEnvironment)
        #expect(later.status == 2, "refused for itself, not a hub-wide stop")
        #expect(later.stderr.contains("Standard tier"))
        // Immediate sends are not held up by it.
        let next = try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", "Another alert", "--yes"],
            environment: hubEnvironment)
        #expect(next.status == 0)
    }

    @Test func theEmulatorAcceptsATokenSignedForItsOwnAddress() async throws {
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        // What the official Python REST sample signs when its Endpoint is the emulator's URL.
        let resource = "https://127.0.0.1:\(hub.port)/breaking-news".lowercased()
        let token = SharedAccessSignature.token(
            resourceURI: resource, keyName: "DefaultFullSharedAccessSignature", key: testKey,
            expiry: Int(Date().timeIntervalSince1970) + 600)
        let request = EmulatorRequest(
            method: "POST", path: "/breaking-news/messages", query: ["api-version": "2015-01"],
            headers: [
                "Authorization": token, "Content-Type": "application/json;charset=utf-8",
                "ServiceBusNotification-Format": "template", "ServiceBusNotification-Tags": "World",
            ],
            body: Data(#"{"messageParam":"From the Python sample"}"#.utf8))
        let answer = await hub.emulator.handle(request)
        #expect(answer.status == 201)
        let elsewhere = SharedAccessSignature.token(
            resourceURI: "https://127.0.0.1:1/breaking-news", keyName: "DefaultFullSharedAccessSignature",
            key: testKey, expiry: Int(Date().timeIntervalSince1970) + 600)
        var other = request
        other.headers["authorization"] = elsewhere
        #expect(await hub.emulator.handle(other).status == 401, "another address is still refused")
    }

    @Test func aLongHeadlineIsCutToTheCategoryLength() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let config = try config(folder, hub: hub, feeds: [])
            let title = String(repeating: "Parliament debates the budget again ", count: 8)
            let result = try await newspush(
                ["publish", "--config", config, "--category", "World", "--title", title, "--yes"],
                environment: hubEnvironment)
            #expect(result.status == 0)
            let delivery = try #require(await hub.emulator.allDeliveries().first { $0.device == "iphone" })
            let aps = try #require(try payload(delivery)["aps"] as? [String: Any])
            let alert = aps["alert"] as? String
            #expect(alert?.count ?? 999 <= 178)
            #expect(alert?.hasSuffix("…") == true && alert?.hasSuffix(" …") == false)
        }
    }
}
