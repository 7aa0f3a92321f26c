import Foundation
import HubEmulator
import NewsPushTesting
import Synchronization
import Testing

/// The app-open surge after a breaking alert costs the hub nothing (SPEC §9): a registration
/// that changes nothing is answered from the index, a change of `api.templates` reaches each
/// phone at its next start, and under a throttling hub the changed ones are answered 200 or 503
/// with `Retry-After`, never lost. Built binaries, the emulator, both ledgers.
@Suite("The app-open surge")
struct ApiSurgeTests {
    /// `count` registrations from 32 clients at once; each body from `body(n)`.
    static func register(
        _ api: DeskProcess, _ range: Range<Int>, body: @escaping @Sendable (Int) -> String
    ) async -> [Int: RawAnswer] {
        await withTaskGroup(of: [(Int, RawAnswer)].self) { group in
            for client in 0..<32 {
                group.addTask {
                    var answers: [(Int, RawAnswer)] = []
                    for n in stride(from: range.lowerBound + client, to: range.upperBound, by: 32) {
                        let answer = await api.send(
                            "PUT /api/installations/p-\(n) HTTP/1.1", body: body(n),
                            headers: ["Content-Type: application/json"])
                        answers.append((n, answer))
                    }
                    return answers
                }
            }
            return await group.reduce(into: [:]) { all, answers in for (n, a) in answers { all[n] = a } }
        }
    }

    static func body(_ n: Int, topics: String = #"["World"]"#) -> String {
        #"{"platform":"fcmv1","pushChannel":"surge-\#(n)","topics":\#(topics)}"#
    }

    // After a secure push every signed-in phone fetches its text at once. Forty readers who
    // registered at one instance fetch at another (here: the back-end restarted) all at once:
    // every credential is known from the ledger and each is answered as a signed-in reader,
    // none refused because bcrypt's threads are busy (before: 8 checked, the rest 429).
    @Test(arguments: LedgerBackend.allCases)
    func readersKnownAtOneInstanceAreKnownAtTheNextWithoutBcrypt(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let usersFile = fixture.folder.file("api-users.yaml")
        let users = try String(contentsOfFile: usersFile, encoding: .utf8)
        let alice = try #require(users.split(separator: "\n").first { $0.contains("\"alice\"") })
        let readers = (0..<40).map { "reader\($0)" }
        let lines = readers.map { alice.replacingOccurrences(of: "\"alice\"", with: "\"\($0)\"") }
        try (users + lines.joined(separator: "\n") + "\n").write(toFile: usersFile, atomically: true, encoding: .utf8)
        func credential(_ name: String) -> String {
            "Authorization: Basic " + Data("\(name):alice-password".utf8).base64EncodedString()
        }
        for pair in stride(from: 0, to: readers.count, by: 2) {
            let answers = await withTaskGroup(of: Int.self) { group in
                for name in readers[pair..<pair + 2] {
                    group.addTask {
                        await fixture.send(
                            "PUT /api/installations/\(name)-phone", json: Self.body(pair), headers: [credential(name)]
                        ).status
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0 == 200 }, "\(answers)")
        }
        fixture.api.stop()
        let restarted = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", fixture.config], environment: ApiFixture.environment)
        defer { restarted.stop() }
        let statuses = await withTaskGroup(of: Int.self) { group in
            for name in readers {
                group.addTask {
                    await restarted.send("GET /api/notifications/7 HTTP/1.1", headers: [credential(name)]).status
                }
            }
            return await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(statuses == [404: readers.count], "signed in, and no such push: \(statuses)")
    }

    // 1,000 phones registered, then opened again with nothing changed: the hub gets no
    // request; one phone that adds a topic: exactly one hub write. A phone opened a day later
    // writes its `refreshed` time (still without the hub), one opened the same day does not.
    @Test(arguments: LedgerBackend.allCases)
    func unchangedRefreshesNeverReachTheHub(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let emulator = fixture.hub.emulator
        let first = await Self.register(fixture.api, 0..<1000) { Self.body($0) }
        #expect(first.values.allSatisfy { $0.status == 200 })
        // Each new phone one write (a loaded machine may see libcurl send one again on a
        // kept-alive connection the emulator closed): what follows is counted from here.
        let written = await emulator.requestCount("installation")
        #expect(written >= 1000)
        let again = await Self.register(fixture.api, 0..<1000) { Self.body($0) }
        #expect(again.values.allSatisfy { $0.status == 200 })
        #expect(
            again.values.allSatisfy { ApiFixture.object($0)["tags"] as? [String] == ["World"] },
            "the answer is the registration's, from the index")
        #expect(await emulator.requestCount("installation") == written, "no request for an unchanged refresh")
        let changed = await fixture.send(
            "PUT /api/installations/p-7", json: Self.body(7, topics: #"["World","Sports"]"#))
        #expect(changed.status == 200)
        #expect(await emulator.requestCount("installation") == written + 1, "exactly one write for one change")
        #expect(await fixture.atHub("p-7")?.tags == ["World", "Sports"])
        func refreshed(_ id: String) async throws -> String? {
            try await fixture.index().first { $0["id"] as? String == id }?["refreshed"] as? String
        }
        let before = try await refreshed("p-8")
        let nextDay = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", fixture.config],
            environment: ApiFixture.environment.merging(testClock(Date().addingTimeInterval(86400 + 60))) { $1 })
        defer { nextDay.stop() }
        let opened = await nextDay.send(
            "PUT /api/installations/p-8 HTTP/1.1", body: Self.body(8), headers: ["Content-Type: application/json"])
        #expect(opened.status == 200)
        let after = try await refreshed("p-8")
        #expect(
            after != nil && after != before,
            "a day later the refreshed time is written: \(before ?? "-") → \(after ?? "-")")
        _ = await nextDay.send(
            "PUT /api/installations/p-8 HTTP/1.1", body: Self.body(8), headers: ["Content-Type: application/json"])
        #expect(try await refreshed("p-8") == after, "and not again that day")
        #expect(await emulator.requestCount("installation") == written + 1)
    }

    // A new template set (api.templates edited, the API restarted) is written to each
    // installation at its own next start, once: `devices count` says how many still carry the
    // old one.
    @Test(arguments: LedgerBackend.allCases)
    func aNewTemplateSetReachesEachPhoneAtItsNextStart(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let emulator = fixture.hub.emulator
        #expect(await Self.register(fixture.api, 0..<50) { Self.body($0) }.values.allSatisfy { $0.status == 200 })
        fixture.api.stop()
        let config = try String(contentsOfFile: fixture.config, encoding: .utf8)
        try config.replacingOccurrences(
            of: "api:\n",
            with:
                #"api:\#n  templates: {fcmv1: '{"message":{"notification":{"title":"$(category)","body":"$(messageParam)"}}}'}\#n"#
        ).write(toFile: fixture.config, atomically: true, encoding: .utf8)
        let api = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", fixture.config], environment: ApiFixture.environment)
        defer { api.stop() }
        func old() async throws -> Int? {
            let count = try await newspush(
                ["devices", "count", "--format", "json", "--config", fixture.config],
                environment: ApiFixture.environment)
            return (try JSONSerialization.jsonObject(with: Data(count.stdout.utf8)) as? [String: Any])?["old_templates"]
                as? Int
        }
        #expect(try await old() == 50)
        let writes = await emulator.requestCount("installation")
        #expect(await Self.register(api, 0..<10) { Self.body($0) }.values.allSatisfy { $0.status == 200 })
        #expect(await emulator.requestCount("installation") == writes + 10, "each of the ten written once")
        #expect(await emulator.installation("p-3")?.templates?["newspush"]?.body.contains("$(category)") == true)
        #expect(await emulator.installation("p-30")?.templates?["newspush"]?.body.contains("$(category)") == false)
        #expect(try await old() == 40)
        #expect(await Self.register(api, 0..<10) { Self.body($0) }.values.allSatisfy { $0.status == 200 })
        #expect(await emulator.requestCount("installation") == writes + 10, "and not again")
    }

    // The hub-write limit answers: with every write held at the hub, 8 go (api.hub_writes),
    // 64 wait their turn holding no thread, and the other 28 of 100 new phones are told 503 with
    // Retry-After while the hub still holds them all; an unchanged phone is answered from the
    // index meanwhile, and the health check answers. Once the hub answers, the 72 get in (before,
    // the waiting writes held the back-end's threads, the queue never formed, and everything
    // else, refreshes included, waited in line behind them).
    @Test(arguments: LedgerBackend.allCases)
    func theHubWriteLimitAnswersAndNothingElseWaitsBehindIt(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend, api: "  hub_writes: 8\n")
        defer { fixture.stop() }
        let emulator = fixture.hub.emulator
        #expect(await fixture.send("PUT /api/installations/known", json: Self.body(9999)).status == 200)
        await emulator.inject(Fault(delaySeconds: 600, count: 1000, format: "installation"))
        let answers = Answers()
        let all = Task {
            await withTaskGroup(of: Void.self) { group in
                for n in 0..<100 {
                    group.addTask {
                        let answer = await fixture.send("PUT /api/installations/p-\(n)", json: Self.body(n))
                        answers.set(n, answer)
                    }
                }
            }
        }
        await emulator.untilWaiting(8)
        #expect(
            try await WatchTests.until { answers.all.count >= 28 },
            "the writes past the queue are answered while the hub holds the others")
        let early = answers.all
        #expect(early.count == 28, "\(early.count) answered before the hub answered")
        #expect(
            early.values.allSatisfy { $0.status == 503 && Int($0.headers["retry-after"] ?? "") != nil },
            "\(early.values.map(\.status))")
        let unchanged = await fixture.send("PUT /api/installations/known", json: Self.body(9999))
        #expect(unchanged.status == 200, "an unchanged phone is answered from the index: \(unchanged.status)")
        #expect([200, 503].contains(await fixture.send("GET /healthz").status))
        await emulator.clearFaults()
        _ = await emulator.advanceClock(by: 601)
        await all.value
        // The eight at the hub get in; the 64 waiting do, unless the machine took longer than their
        // 20 s of patience to get here (then 503 with Retry-After, as for the 28).
        let late = answers.all.filter { early[$0.key] == nil }
        #expect(late.count == 72 && late.values.filter { $0.status == 200 }.count >= 8, "\(late.values.map(\.status))")
        #expect(
            late.values.allSatisfy { $0.status == 200 || ($0.status == 503 && $0.headers["retry-after"] != nil) },
            "\(late.values.map { "\($0.status) \($0.body)" })")
    }

    // A hub that throttles (429 with Retry-After for its next 64 installation writes, however
    // fast they come): every changed registration is answered 200 or 503 with Retry-After; a
    // phone that tries again gets in; unchanged ones are answered 200 throughout; in the end
    // every phone is at the hub and in the index as it last asked.
    @Test(arguments: LedgerBackend.allCases)
    func aThrottlingHubNeverLosesARegistration(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend, api: "  hub_writes: 8\n")
        defer { fixture.stop() }
        let emulator = fixture.hub.emulator
        #expect(await Self.register(fixture.api, 0..<200) { Self.body($0) }.values.allSatisfy { $0.status == 200 })
        let before = await emulator.requestCount("installation")
        await emulator.inject(Fault(status: 429, retryAfter: "1", count: 64, format: "installation"))
        // 300 new phones and the 200 known ones opening, at once.
        let answers = await Self.register(fixture.api, 0..<500) { Self.body($0) }
        let unchanged = answers.filter { $0.key < 200 }.values
        #expect(unchanged.allSatisfy { $0.status == 200 }, "an unchanged registration never waits for the hub")
        var waiting = answers.filter { $0.key >= 200 && $0.value.status != 200 }
        #expect(waiting.values.allSatisfy { $0.status == 503 && Int($0.headers["retry-after"] ?? "") != nil })
        let requests = await emulator.requestCount("installation") - before
        let taken = answers.filter { $0.key >= 200 && $0.value.status == 200 }.count
        #expect(requests - taken >= 64, "the hub refused 64 writes: \(requests) requests, \(taken) phones in")
        // The phones told to wait come back (their Retry-After is a phone's business: the hub's
        // throttling here ends by count, not by time), until each is in.
        for _ in 0..<30 where !waiting.isEmpty {
            var next: [Int: RawAnswer] = [:]
            for n in waiting.keys.sorted() {
                let answer = await fixture.send("PUT /api/installations/p-\(n)", json: Self.body(n))
                #expect(answer.status == 200 || answer.status == 503, "\(answer.status) \(answer.body)")
                if answer.status != 200 { next[n] = answer }
            }
            waiting = next
        }
        #expect(waiting.isEmpty, "\(waiting.count) phones never got in")
        await emulator.clearFaults()
        let prune = try await newspush(
            ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(prune.status == 0, "\(prune.stdout) \(prune.stderr)")
        let ids = Set(try await fixture.index().compactMap { $0["id"] as? String })
        let atHub = Set(await emulator.allInstallations().map(\.installationId))
        let all = Set((0..<500).map { "p-\($0)" })
        #expect(ids == all && atHub == all, "index \(ids.count), hub \(atHub.count) of 500")
    }
}

/// Answers by request number, from many tasks.
final class Answers: Sendable {
    private let answers = Mutex<[Int: RawAnswer]>([:])

    func set(_ n: Int, _ answer: RawAnswer) { answers.withLock { $0[n] = answer } }

    var all: [Int: RawAnswer] { answers.withLock { $0 } }
}
