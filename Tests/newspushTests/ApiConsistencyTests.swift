import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// A registered phone stays registered (SPEC §9): hub faults never unsubscribe it, the alerts
/// of API-registered phones carry their collapse id and expiry, the back-end's rows stay
/// bounded, and instances share one PostgreSQL database safely. Built binaries, the emulator,
/// both ledger engines.
@Suite("The app back-end keeps phones registered")
struct ApiConsistencyTests {
    /// The hub's answers that must not unsubscribe anyone.
    enum HubFault: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case throttled, unavailable, timeout
        var testDescription: String { rawValue }

        var fault: Fault {
            switch self {
            case .throttled: return Fault(status: 429, retryAfter: "2", count: 100, format: "installation")
            case .unavailable: return Fault(status: 503, count: 100, format: "installation")
            // Held at the hub far longer than the client waits: the answer is lost.
            case .timeout: return Fault(delaySeconds: 3600, count: 100, format: "installation")
            }
        }
    }

    static func put(_ fixture: ApiFixture, _ id: String, handle: String, topics: [String], auth: [String])
        async -> RawAnswer
    {
        let list = topics.map { "\"\($0)\"" }.joined(separator: ",")
        return await fixture.send(
            "PUT /api/installations/\(id)",
            json: #"{"platform":"apns","pushChannel":"\#(handle)","topics":[\#(list)]}"#, headers: auth)
    }

    // A hub that throttles, fails or does not answer while a working phone re-registers with a
    // change: the phone is told 503 with Retry-After, its installation stays exactly as it was
    // at the hub and in the index (after the sweep too), and it receives the next push. A new
    // phone under the same fault is not answered 200 and is nowhere; once the fault is over, its
    // retry succeeds.
    @Test(arguments: LedgerBackend.allCases, HubFault.allCases)
    func aHubFaultNeverUnsubscribesAPhone(_ backend: LedgerBackend, _ kind: HubFault) async throws {
        // A short timeout only where the hub's silence is the fault (a loaded machine is slow).
        let fixture = try await ApiFixture.start(
            backend, hubSettings: "retries: 1, retry_delay: 10ms, timeout: \(kind == .timeout ? "3s" : "60s")")
        defer { fixture.stop() }
        let alice = [ApiFixture.basic("alice")]
        #expect(await Self.put(fixture, "phone-1", handle: "aa01", topics: ["World"], auth: alice).status == 200)
        let before = try #require(await fixture.atHub("phone-1"))
        let indexBefore = try await fixture.index() as NSArray
        await fixture.hub.emulator.inject(kind.fault)
        let changed = await Self.put(fixture, "phone-1", handle: "aa01", topics: ["World", "Sports"], auth: alice)
        #expect(changed.status == 503, "\(changed.status) \(changed.body)")
        let wait = try #require(changed.headers["retry-after"].flatMap(Int.init), "\(changed.headers)")
        #expect(kind != .throttled || wait == 2, "the hub's own Retry-After: \(wait)")
        let fresh = await Self.put(fixture, "phone-2", handle: "bb02", topics: ["World"], auth: alice)
        #expect(fresh.status == 503 && fresh.headers["retry-after"] != nil, "\(fresh.status) \(fresh.body)")
        await fixture.hub.emulator.clearFaults()
        // The sweep (what `devices prune` and each instance's sweeper finish) changes nothing.
        let prune = try await newspush(
            ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(prune.status == 0, "\(prune.stdout) \(prune.stderr)")
        #expect(await fixture.atHub("phone-1") == before, "the working installation is as it was at the hub")
        #expect(try await fixture.index() as NSArray == indexBefore, "and in the index")
        #expect(await fixture.atHub("phone-2") == nil)
        let sent = try await fixture.publishWorld("Storm hits coast")
        #expect(sent.status == 0, "\(sent.stderr)")
        let got = await fixture.deliveries(to: "phone-1")
        #expect(got.count == 1 && got[0].payload.contains("Storm hits coast"), "\(got)")
        let retried = await Self.put(fixture, "phone-2", handle: "bb02", topics: ["World"], auth: alice)
        #expect(retried.status == 200, "\(retried.body)")
        #expect(await fixture.atHub("phone-2")?.tags == ["World", "username:alice", "newspush:signed-in"])
    }

    // A hub that asks to wait longer than a number holds (26 digits of Retry-After) is taken
    // at its word up to a day: the phone is told 503 with Retry-After 86400, and the back-end
    // lives (before, it trapped converting the wait and `newspush api` died).
    @Test func aHubsRetryAfterPastAnyNumberIsADay() async throws {
        let fixture = try await ApiFixture.start(hubSettings: "retries: 0, retry_delay: 10ms, timeout: 60s")
        defer { fixture.stop() }
        await fixture.hub.emulator.inject(
            Fault(status: 429, retryAfter: "99999999999999999999999999", count: 5, format: "installation"))
        let answer = await Self.put(fixture, "phone-1", handle: "aa01", topics: ["World"], auth: [])
        #expect(answer.status == 503 && answer.headers["retry-after"] == "86400", "\(answer.status) \(answer.headers)")
        #expect(fixture.api.isRunning)
        #expect([200, 503].contains(await fixture.send("GET /healthz").status), "it still answers")
    }

    static func hex(_ n: Int) -> String { String(format: "%08x", n) }

    // With the hub down, a pass over what is owed ends after three failures in a row (before,
    // it asked the hub for each of a thousand notes, each waiting out its timeout, holding a
    // session); a note that failed waits behind the others (the sweeper's order and waits:
    // `owedNotesComeOutNeverTriedFirstAndFailedOnesWait`). The operator's `devices prune` then
    // settles everything owed, those that failed included: before, it skipped the notes still
    // waiting and exited 0 with the hub and the index apart (the chaos test's bob, once).
    @Test(arguments: LedgerBackend.allCases)
    func aPassOverWhatIsOwedStopsWhenTheHubIsDownAndFailuresWaitTheirTurn(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        for n in 0..<20 {
            #expect(await Self.put(fixture, "p-\(n)", handle: Self.hex(n), topics: ["World"], auth: []).status == 200)
        }
        await fixture.hub.emulator.inject(Fault(status: 503, count: 100_000, format: "installation"))
        for n in 0..<20 {
            let removed = await fixture.send(
                "DELETE /api/installations/p-\(n)", headers: ["X-Push-Channel: \(Self.hex(n))"])
            #expect(removed.status == 204)
        }
        let asked = await fixture.hub.emulator.requestCount("installation")
        let prune = try await newspush(
            ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(
            prune.status != 0 && (prune.stdout + prune.stderr).contains("17 more not tried"),
            "\(prune.stdout) \(prune.stderr)")
        let during = await fixture.hub.emulator.requestCount("installation") - asked
        #expect(during <= 3 * 2, "three deletes tried (each with its one retry): \(during) requests")
        await fixture.hub.emulator.clearFaults()
        let next = try await newspush(
            ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(next.status == 0, "\(next.stdout) \(next.stderr)")
        #expect(await fixture.hub.emulator.allInstallations().isEmpty, "the three that failed are settled too")
    }

    /// Two requests over one installation, the first held at the hub while the second comes.
    enum Race: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case putAndDelete, oneHandleUnderTwoIds, putAndForget, pruneAndPut
        var testDescription: String { rawValue }
    }

    // Races, each made certain and none timed: the first request's hub write is held at the
    // hub until the back-end says the second one waits for its keys (the installation's, or the
    // reader's), then the hub answers. Afterwards the hub and the index agree: a write racing a
    // delete or a forget never leaves an installation at the hub that the index does not have;
    // one handle under two ids leaves one hub installation; a removal owed since before a
    // registration never deletes it. A second request that waited past the back-end's patience
    // (a machine too busy to release the hub in time) is answered 503 with Retry-After, and the
    // phone's retry then does what it asked.
    @Test(arguments: LedgerBackend.allCases, Race.allCases)
    func racesOverOneInstallationLeaveTheHubAndTheIndexAgreeing(_ backend: LedgerBackend, _ race: Race)
        async throws
    {
        let fixture = try await ApiFixture.start(backend, verbose: true)
        defer { fixture.stop() }
        let alice = [ApiFixture.basic("alice")]
        let emulator = fixture.hub.emulator
        let hold = Fault(delaySeconds: 600, count: 1, format: "installation")
        #expect(await Self.put(fixture, "x", handle: "aa01", topics: ["World"], auth: alice).status == 200)
        let first: Task<RawAnswer, Never>
        let second: @Sendable () async -> RawAnswer
        switch race {
        case .putAndDelete, .putAndForget:
            await emulator.inject(hold)
            first = Task { await Self.put(fixture, "x", handle: "aa01", topics: ["World", "Sports"], auth: alice) }
            second = {
                race == .putAndDelete
                    ? await fixture.send("DELETE /api/installations/x", headers: alice)
                    : await fixture.send("DELETE /api/users/me", headers: alice)
            }
        case .oneHandleUnderTwoIds:
            await emulator.inject(hold)
            first = Task { await Self.put(fixture, "y", handle: "bb02", topics: ["World"], auth: []) }
            second = { await Self.put(fixture, "z", handle: "bb02", topics: ["Sports"], auth: []) }
        case .pruneAndPut:
            // x's removal is owed (the hub failed the delete), then prune's delete is held.
            await emulator.inject(Fault(status: 503, count: 10, format: "installation"))
            #expect(await fixture.send("DELETE /api/installations/x", headers: alice).status == 204)
            await emulator.clearFaults()
            await emulator.inject(hold)
            first = Task {
                let prune = try? await newspush(
                    ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
                return RawAnswer(status: Int(prune?.status ?? -1))
            }
            second = { await Self.put(fixture, "x", handle: "aa01", topics: ["World"], auth: alice) }
        }
        await emulator.untilSomethingWaits()
        let overtaking = Task { await second() }
        #expect(
            await fixture.api.errors.until("a change waits for another change of"),
            "\(race): the second request did not wait for the first")
        _ = await emulator.advanceClock(by: 601)
        _ = await first.value
        var answer = await overtaking.value
        for _ in 0..<5 where answer.status == 503 {
            #expect(answer.headers["retry-after"] != nil, "\(race): 503 without Retry-After: \(answer.body)")
            answer = await second()
        }
        #expect([200, 204].contains(answer.status), "\(race): \(answer.status) \(answer.body)")
        let prune = try await newspush(
            ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(prune.status == 0, "\(prune.stdout) \(prune.stderr)")
        let atHub = await emulator.allInstallations()
        let index = try await fixture.index()
        let indexTags = Dictionary(
            uniqueKeysWithValues: index.compactMap { row in
                (row["id"] as? String).map { ($0, Set(row["tags"] as? [String] ?? [])) }
            })
        #expect(
            Dictionary(uniqueKeysWithValues: atHub.map { ($0.installationId, Set($0.tags ?? [])) }) == indexTags,
            "\(race): hub \(atHub.map(\.installationId)) index \(index)")
        #expect(Dictionary(grouping: atHub, by: \.pushChannel).values.allSatisfy { $0.count == 1 }, "\(race)")
        switch race {
        case .putAndForget: #expect(atHub.isEmpty, "nothing of alice survives her forget")
        case .pruneAndPut: #expect(atHub.map(\.installationId) == ["x"], "registered again since the removal")
        default: break
        }
    }

    // A phone that changes its topics is counted under exactly its new ones, once each (a
    // kept topic stays, a dropped one goes; PostgreSQL records the change in one statement),
    // and a phone whose handle a new installation takes leaves every count.
    @Test(arguments: LedgerBackend.allCases)
    func aPhoneIsCountedUnderExactlyItsTopicsAfterEachChange(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        func topics() async throws -> [String: Int] {
            let count = try await newspush(
                ["devices", "count", "--format", "json", "--config", fixture.config],
                environment: ApiFixture.environment)
            let counts = try JSONSerialization.jsonObject(with: Data(count.stdout.utf8)) as? [String: Any]
            return counts?["topics"] as? [String: Int] ?? ["unreadable": 0]
        }
        #expect(await Self.put(fixture, "p1", handle: "bb01", topics: ["World", "Sports"], auth: []).status == 200)
        #expect(await Self.put(fixture, "p2", handle: "bb02", topics: ["Sports"], auth: []).status == 200)
        #expect(try await topics() == ["World": 1, "Sports": 2])
        #expect(await Self.put(fixture, "p1", handle: "bb01", topics: ["Sports", "Science"], auth: []).status == 200)
        #expect(try await topics() == ["Sports": 2, "Science": 1])
        #expect(await Self.put(fixture, "p1", handle: "bb01", topics: [], auth: []).status == 200)
        #expect(try await topics() == ["Sports": 1])
        #expect(await Self.put(fixture, "p3", handle: "bb02", topics: ["Politics"], auth: []).status == 200)
        #expect(try await topics() == ["Politics": 1])
        #expect(await fixture.atHub("p2") == nil, "the installation whose handle p3 took is gone from the hub")
    }

    // A change that waits past the back-end's patience for another change of the same
    // installation (a hub write held for a minute) is answered 503 with Retry-After, on both
    // engines, and changes nothing; on PostgreSQL that wait once ran into the connection's
    // 20-second answer timeout instead and was answered 503 without Retry-After.
    @Test(arguments: LedgerBackend.allCases)
    func aChangeThatWaitsTooLongIsToldToTryAgain(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend, verbose: true)
        defer { fixture.stop() }
        let alice = [ApiFixture.basic("alice")]
        #expect(await Self.put(fixture, "x", handle: "aa01", topics: ["World"], auth: alice).status == 200)
        await fixture.hub.emulator.inject(Fault(delaySeconds: 600, count: 1, format: "installation"))
        let held = Task { await Self.put(fixture, "x", handle: "aa01", topics: ["World", "Sports"], auth: alice) }
        await fixture.hub.emulator.untilSomethingWaits()
        let forget = await fixture.send("DELETE /api/users/me", headers: alice)
        #expect(forget.status == 503 && forget.headers["retry-after"] == "2", "\(forget.status) \(forget.headers)")
        #expect(forget.body.contains("try again"), "\(forget.body)")
        #expect(await fixture.atHub("x") != nil, "the forget did nothing yet")
        _ = await fixture.hub.emulator.advanceClock(by: 601)
        #expect(await held.value.status == 200)
        #expect(await fixture.send("DELETE /api/users/me", headers: alice).status == 204)
        #expect(await fixture.atHub("x") == nil)
    }

    // The installations the back-end writes carry the alert's headers (docs/alerts.md): on an
    // API-registered iPhone and Android phone a correction has the first alert's collapse id
    // (it replaces it on the lock screen), and an alert that reaches a phone after its expiry
    // (the phone was off for two hours) is never shown.
    @Test func aCorrectionReplacesTheFirstAlertAndAStaleOneIsNeverShown() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        #expect(await Self.put(fixture, "ios-1", handle: "ab01", topics: ["World"], auth: []).status == 200)
        let android = await fixture.send(
            "PUT /api/installations/droid-1", json: #"{"platform":"fcmv1","pushChannel":"fcm-1","topics":["World"]}"#)
        #expect(android.status == 200)
        func publish(_ arguments: [String]) async throws {
            let result = try await newspush(
                ["publish", "--config", fixture.config, "--yes"] + arguments, environment: ApiFixture.environment)
            #expect(result.status == 0, "\(result.stderr)")
        }
        try await publish(["--category", "World", "--title", "Bridge colapses", "--url", "https://news.example/b"])
        try await publish(["--replace", "link:news.example/b", "--title", "Bridge collapses"])
        let deliveries = await fixture.hub.emulator.allDeliveries()
        for device in ["ios-1/newspush", "droid-1/newspush"] {
            let alerts = deliveries.filter { $0.device == device }
            #expect(alerts.count == 2, "\(device): \(alerts)")
            #expect(alerts.first?.collapseId != nil && alerts.first?.collapseId == alerts.last?.collapseId, "\(alerts)")
            #expect(alerts.last?.payload.contains("Bridge collapses") == true)
        }
        let iphone = try #require(deliveries.first { $0.device == "ios-1/newspush" })
        #expect(iphone.headers?["apns-push-type"] == "alert" && iphone.headers?["apns-priority"] == "10")
        await fixture.hub.emulator.takeOffline(installation: "ios-1", seconds: 2 * 3600)
        try await publish(["--category", "World", "--title", "Late night vote"])
        _ = await fixture.hub.emulator.advanceClock(by: 2 * 3600 + 60)
        await fixture.hub.emulator.settle()
        let late = await fixture.hub.emulator.allDeliveries().filter {
            $0.payload.contains("Late night vote") && $0.device.hasSuffix("/newspush")
        }
        #expect(late.map(\.device) == ["droid-1/newspush"], "the iPhone, off past the alert's hour, never shows it")
    }

    // Bounded: messages, secure pushes and their reads, and registration ids a phone
    // never used leave the ledger once older than the retention (and their day).
    @Test(arguments: LedgerBackend.allCases)
    func theBackEndsRowsAreBoundedByTheRetention(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend, extra: "state_retention: 2d")
        defer { fixture.stop() }
        let alice = ApiFixture.basic("alice"), sam = ApiFixture.basic("sam")
        #expect(await Self.put(fixture, "a-1", handle: "aa01", topics: ["World"], auth: [alice]).status == 200)
        for n in 0..<20 {
            _ = await fixture.send("POST /api/register", headers: [alice])  // ids never used
            let message = await fixture.send(
                "POST /api/notifications?pns=apns&to_tag=alice", json: "\"note \(n)\"", headers: [sam])
            #expect(message.status == 200)
        }
        // Messages the hub refused: failed one-shot rows.
        await fixture.hub.emulator.inject(Fault(status: 400, count: 5, format: "apple"))
        for n in 0..<5 {
            let refused = await fixture.send(
                "POST /api/notifications?pns=apns&to_tag=alice", json: "\"refused \(n)\"", headers: [sam])
            #expect(refused.status == 502)
        }
        let secure = await fixture.send("POST /api/notifications", json: "\"secret\"", headers: [alice])
        let secureId = try #require(ApiFixture.object(secure)["secureId"] as? Int)
        #expect(await fixture.send("GET /api/notifications/\(secureId)", headers: [alice]).status == 200)
        let before = try await Self.rows(fixture, backend)
        #expect(before["outbox"] == 26 && before["registration_ids"] == 20, "\(before)")
        #expect(before["secure_pushes"] == 1 && before["secure_reads"] == 1, "\(before)")
        let later = ApiFixture.environment.merging(testClock(Date().addingTimeInterval(3 * 86400))) { $1 }
        let prune = try await newspush(["devices", "prune", "--config", fixture.config], environment: later)
        #expect(prune.status == 0, "\(prune.stderr)")
        let after = try await Self.rows(fixture, backend)
        #expect(
            after == ["outbox": 0, "registration_ids": 0, "secure_pushes": 0, "secure_reads": 0, "installations": 1],
            "\(after)")
    }

    /// How many rows each of the back-end's tables holds.
    static func rows(_ fixture: ApiFixture, _ backend: LedgerBackend) async throws -> [String: Int] {
        let tables = ["outbox", "registration_ids", "secure_pushes", "secure_reads", "installations"]
        var counts: [String: Int] = [:]
        for table in tables {
            counts[table] = try await fixture.count("SELECT COUNT(*) FROM \(table)", backend)
        }
        return counts
    }

    // Several instances starting together on an empty PostgreSQL database: one creates the
    // ledger, the others wait for it and find it made; none fails.
    @Test(.enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"))
    func instancesStartingTogetherOnAnEmptyDatabaseAllStart() async throws {
        let fixture = try await ApiFixture.start(.postgres)
        fixture.api.stop()
        defer { fixture.stop() }
        let config = try String(contentsOfFile: fixture.config, encoding: .utf8)
        let server = try await LocalPostgres.shared()
        let empty = try await server.createDatabase()
        let fresh = try fixture.folder.write(
            "fresh.yaml",
            config.replacingOccurrences(
                of: try #require(config.split(separator: "\n").first { $0.hasPrefix("state:") }.map(String.init)),
                with: "state: \"\(empty)\""))
        let results = try await withThrowingTaskGroup(of: CommandResult.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    // What an instance does first: open the ledger's index to write (creating it).
                    try await newspush(["devices", "prune", "--config", fresh], environment: ApiFixture.environment)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.filter { $0.status != 0 }.map(\.stderr))")
        let show = try await newspush(["devices", "count", "--config", fresh], environment: ApiFixture.environment)
        #expect(show.status == 0 && show.stdout.hasPrefix("0 installations"), "\(show.stdout) \(show.stderr)")
    }

    // `api.pool` bounds an instance's PostgreSQL connections: 16 clients registering at once
    // through an instance with a pool of 4 (three sessions, one reader) never see it hold more
    // than 4.
    @Test(.enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"))
    func anInstanceOpensAtMostItsPoolOfConnections() async throws {
        let fixture = try await ApiFixture.start(.postgres, api: "  pool: 4\n")
        defer { fixture.stop() }
        let database = try #require(fixture.database)
        let server = try await LocalPostgres.shared()
        let most = Most()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for _ in 0..<40 {
                    let text = try await server.psql(
                        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = '\(database)'")
                    await most.see(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0)
                    try await Task.sleep(for: .milliseconds(25))
                }
            }
            for client in 0..<16 {
                group.addTask {
                    for n in 0..<5 {
                        // Past the instance's queue of writes a phone is told to come back.
                        var answer = RawAnswer(status: 0)
                        for _ in 0..<120 {
                            answer = await Self.put(
                                fixture, "c\(client)-\(n)", handle: String(format: "%04x%04x", client, n),
                                topics: ["World"], auth: [])
                            guard answer.status == 503, let wait = Int(answer.headers["retry-after"] ?? "") else {
                                break
                            }
                            try await Task.sleep(for: .seconds(wait))
                        }
                        #expect(answer.status == 200, "\(answer.body)")
                    }
                }
            }
            try await group.waitForAll()
        }
        // The instance's connections, and the one psql asks through.
        let seen = await most.value
        #expect(seen <= 4 + 1 && seen >= 2, "\(seen) connections")
    }

    actor Most {
        var value = 0
        func see(_ n: Int) { value = max(value, n) }
    }
}

extension ApiFixture {
    /// The PostgreSQL database of the fixture's ledger, if it has one.
    var database: String? {
        guard let text = try? String(contentsOfFile: config, encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("state: \"postgres") })
        else { return nil }
        return line.split(separator: "/").last.map { String($0.prefix { $0 != "\"" && $0 != "?" }) }
    }

    /// A number the ledger answers to `sql` (SQLite through the file, PostgreSQL through psql).
    func count(_ sql: String, _ backend: LedgerBackend) async throws -> Int {
        switch backend {
        case .sqlite:
            let tool = "/usr/bin/sqlite3"
            try #require(FileManager.default.isExecutableFile(atPath: tool), "sqlite3 (scripts/setup.sh --tests)")
            let result = try await newspushRaw(tool, [folder.file("newspush-state.db"), sql])
            return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        case .postgres:
            let text = try await LocalPostgres.shared().psql(sql, database: try #require(database))
            return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
    }
}
