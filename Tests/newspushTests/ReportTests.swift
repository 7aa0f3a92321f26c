import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// SPEC §11 through the built binaries: an alert carries its id to the phones, the apps report
/// receipt and opens to `newspush api`, and `newspush report` says what each alert did.
@Suite("Reports")
struct ReportTests {
    /// Three phones of the World topic as apps register them: an anonymous iPhone and Android
    /// phone, and alice's Windows PC.
    static let phones: [(id: String, body: String, auth: String?)] = [
        ("ios-1", #"{"platform":"apns","pushChannel":"aa01","topics":["World"]}"#, nil),
        ("android-1", #"{"platform":"fcmv1","pushChannel":"fcm-android-1","topics":["World"]}"#, nil),
        (
            "pc-1",
            #"{"platform":"wns","pushChannel":"https://db5.notify.windows.com/?token=AwYAAAB","topics":["World"]}"#,
            ApiFixture.basic("alice")
        ),
    ]

    /// Registers the three phones and publishes one World alert; returns the alert id each
    /// phone found in what it was handed, as its app reads it.
    static func alertTheThreePhones(_ fixture: ApiFixture, title: String) async throws -> [String: String] {
        for phone in phones {
            let answer = await fixture.send(
                "PUT /api/installations/\(phone.id)", json: phone.body, headers: phone.auth.map { [$0] } ?? [])
            #expect(answer.status == 200, "\(phone.id): \(answer.body)")
        }
        let sent = try await fixture.publishWorld(title)
        #expect(sent.status == 0, "\(sent.stderr)")
        var ids: [String: String] = [:]
        for phone in phones {
            let delivered = await fixture.deliveries(to: phone.id)
            let payload = try #require(delivered.last?.payload, "\(phone.id) got nothing")
            ids[phone.id] = try #require(alertId(in: payload), "\(phone.id): no alert id in \(payload)")
        }
        return ids
    }

    /// The alert id where each platform's app finds it: the top of the APNs body, the FCM v1
    /// message's data, the WNS toast's launch argument.
    static func alertId(in payload: String) -> String? {
        if payload.hasPrefix("<") { return LaunchArgument.of(payload) }
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else {
            return nil
        }
        if let message = object["message"] as? [String: Any] {
            return (message["data"] as? [String: Any])?["alertId"] as? String
        }
        return object["alertId"] as? String
    }

    static func event(_ fixture: ApiFixture, alert: String, _ body: String, auth: String? = nil) async -> Int {
        await fixture.send("POST /api/alerts/\(alert)/events", json: body, headers: auth.map { [$0] } ?? []).status
    }

    static func report(_ fixture: ApiFixture, _ extra: [String] = []) async throws -> [[String: Any]] {
        let result = try await newspush(
            ["report", "--format", "json", "--config", fixture.config] + extra, environment: ApiFixture.environment)
        #expect(result.status == 0, "\(result.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return try #require(document?["alerts"] as? [[String: Any]], "\(result.stdout)")
    }

    // The alert id reaches every platform through the back-end's default templates; each
    // kind of event counts once per installation (an open brings its receipt), only for the
    // caller who registered the installation; the report has the audience counted when the
    // alert went, the counts by platform, the open rate and the latency.
    @Test(arguments: LedgerBackend.allCases)
    func eachPhonesReceiptAndOpenAreCountedOnceInTheReport(_ backend: LedgerBackend) async throws {
        let feed = try await LocalHTTPServer.serving([
            "/world.xml": CannedResponse(text: rssFeed(title: "World desk", items: []))
        ])
        defer { feed.stop() }
        let fixture = try await ApiFixture.start(
            backend, feeds: ["{url: \"\(feed.baseURL)/world.xml\", category: World}"])
        defer { fixture.stop() }
        let ids = try await Self.alertTheThreePhones(fixture, title: "Summit opens in Geneva")
        let alert = try #require(ids["ios-1"])
        #expect(Set(ids.values) == [alert], "the same alert id on every platform: \(ids)")
        let alice = ApiFixture.basic("alice")
        // The iPhone's service extension says received, then the reader taps; the Android app
        // reports only the tap, twice; the PC's open comes once without alice's credential (not
        // counted), then with it.
        for (body, auth) in [
            (#"{"installationId":"ios-1","event":"received"}"#, nil),
            (#"{"installationId":"ios-1","event":"opened"}"#, nil),
            (#"{"installationId":"android-1","event":"opened"}"#, nil),
            (#"{"installationId":"android-1","event":"opened"}"#, nil),
            (#"{"installationId":"pc-1","event":"opened"}"#, nil),
            (#"{"installationId":"no-such-phone","event":"opened"}"#, nil),
        ] as [(String, String?)] {
            #expect(await Self.event(fixture, alert: alert, body, auth: auth) == 204, "\(body)")
        }
        var reports = try await Self.report(fixture)
        var row = try #require(reports.first { $0["id"] as? String == alert }, "\(reports)")
        #expect(row["audience"] as? Int == 3, "\(row)")
        #expect(row["received"] as? Int == 2 && row["opened"] as? Int == 2, "\(row)")
        #expect(row["category"] as? String == "World" && row["title"] as? String == "Summit opens in Geneva")
        #expect((row["open_rate"] as? Double).map { abs($0 - 0.6667) < 0.001 } == true, "\(row)")
        #expect((row["latency"] as? Double).map { $0 >= 0 && $0 < 60 } == true, "\(row)")
        #expect(row["median_time_to_open"] as? Double == 30, "both opens in the first minute: \(row)")
        let platforms = try #require(row["platforms"] as? [String: [String: Int]])
        #expect(
            platforms["apns"] == ["received": 1, "opened": 1] && platforms["fcmv1"] == ["received": 1, "opened": 1])
        #expect(platforms["wns"] == nil, "the PC's unsigned open is not counted: \(platforms)")
        #expect(
            await Self.event(fixture, alert: alert, #"{"installationId":"pc-1","event":"opened"}"#, auth: alice) == 204)
        reports = try await Self.report(fixture, ["--alert", alert])
        row = try #require(reports.first)
        #expect(reports.count == 1 && row["opened"] as? Int == 3 && row["received"] as? Int == 3, "\(row)")
        // The next run, a few minutes on, fetches the hub's outcome counts (the three phones and
        // the emulator's own World phone).
        #expect(row["delivered"] is NSNull, "\(row)")
        let run = try await newspush(
            ["run", "--config", fixture.config],
            environment: ApiFixture.environment.merging(testClock(Date().addingTimeInterval(180))) { $1 })
        #expect(run.status == 0, "\(run.stderr)")
        row = try #require(try await Self.report(fixture, ["--alert", alert]).first)
        #expect(row["delivered"] as? Int == 4 && row["failed"] as? Int == 0, "\(row)")
        // The report for people says the same.
        let text = try await newspush(["report", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(text.status == 0 && text.stdout.contains(alert) && text.stdout.contains("100.0%"), "\(text.stdout)")
    }

    // Bad input (SPEC §11): a malformed body or an unknown kind is 400, a body over 4 KB 413;
    // huge ids, wrong types, invalid UTF-8, another newsroom's alert id and 10,000 replays of one
    // event are refused or not counted, and nothing else changes.
    @Test func malformedRepeatedAndForeignEventsChangeNothing() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let ids = try await Self.alertTheThreePhones(fixture, title: "Markets close higher")
        let alert = try #require(ids["ios-1"])
        let refused: [(String, Int)] = [
            ("", 400), ("{", 400), ("[]", 400), (#"{"installationId":"ios-1"}"#, 400),
            (#"{"installationId":"ios-1","event":"clicked"}"#, 400),
            (#"{"installationId":"ios-1","event":7}"#, 400), (#"{"installationId":42,"event":"opened"}"#, 400),
            (#"{"installationId":"\#(String(repeating: "x", count: 300))","event":"opened"}"#, 400),
            (#"{"installationId":"ios-1","event":"opened","pad":"\#(String(repeating: "p", count: 5000))"}"#, 413),
            (#"{"installationId":"ios-1","installationid":"android-1","event":"opened"}"#, 400),
        ]
        for (body, status) in refused {
            #expect(await Self.event(fixture, alert: alert, body) == status, "\(body.prefix(80))")
        }
        // Invalid UTF-8 in the kind and in the installation id.
        for bytes in [
            Array(#"{"installationId":"ios-1","event":"op"#.utf8) + [0xFF, 0xFE] + Array(#"ened"}"#.utf8),
            Array(#"{"installationId":"ios"#.utf8) + [0xC3, 0x28] + Array(#"-1","event":"opened"}"#.utf8),
        ] {
            let invalid = await fixture.api.send(
                "POST /api/alerts/\(alert)/events HTTP/1.1", bytes: bytes, headers: ["Content-Type: application/json"])
            #expect(invalid.status == 400, "\(invalid.body)")
        }
        // Not this newsroom's alert, or an id no alert has: 204, nothing counted.
        for foreign in ["0190c1d2-0000-7000-8000-000000000000", String(repeating: "9", count: 2000), "%00"] {
            #expect(
                await Self.event(fixture, alert: foreign, #"{"installationId":"ios-1","event":"opened"}"#) == 204,
                "\(foreign.prefix(40))")
        }
        // The same open replayed 10,000 times from 16 connections: counted once.
        await withTaskGroup(of: Void.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    for _ in 0..<625 where lane >= 0 {
                        _ = await Self.event(fixture, alert: alert, #"{"installationId":"ios-1","event":"opened"}"#)
                    }
                }
            }
        }
        let row = try #require(try await Self.report(fixture).first)
        #expect(row["received"] as? Int == 1 && row["opened"] as? Int == 1, "\(row)")
        #expect(row["audience"] as? Int == 3)
        #expect(try await fixture.index().count == 3, "the index is as it was")
    }

    // Forgetting a reader removes nothing from a report, and no report names a reader: the
    // ledger keeps only keyed digests of the installations that reported.
    @Test func forgettingAReaderLeavesTheReportAsItWas() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let ids = try await Self.alertTheThreePhones(fixture, title: "Rates held steady")
        let alert = try #require(ids["pc-1"])
        let alice = ApiFixture.basic("alice")
        #expect(
            await Self.event(fixture, alert: alert, #"{"installationId":"pc-1","event":"opened"}"#, auth: alice) == 204)
        #expect(await Self.event(fixture, alert: alert, #"{"installationId":"ios-1","event":"received"}"#) == 204)
        let before = try #require(try await Self.report(fixture).first)
        let forgot = try await newspush(
            ["devices", "forget-user", "alice", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(forgot.status == 0, "\(forgot.stderr)")
        let after = try #require(try await Self.report(fixture).first)
        for field in ["audience", "received", "opened", "open_rate"] {
            #expect("\(before[field] ?? "nil")" == "\(after[field] ?? "nil")", "\(field): \(before) → \(after)")
        }
        #expect(after["opened"] as? Int == 1 && after["received"] as? Int == 2)
        let exported = try await newspush(
            ["state", "export", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(exported.status == 0, "\(exported.stderr)")
        for name in ["pc-1", "ios-1", "alice"] {
            #expect(!exported.stdout.contains("\"\(name)\""), "the export names \(name)")
        }
        // The report moves with the ledger: a JSON export, and a copy of the SQLite file.
        let file = try fixture.folder.write("export.json", exported.stdout)
        let state = fixture.folder.file("newspush-state.db")
        for (source, target) in [(file, "from-json.db"), (state, "copied.db")] {
            let ledger = fixture.folder.file(target)
            let loaded = try await newspush(["state", "import", source, "--state", ledger])
            #expect(loaded.status == 0, "\(loaded.stderr)")
            let moved = try await newspush(["report", "--format", "json", "--state", ledger])
            let document = try JSONSerialization.jsonObject(with: Data(moved.stdout.utf8)) as? [String: Any]
            let row = try #require(
                (document?["alerts"] as? [[String: Any]])?.first,
                "\(target): \(moved.stdout)\(moved.stderr)\(loaded.stdout)")
            for field in ["id", "audience", "received", "opened", "platforms"] {
                #expect(row[field] as? NSObject == after[field] as? NSObject, "\(target) \(field)")
            }
            // The export keeps whole seconds.
            let latency = try #require(row["latency"] as? Double), before = try #require(after["latency"] as? Double)
            #expect(abs(latency - before) <= 1, "\(target): \(latency) against \(before)")
        }
    }

    // Events are taken for 7 days after the send: an app reporting later is answered 204 and
    // not counted.
    @Test func anEventOverSevenDaysAfterTheSendIsNotCounted() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let ids = try await Self.alertTheThreePhones(fixture, title: "Old news")
        let alert = try #require(ids["ios-1"])
        let later = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", fixture.config],
            environment: ApiFixture.environment.merging(testClock(Date().addingTimeInterval(8 * 86400))) { $1 })
        defer { later.stop() }
        let answer = await later.send(
            "POST /api/alerts/\(alert)/events HTTP/1.1", body: #"{"installationId":"ios-1","event":"opened"}"#,
            headers: ["Content-Type: application/json"])
        #expect(answer.status == 204)
        let row = try #require(try await Self.report(fixture).first)
        #expect(row["opened"] as? Int == 0 && row["received"] as? Int == 0, "\(row)")
    }
}

extension ReportTests {
    // The emulator's devices report too: twenty anonymous phones whose app reports every
    // receipt and half the opens (seeded) are counted in the report, exactly the opens the seed
    // draws, even when they report before the hub answered the send; the emulator's own file
    // phone (not in the index) is not.
    @Test func theEmulatorsPhonesReportAndTheReportCountsThem() async throws {
        let devices =
            HostileOperatorTests.devices + "\ninstallations_report: {received: 1, opened: 0.5}\nreport_seed: 7\n"
        let fixture = try await ApiFixture.start(devices: devices)
        defer { fixture.stop() }
        let phones = (1...20).map { "phone-\($0)" }
        for (n, phone) in phones.enumerated() {
            let answer = await fixture.send(
                "PUT /api/installations/\(phone)",
                json: #"{"platform":"apns","pushChannel":"\#(String(format: "%064x", n + 1))","topics":["World"]}"#)
            #expect(answer.status == 200, "\(answer.body)")
        }
        await fixture.hub.emulator.reportTo("http://127.0.0.1:\(fixture.api.port)")
        // The phones report before the hub has even answered the send (it delivers, then waits
        // half a second): their events count all the same.
        await fixture.hub.emulator.inject(Fault(delaySeconds: 0.5, delayAfterDelivery: true, format: "template"))
        let sent = try await fixture.publishWorld("Ceasefire agreed")
        #expect(sent.status == 0, "\(sent.stderr)")
        let payload = try #require(await fixture.deliveries(to: "phone-1").first?.payload)
        let alert = try #require(Self.alertId(in: payload))
        let opened = phones.filter { HubEmulator.draw(7, $0, alert, "opened") < 0.5 }.count
        var row: [String: Any] = [:]
        for _ in 0..<50 {
            row = try #require(try await Self.report(fixture).first)
            if row["received"] as? Int == 20 && row["opened"] as? Int == opened { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(row["audience"] as? Int == 20 && row["received"] as? Int == 20, "\(row)")
        #expect(row["opened"] as? Int == opened && opened > 0 && opened < 20, "\(opened): \(row)")
    }
}

extension ReportTests {
    // A correction (`publish --replace`) is an alert of its own in the report, linked to the
    // first; the phones' reports of each count for that one.
    @Test func aCorrectionIsAnAlertOfItsOwnLinkedToTheFirst() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let ids = try await Self.alertTheThreePhones(fixture, title: "Minister resigns")
        let first = try #require(ids["ios-1"])
        let key = try #require(try await Self.report(fixture).first?["story"] as? String)
        let corrected = try await newspush(
            [
                "publish", "--config", fixture.config, "--category", "World", "--title", "Minister offers to resign",
                "--replace", key, "--yes",
            ], environment: ApiFixture.environment)
        #expect(corrected.status == 0, "\(corrected.stderr)")
        let payload = try #require(await fixture.deliveries(to: "ios-1").last?.payload)
        let second = try #require(Self.alertId(in: payload))
        #expect(second != first)
        #expect(await Self.event(fixture, alert: second, #"{"installationId":"ios-1","event":"opened"}"#) == 204)
        let rows = try await Self.report(fixture)
        let correction = try #require(rows.first { $0["id"] as? String == second }, "\(rows)")
        #expect(correction["kind"] as? String == "correction" && correction["replaces"] as? String == first)
        #expect(correction["opened"] as? Int == 1 && correction["audience"] as? Int == 3, "\(correction)")
        #expect(rows.first { $0["id"] as? String == first }?["opened"] as? Int == 0)
    }
}

/// The `launch` attribute of a WNS toast (the alert id the back-end's template puts there).
final class LaunchArgument: NSObject, XMLParserDelegate {
    private var launch: String?

    static func of(_ xml: String) -> String? {
        let parser = XMLParser(data: Data(xml.utf8))
        let reader = LaunchArgument()
        parser.delegate = reader
        _ = parser.parse()
        return reader.launch
    }

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        if name == "toast" { launch = attributes["launch"] }
    }
}
