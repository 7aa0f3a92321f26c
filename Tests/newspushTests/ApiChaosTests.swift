import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// The hub and the index agree after any interleaving (SPEC §9, "A phone stays registered"):
/// 64 clients issue a seeded random mix of installation writes and deletes, the tutorials'
/// registrations and forgets over a few ids, handles and readers (so they collide), while the
/// hub fails one request in ten (refused, failed without taking it, or taking it and losing
/// the answer), `devices prune` runs beside them and an instance is killed with -9 midway.
/// Then, once what is owed is settled, the invariants hold, checked against the emulator.
/// `NEWSPUSH_CHAOS_SEED` replays a run.
@Suite("The app back-end under chaos")
struct ApiChaosTests {
    static let seed = UInt64(ProcessInfo.processInfo.environment["NEWSPUSH_CHAOS_SEED"] ?? "") ?? 4646
    static let ids = (0..<10).map { "i\($0)" }
    static let handles = (0..<8).map { "chaos-h\($0)" }
    static let users = ["alice", "bob", nil]
    /// No retries: each fault of the hub reaches the back-end's handling of it. A timeout no
    /// loaded test machine reaches: the emulator handles a request it was sent even after its
    /// client gave up, and such a late write is a different test (the faults' `drop` is the
    /// lost answer of a write that landed).
    static let hubSettings = "retries: 0, retry_delay: 10ms, timeout: 30s"

    /// One request as the clients saw it.
    struct Op: Sendable {
        enum Kind: String, Sendable { case put, delete, forget, tutorial }
        var kind: Kind
        var id: String?
        var handle: String?
        var user: String?
        var topics: [String] = []
        var start: Date
        var end: Date = .distantFuture
        var status = 0
        /// Its place in the history.
        var serial = 0
    }

    actor History {
        var ops: [Op] = []
        func add(_ op: Op) {
            var op = op
            op.serial = ops.count
            ops.append(op)
        }
    }

    /// The instance started in place of the killed one.
    actor Restarted {
        var process: DeskProcess?
        func set(_ new: DeskProcess?) { process = new }
        func stop() { process?.stop() }
    }

    /// Where the clients send: the instances still up (one is killed midway).
    actor Instances {
        var live: [DeskProcess]
        init(_ live: [DeskProcess]) { self.live = live }
        func pick(_ n: Int) -> DeskProcess? { live.isEmpty ? nil : live[n % live.count] }
        func all() -> [DeskProcess] { live }
        func replace(_ dead: DeskProcess, with new: DeskProcess?) {
            live.removeAll { $0 === dead }
            if let new { live.append(new) }
        }
    }

    @Test(
        .enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"),
        .timeLimit(.minutes(8)))
    func twoInstancesOnPostgreSQLKeepTheHubAndTheIndexInStep() async throws {
        let fixture = try await ApiFixture.start(.postgres, hubSettings: Self.hubSettings)
        defer { fixture.stop() }
        let second = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", fixture.config], environment: ApiFixture.environment)
        defer { second.stop() }
        try await chaos(fixture, instances: [fixture.api, second]) { instances in
            second.stop()
            await instances.replace(second, with: nil)
        }
    }

    @Test(.timeLimit(.minutes(8)))
    func oneInstanceOnSQLiteKilledAndRestartedKeepsTheHubAndTheIndexInStep() async throws {
        let fixture = try await ApiFixture.start(.sqlite, hubSettings: Self.hubSettings)
        defer { fixture.stop() }
        let restarted = Restarted()
        try await chaos(fixture, instances: [fixture.api]) { instances in
            fixture.api.stop()
            let new = try? await DeskProcess.start(
                ["api", "--listen", "127.0.0.1:0", "--config", fixture.config], environment: ApiFixture.environment)
            await restarted.set(new)
            await instances.replace(fixture.api, with: new)
        }
        await restarted.stop()
    }

    /// The run: clients, faults, prunes, the kill; then the invariants.
    private func chaos(
        _ fixture: ApiFixture, instances live: [DeskProcess], kill: @escaping @Sendable (Instances) async -> Void
    ) async throws {
        let instances = Instances(live)
        let history = History()
        let emulator = fixture.hub.emulator
        await emulator.inject(
            Fault(status: 503, count: 1_000_000, format: "installation", chance: 0.04, seed: Self.seed))
        await emulator.inject(Fault(status: 500, count: 1_000_000, format: "installation", chance: 0.03))
        await emulator.inject(Fault(drop: true, count: 1_000_000, format: "installation", chance: 0.03))
        // A hub that is slow at times: the windows in which requests can overtake each other.
        await emulator.inject(Fault(delaySeconds: 0.05, count: 1_000_000, format: "installation", chance: 0.3))
        let clients = 64, opsPerClient = 24
        let killed = KillOnce()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await Self.prunes(fixture) }
            group.addTask { try await Self.broadcasts(fixture) }
            for client in 0..<clients {
                group.addTask {
                    var random = SeededGenerator(seed: Self.seed &+ UInt64(client) &* 7919)
                    for n in 0..<opsPerClient {
                        if client == 0 && n == opsPerClient / 2, await killed.first() { await kill(instances) }
                        guard let api = await instances.pick(client + n) else { continue }
                        let op = await Self.step(api, random: &random)
                        await history.add(op)
                        // No answer: the instance is down (killed, starting again); a phone waits.
                        if op.status == 0 { try await Task.sleep(for: .milliseconds(100)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        // A calm tail under the same faults: one phone at a time, each on an id and handle of
        // its own, so (c) judges every one of them.
        for n in 0..<10 {
            guard let api = await instances.pick(n) else { break }
            let start = Date()
            let answer = await api.send(
                "PUT /api/installations/tail-\(n) HTTP/1.1",
                body: #"{"platform":"fcmv1","pushChannel":"tail-h\#(n)","topics":["World"]}"#,
                headers: ["Content-Type: application/json"])
            await history.add(
                Op(
                    kind: .put, id: "tail-\(n)", handle: "tail-h\(n)", topics: ["World"], start: start, end: Date(),
                    status: answer.status))
        }
        try await Self.slowHub(fixture, instances: instances, history: history)
        await emulator.clearFaults()
        // The instances stop as an operator stops them (SIGTERM: what they have in flight
        // finishes). A phone that gave up waiting has not stopped its request: on a starved
        // machine an instance may still be between the hub and the index for it, and the
        // invariants are about where everything settles, not about a moment in the middle.
        for api in await instances.all() {
            let status = await api.drain()
            #expect(status == 0, "seed \(Self.seed): exit \(status) on SIGTERM: \(api.errors.current)")
        }
        let settle = try await newspush(
            ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(settle.status == 0, "seed \(Self.seed): \(settle.stdout) \(settle.stderr)")
        try await Self.checkInvariants(fixture, ops: await history.ops)
        try await Self.checkBroadcasts(fixture)
    }

    /// A hub that takes 2 s over every installation write: 64 clients keep registering, deleting
    /// and forgetting while `/healthz` is asked; each request is answered (a full gate says 503
    /// with `Retry-After`), `/healthz` within its 5 s, and the invariants still hold after.
    private static func slowHub(_ fixture: ApiFixture, instances: Instances, history: History) async throws {
        await fixture.hub.emulator.inject(
            Fault(delaySeconds: 2, count: 1_000_000, format: "installation", chance: 1.0))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<64 {
                group.addTask {
                    var random = SeededGenerator(seed: Self.seed &+ 104_729 &+ UInt64(client))
                    for n in 0..<3 {
                        guard let api = await instances.pick(client + n) else { continue }
                        await history.add(await Self.step(api, random: &random))
                    }
                }
            }
            group.addTask {
                guard let api = await instances.pick(0) else { return }
                for _ in 0..<3 {
                    let start = Date()
                    let health = await api.send("GET /healthz HTTP/1.1")
                    let seconds = Date().timeIntervalSince(start)
                    #expect(
                        [200, 503].contains(health.status) && seconds < 8,
                        "seed \(Self.seed): /healthz under a slow hub: \(health.status) after \(seconds) s")
                    try await Task.sleep(for: .seconds(1))
                }
            }
            try await group.waitForAll()
        }
    }

    /// Broadcasts that first went to a chaos reader by name, then to everyone else (`World &&
    /// !username:NAME`), published while the clients run: the readers are forgotten at random
    /// meanwhile.
    private static func broadcasts(_ fixture: ApiFixture) async throws {
        for (n, reader) in ["alice", "bob", "alice", "bob"].enumerated() {
            for target in [["--user", reader], []] {
                let published = try await newspush(
                    [
                        "publish", "--config", fixture.config, "--yes", "--category", "World", "--title",
                        "Chaos broadcast \(n)", "--url", "https://news.example.org/chaos-\(n)",
                    ] + target,
                    environment: ApiFixture.environment)
                #expect([0, 1].contains(published.status), "\(published.stdout) \(published.stderr)")
            }
            try await Task.sleep(for: .milliseconds(300))
        }
    }

    /// Each broadcast is still in the outbox, whoever was forgotten meanwhile, and names no
    /// forgotten reader.
    private static func checkBroadcasts(_ fixture: ApiFixture) async throws {
        let outbox = try await ApiForgetTests.outbox(fixture)
        for n in 0..<4 {
            let rows = outbox.filter { row in
                let text = String(decoding: (try? JSONSerialization.data(withJSONObject: row)) ?? Data(), as: UTF8.self)
                return text.contains("Chaos broadcast \(n)") && (row["tags"] as? String)?.hasPrefix("World") == true
            }
            #expect(rows.count == 1, "seed \(Self.seed): broadcast \(n): \(rows)")
        }
    }

    actor KillOnce {
        var done = false
        func first() -> Bool {
            defer { done = true }
            return !done
        }
    }

    /// `devices prune` beside the clients, a few times (what each instance's sweeper does too).
    private static func prunes(_ fixture: ApiFixture) async throws {
        for _ in 0..<4 {
            _ = try await newspush(
                ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
            try await Task.sleep(for: .milliseconds(300))
        }
    }

    /// One random request of a client, timed.
    private static func step(_ api: DeskProcess, random: inout SeededGenerator) async -> Op {
        let user = users.randomElement(using: &random) ?? nil
        let auth = user.map { [ApiFixture.basic($0)] } ?? []
        let id = ids.randomElement(using: &random) ?? "i0"
        let handle = handles.randomElement(using: &random) ?? "chaos-h0"
        let topics = ["World", "Sports", "Science"].filter { _ in Bool.random(using: &random) }
        let roll = Int.random(in: 0..<100, using: &random)
        var op = Op(kind: .put, id: id, handle: handle, user: user, topics: topics, start: Date())
        switch roll {
        case 0..<55:
            let list = topics.map { "\"\($0)\"" }.joined(separator: ",")
            let answer = await api.send(
                "PUT /api/installations/\(id) HTTP/1.1",
                body: #"{"platform":"fcmv1","pushChannel":"\#(handle)","topics":[\#(list)]}"#,
                headers: auth + ["Content-Type: application/json"])
            op.status = answer.status
        case 55..<75:
            op.kind = .delete
            // The device itself (its handle), or its owner.
            let headers = Bool.random(using: &random) ? ["X-Push-Channel: \(handle)"] : auth
            op.status = await api.send("DELETE /api/installations/\(id) HTTP/1.1", headers: headers).status
        case 75..<80 where user != nil:
            op.kind = .forget
            op.id = nil
            op.handle = nil
            op.status = await api.send("DELETE /api/users/me HTTP/1.1", headers: auth).status
        default:
            guard let user else {
                op.status = -1
                break
            }
            op.kind = .tutorial
            op.user = user
            op.topics = ["World"]
            let asked = await api.send("POST /api/register?handle=\(handle) HTTP/1.1", headers: auth)
            let tutorialId = TutorialApp.registrationId(asked.body)
            op.id = tutorialId
            guard asked.status == 200 else {
                op.status = asked.status
                break
            }
            op.status = await api.send(
                "PUT /api/register/\(tutorialId) HTTP/1.1",
                body: #"{"Platform":"gcm","Handle":"\#(handle)","Tags":["World"]}"#,
                headers: auth + ["Content-Type: application/json"]
            ).status
        }
        op.end = Date()
        return op
    }

    /// (a) every hub installation carrying a user tag is in the index under that user; (b) one
    /// handle, at most one hub installation; the hub and the index hold the same installations
    /// with the same tags; (c) the last write of an id, when nothing raced or followed it, is
    /// what both hold; (d) nothing registered before a forget's answer survives it.
    private static func checkInvariants(_ fixture: ApiFixture, ops: [Op]) async throws {
        let seed = "seed \(Self.seed)"
        let atHub = await fixture.hub.emulator.allInstallations()
        let index = try await fixture.index()
        let rows = Dictionary(
            uniqueKeysWithValues: index.compactMap { row in (row["id"] as? String).map { ($0, row) } })
        let statuses = Dictionary(grouping: ops, by: { "\($0.kind.rawValue) \($0.status)" }).mapValues(\.count)
        print("chaos \(seed): \(statuses.sorted { $0.key < $1.key })")
        // The run did real work: writes, deletes and forgets that succeeded, beside the refusals.
        let writes = ops.filter { ($0.kind == .put || $0.kind == .tutorial) && $0.status == 200 }.count
        let deletes = ops.filter { $0.kind == .delete && $0.status == 204 }.count
        let forgets = ops.filter { $0.kind == .forget && $0.status == 204 }.count
        #expect(writes >= 150 && deletes >= 40 && forgets >= 5, "\(seed): \(writes), \(deletes), \(forgets) succeeded")
        let t0 = ops.map(\.start).min() ?? Date()
        func story(_ id: String, _ handle: String) -> String {
            ops.filter { $0.id == id || $0.handle == handle || $0.kind == .forget }.sorted { $0.start < $1.start }.map {
                String(
                    format: "%@ %@ %@ %@ %d %.3f–%.3f", $0.kind.rawValue, $0.id ?? "-", $0.handle ?? "-",
                    $0.user ?? "anon",
                    $0.status, $0.start.timeIntervalSince(t0), $0.end.timeIntervalSince(t0))
            }.joined(separator: "\n")
        }
        for installation in atHub {
            let row = rows[installation.installationId]
            #expect(
                row != nil,
                "\(seed): \(installation.installationId) is at the hub (written \(installation.lastUpdate ?? "-"), t0 \(t0)), not in the index:\n\(story(installation.installationId, installation.pushChannel))"
            )
            #expect(
                Set(installation.tags ?? []) == Set(row?["tags"] as? [String] ?? []),
                "\(seed): \(installation.installationId) hub \(installation.tags ?? []) index \(row?["tags"] ?? "-")")
            if let userTag = installation.tags?.first(where: { $0.hasPrefix("username:") }) {
                #expect(
                    row?["owner"] as? String == String(userTag.dropFirst("username:".count)),
                    "\(seed): (a) \(installation.installationId) carries \(userTag)")
            }
        }
        #expect(Set(atHub.map(\.installationId)) == Set(rows.keys), "\(seed): the hub and the index hold other ids")
        let byHandle = Dictionary(grouping: atHub, by: \.pushChannel)
        #expect(byHandle.values.allSatisfy { $0.count == 1 }, "\(seed): (b) \(byHandle.filter { $0.value.count > 1 })")
        checkLastWrites(ops, atHub: atHub, seed: seed)
        for row in index {
            guard let owner = row["owner"] as? String, let id = row["id"] as? String else { continue }
            guard
                let forget = ops.filter({ $0.kind == .forget && $0.user == owner && $0.status == 204 })
                    .max(by: { $0.start < $1.start })
            else { continue }
            let since = ops.contains {
                ($0.kind == .put || $0.kind == .tutorial) && $0.id == id && $0.user == owner && $0.end > forget.start
            }
            #expect(since, "\(seed): (d) \(id) of \(owner) survived the forget answered at \(forget.end)")
        }
    }

    /// (c): for each id, its last answered write, when no other request touching it (the id,
    /// its handle, its reader's forget) ran beside or after it, is at the hub on its handle.
    private static func checkLastWrites(_ ops: [Op], atHub: [Installation], seed: String) {
        let hub = Dictionary(uniqueKeysWithValues: atHub.map { ($0.installationId, $0) })
        var checked = 0
        for id in Set(ops.compactMap(\.id)) {
            let writes = ops.filter { ($0.kind == .put || $0.kind == .tutorial) && $0.id == id && $0.status == 200 }
            guard let last = writes.max(by: { $0.end < $1.end }) else { continue }
            let touching = ops.filter { op in
                op.serial != last.serial
                    && (op.id == id || op.handle == last.handle || (op.kind == .forget && op.user == last.user))
            }
            guard !touching.contains(where: { $0.end > last.start }) else { continue }
            checked += 1
            #expect(
                hub[id]?.pushChannel == last.handle, "\(seed): (c) \(id) last answered 200 with \(last.handle ?? "")")
        }
        print("chaos \(seed): (c) checked on \(checked) ids whose last write nothing raced or followed")
    }
}
