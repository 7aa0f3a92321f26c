import Foundation
import HubEmulator
import NewsPushTesting
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two hosts, one PostgreSQL ledger, through the built binary against a real server
/// and the emulator: one run at a time across hosts, a dead host's lock released, a lost
/// connection never sending twice, failures that say what to fix, and moving a ledger.
@Suite("PostgreSQL ledger: two hosts", .enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"))
struct PostgresLedgerTests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World, Politics, Sports],
                template: '{"aps":{"alert":"$(messageParam)"},"story":"$(id)"}'}
        """

    /// One host's config (a folder of its own) on the shared ledger `state`.
    static func host(
        _ folder: TemporaryFolder, name: String, state: String, hub: LocalHub, feeds: [String], concurrency: Int = 8
    ) throws -> String {
        let list = feeds.map { "  - {url: \"\($0)\", category: World}" }.joined(separator: "\n")
        return try folder.write(
            "\(name).yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", retries: 0, retry_delay: 10ms, timeout: 5m,
                concurrency: \(concurrency)}
            policy: {first_run: send, budget: {per_category: 1000, per: 1h}}
            state: "\(state)"
            feeds:
            \(list.isEmpty ? "  []" : list)
            """.replacingOccurrences(of: "feeds:\n  []", with: "feeds: []"))
    }

    /// Two hosts, each with its config in a folder of its own, on one new database of the
    /// shared server, with a hub and one feed of `items`; stopped and removed by `stop()`.
    final class TwoHosts {
        let state: String
        let hub: LocalHub
        let feeds: LocalHTTPServer
        let folders: [TemporaryFolder]
        let first: String
        let second: String

        init(items: [(guid: String, title: String, minutesAgo: Double)], firstConcurrency: Int = 8) async throws {
            state = try await LocalPostgres.shared().createDatabase()
            hub = try await LocalHub.start(devicesYAML: PostgresLedgerTests.devices)
            feeds = try await FeedDesk.serve(["/world.xml": FeedDesk(items)])
            folders = [try TemporaryFolder(), try TemporaryFolder()]
            let feed = ["\(feeds.baseURL)/world.xml"]
            first = try PostgresLedgerTests.host(
                folders[0], name: "a", state: state, hub: hub, feeds: feed, concurrency: firstConcurrency)
            second = try PostgresLedgerTests.host(folders[1], name: "b", state: state, hub: hub, feeds: feed)
        }

        /// Stops the hub and the feed, and removes the folders.
        func stop() {
            hub.stop()
            feeds.stop()
            folders.forEach { $0.cleanup() }
        }
    }

    /// The database a `state:` URL names.
    static func database(of state: String) -> String {
        String(state.split(separator: "/").last?.split(separator: "?").first ?? "")
    }

    func json(_ result: CommandResult) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "not JSON: \(result.stdout) \(result.stderr)")
    }

    /// The outbox of the ledger `config` names, as `state export` prints it (empty while no run
    /// has created the ledger yet).
    func outbox(_ config: String, environment: [String: String] = [:]) async throws -> [[String: Any]] {
        let export = try await newspush(["state", "export", "--config", config], environment: environment)
        if export.status == 1 && export.stderr.contains("no ledger") { return [] }
        #expect(export.status == 0, "\(export.stderr)")
        return try #require(try json(export)["outbox"] as? [[String: Any]], "\(export.stderr)")
    }

    @Test func aSecondHostExits75AtOnceOrWaitsWithWait() async throws {
        let server = try await LocalPostgres.shared()
        let hosts = try await TwoHosts(items: [("a1", "Harbour cranes halt work", 2)])
        defer { hosts.stop() }
        let (hub, first, second) = (hosts.hub, hosts.first, hosts.second)
        // The first host's push is held at the hub until its clock moves on.
        await hub.emulator.inject(Fault(delaySeconds: 600))
        let running = try startNewspush(["run", "--config", first])
        await hub.emulator.untilSomethingWaits()
        let refused = try await newspush(["run", "--config", second], environment: hubEnvironment)
        #expect(refused.status == 75, "\(refused.stderr)")
        #expect(refused.stderr.contains("advisory lock") && refused.stderr.contains("127.0.0.1:\(server.port)"))
        await hub.emulator.advanceClock(by: 600)
        let waited = try await newspush(
            [
                "publish", "--config", second, "--category", "World", "--title", "Ferry strike called off", "--yes",
                "--wait", "30s",
            ], environment: hubEnvironment)
        #expect(waited.status == 0, "\(waited.stderr)")
        #expect(await running.exitStatus() == 0)
        let alerts = await hub.emulator.allDeliveries().map(\.payload)
        #expect(alerts.count == 2 && alerts.filter { $0.contains("Harbour cranes") }.count == 1, "\(alerts)")
    }

    @Test func aHostKilledMidSendReleasesTheLockAndItsSendIsNeverRepeated() async throws {
        let hosts = try await TwoHosts(items: [("k1", "Dam gates opened after rain", 2)])
        defer { hosts.stop() }
        let (hub, first, second) = (hosts.hub, hosts.first, hosts.second)
        await hub.emulator.inject(Fault(delaySeconds: 600))
        let running = try startNewspush(["run", "--config", first])
        await hub.emulator.untilSomethingWaits()
        running.signal(SIGKILL)
        _ = await running.exitStatus()
        let metrics = hosts.folders[1].file("metrics.prom")
        let next = try await newspush(
            ["run", "--config", second, "--format", "json", "--metrics-file", metrics], environment: hubEnvironment)
        #expect(next.status == 0, "the lock went with the dead host's connection: \(next.stderr)")
        let facts = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(facts.contains("newspush_ledger_backend{backend=\"postgres\"} 1"), "\(facts)")
        #expect(facts.contains("newspush_lock_wait_seconds "), "\(facts)")
        #expect((try json(next)["interrupted_sends"] as? [Any])?.count == 1, "\(next.stdout)")
        await hub.emulator.advanceClock(by: 600)  // the held request: the hub delivers it now
        await hub.emulator.settle()
        #expect(await hub.emulator.allDeliveries().count <= 1, "never twice")
        #expect(try await outbox(second).map { $0["status"] as? String } == ["unknown"])
    }

    @Test func aHostWhoseConnectionIsTerminatedMidSendStopsAndNothingIsSentTwice() async throws {
        let server = try await LocalPostgres.shared()
        // One push at a time, so the others' intents are not yet written when the connection goes.
        let hosts = try await TwoHosts(
            items: [
                ("t1", "Lighthouse keeper retires", 2), ("t2", "Glacier retreat measured", 3),
                ("t3", "Orchestra tours the coast", 4),
            ], firstConcurrency: 1)
        defer { hosts.stop() }
        let (hub, first, second) = (hosts.hub, hosts.first, hosts.second)
        let database = Self.database(of: hosts.state)
        await hub.emulator.inject(Fault(delaySeconds: 3, count: 3))
        let running = try startNewspush(["run", "--config", first])
        await hub.emulator.untilSomethingWaits()
        #expect(try await server.terminateConnections(to: database) >= 1)
        await hub.emulator.advanceClock(by: 3)
        #expect(await running.exitStatus() == 1, "a host that lost its ledger stops and exits 1")
        await hub.emulator.clearFaults()
        let next = try await newspush(["run", "--config", second, "--format", "json"], environment: hubEnvironment)
        #expect(next.status == 0, "\(next.stderr)")
        await hub.emulator.advanceClock(by: 3)  // what the hub still held
        await hub.emulator.settle()
        let stories = await hub.emulator.allDeliveries().map(\.payload)
        for title in ["Lighthouse keeper", "Glacier retreat", "Orchestra tours"] {
            #expect(stories.filter { $0.contains(title) }.count <= 1, "\(title) twice: \(stories)")
        }
        let statuses = try await outbox(second).compactMap { $0["status"] as? String }
        #expect(statuses.count == 3 && statuses.allSatisfy { $0 == "sent" || $0 == "unknown" }, "\(statuses)")
    }

    /// The ledger lost after the first feed arrived stops the run, and the feeds
    /// not yet fetched are never fetched (the old fetch loop fetched all 30 and exited 1 after).
    @Test func aLedgerLostAfterTheFirstFeedStopsTheRunWithoutFetchingTheRest() async throws {
        let server = try await LocalPostgres.shared()
        let state = try await server.createDatabase()
        let database = Self.database(of: state)
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let body = rssFeed(title: "Wire", items: [("w1", "Harbour reopens after storm", 2)])
        let terminated = Mutex(false)
        let feeds = try await LocalHTTPServer.start { _ in
            // The first feed asked for: the run's database connections go.
            if terminated.withLock({ done in
                defer { done = true }
                return !done
            }) {
                _ = try? await server.terminateConnections(to: database)
            }
            return CannedResponse(text: body)
        }
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let list = (0..<30).map { "  - {url: \"\(feeds.baseURL)/feed-\($0).xml\", category: World}" }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "\(hub.endpoint)", retries: 0}
            fetch: {concurrency: 1, per_host: 1}
            policy: {first_run: send}
            state: "\(state)"
            feeds:
            \(list.joined(separator: "\n"))
            """)
        var environment = hubEnvironment
        environment.merge(server.environment) { $1 }
        let run = try await newspush(["run", "--config", config, "--format", "json"], environment: environment)
        #expect(run.status == 1, "the run that lost its ledger fails: \(run.stderr)")
        let fetched = await feeds.requests().count
        // The first feed, the buffer (2 × concurrency) and one in flight at most.
        #expect(fetched <= 4, "\(fetched) of 30 feeds fetched after the ledger was lost")
        #expect(await hub.emulator.allDeliveries().isEmpty)
    }

    @Test func aWrongPasswordAMissingDatabaseOrNoServerStopBeforeAnythingIsFetched() async throws {
        let server = try await LocalPostgres.shared()
        let state = try await server.createDatabase()
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("w1", "Tram line extended", 2)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let cases: [(state: String, environment: [String: String], says: [String])] = [
                (
                    state, [LocalPostgres.passwordVariable: "not-the-password"],
                    ["password authentication failed", "newspush"]
                ),
                (
                    state.replacingOccurrences(of: "/ledger_", with: "/absent_"), [:],
                    ["does not exist", "absent_"]
                ),
                (
                    state.replacingOccurrences(of: ":\(server.port)/", with: ":\(try LocalPostgres.freePort())/"), [:],
                    ["cannot connect", "connection refused"]
                ),
                (
                    state.replacingOccurrences(of: "sslmode=disable", with: "sslmode=require"), [:],
                    ["does not offer TLS", "sslmode=require"]
                ),
            ]
            for (ledger, environment, says) in cases {
                let config = try Self.host(
                    folder, name: "h", state: ledger, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])
                var env = hubEnvironment
                env.merge(environment) { $1 }
                let run = try await newspush(["run", "--config", config], environment: env)
                #expect(run.status == 1, "\(run.stderr)")
                #expect(
                    says.allSatisfy { run.stderr.contains($0) } && run.stderr.contains("127.0.0.1"), "\(run.stderr)")
                #expect(!run.stderr.contains(server.password) && !run.stdout.contains(server.password))
                #expect(!FileManager.default.fileExists(atPath: folder.file("newspush-state.db")), "no local fall back")
            }
            #expect(await desk.fullResponses == 0, "nothing fetched")
            #expect(await hub.emulator.allDeliveries().isEmpty)
        }
    }

    @Test func aLiteralPasswordInTheConfigIsRefusedAndNeverQuoted() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            state: "postgres://newsroom:hunter2-literal@db.example:5432/news?sslmode=require"
            feeds: []
            """)
        let check = try await newspush(["check", "--config", config], environment: hubEnvironment)
        #expect(check.status == 78, "\(check.stdout) \(check.stderr)")
        #expect((check.stdout + check.stderr).contains("literal password"))
        #expect(!(check.stdout + check.stderr).contains("hunter2"))
        let state = try await newspush(
            ["state", "show", "--state", "postgres://newsroom:hunter2-literal@127.0.0.1:1/news"])
        #expect(state.status == 1 && !(state.stdout + state.stderr).contains("hunter2"), "\(state.stderr)")
    }

    @Test func aLedgerMovesToPostgreSQLAndBackWithoutAFlood() async throws {
        let server = try await LocalPostgres.shared()
        let shared = try await server.createDatabase()
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let feeds = try await FeedDesk.serve([
            "/world.xml": FeedDesk([
                ("m1", "Canal reopens to shipping", 2), ("m2", "Rail fares frozen for a year", 3),
                ("m3", "New bridge design unveiled", 4),
            ])
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let local = folder.file("local.db")
        let onSQLite = try Self.host(
            folder, name: "sqlite", state: local, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])
        #expect(try await newspush(["run", "--config", onSQLite], environment: hubEnvironment).status == 0)
        #expect(await hub.emulator.allDeliveries().count == 3)

        // SQLite → PostgreSQL: the next run on the shared ledger sends nothing old.
        let moved = try await newspush(["state", "import", local, "--state", shared])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdout.contains("SQLite ledger") && moved.stdout.contains("3 stories"), "\(moved.stdout)")
        let onPostgres = try Self.host(
            folder, name: "pg", state: shared, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])
        let run = try await newspush(["run", "--config", onPostgres, "--format", "json"], environment: hubEnvironment)
        #expect(run.status == 0, "\(run.stderr)")
        #expect((try json(run)["summary"] as? [String: Any])?["pushes_sent"] as? Int == 0, "\(run.stdout)")
        #expect(await hub.emulator.allDeliveries().count == 3, "no flood after the move")

        // An import never merges into a ledger that holds something.
        let again = try await newspush(["state", "import", local, "--state", shared])
        #expect(again.status == 1 && again.stderr.contains("not empty"), "\(again.stderr)")

        // PostgreSQL → SQLite, and a JSON export → SQLite: the same stories, nothing re-sent.
        let back = folder.file("back.db")
        let returned = try await newspush(["state", "import", shared, "--state", back])
        #expect(returned.status == 0 && returned.stdout.contains("PostgreSQL ledger"), "\(returned.stderr)")
        let export = try await newspush(["state", "export", "--state", shared])
        let exported = try folder.write("export.json", export.stdout)
        let fromJSON = folder.file("from-json.db")
        let loaded = try await newspush(["state", "import", exported, "--state", fromJSON])
        #expect(loaded.status == 0 && loaded.stdout.contains("JSON export"), "\(loaded.stderr)")
        for ledger in [back, fromJSON] {
            let show = try await newspush(["state", "export", "--state", ledger])
            #expect((try json(show)["items"] as? [String: Any])?.count == 3, "\(ledger)")
            let config = try Self.host(
                folder, name: "again", state: ledger, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])
            let rerun = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(rerun.status == 0, "\(rerun.stderr)")
        }
        #expect(await hub.emulator.allDeliveries().count == 3, "nothing old sent from any moved ledger")
    }

    @Test func aNewerSchemaStopsTheRunAndLeavesTheDatabaseUntouched() async throws {
        let server = try await LocalPostgres.shared()
        let state = try await server.createDatabase()
        let database = Self.database(of: state)
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let desk = FeedDesk([("n1", "Museum reopens its doors", 2)])
            let feeds = try await FeedDesk.serve(["/world.xml": desk])
            defer { feeds.stop() }
            let config = try Self.host(folder, name: "h", state: state, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"])
            let migrate = try await newspush(["state", "migrate", "--config", config])
            #expect(migrate.status == 0 && migrate.stdout.contains("created"), "\(migrate.stdout) \(migrate.stderr)")
            try await server.psql("UPDATE meta SET value = '99' WHERE name = 'schema_version'", database: database)
            let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
            #expect(run.status == 1 && run.stderr.contains("schema version 99"), "\(run.stderr)")
            #expect(
                try await server.psql("SELECT value FROM meta WHERE name = 'schema_version'", database: database)
                    == "99")
            #expect(try await server.psql("SELECT COUNT(*) FROM stories", database: database) == "0")
            #expect(await desk.fullResponses == 0)
            #expect(await hub.emulator.allDeliveries().isEmpty)
        }
    }

    @Test func aDatabaseRestartMidRunFailsThatRunAndTheNextRecoversSendingNothingTwice() async throws {
        let server = try await LocalPostgres.start()
        defer { server.stop() }
        let state = try await server.createDatabase()
        let hub = try await LocalHub.start(devicesYAML: Self.devices)
        defer { hub.stop() }
        let feeds = try await FeedDesk.serve([
            "/world.xml": FeedDesk([
                ("r1", "Tidal power plant approved", 2), ("r2", "Airport expansion paused", 3),
                ("r3", "Library digitises its maps", 4),
            ])
        ])
        defer { feeds.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try Self.host(
            folder, name: "h", state: state, hub: hub, feeds: ["\(feeds.baseURL)/world.xml"], concurrency: 1)
        var environment = hubEnvironment
        environment.merge(server.environment) { $1 }
        await hub.emulator.inject(Fault(delaySeconds: 3, count: 3))
        let running = try startNewspush(["run", "--config", config], environment: server.environment)
        await hub.emulator.untilSomethingWaits()
        try await server.restart()
        await hub.emulator.advanceClock(by: 3)
        #expect(await running.exitStatus() == 1, "the run that lost its database stops")
        await hub.emulator.clearFaults()
        let next = try await newspush(["run", "--config", config, "--format", "json"], environment: environment)
        #expect(next.status == 0, "\(next.stderr)")
        await hub.emulator.advanceClock(by: 3)  // what the hub still held
        await hub.emulator.settle()
        let alerts = await hub.emulator.allDeliveries().map(\.payload)
        for title in ["Tidal power", "Airport expansion", "Library digitises"] {
            #expect(alerts.filter { $0.contains(title) }.count <= 1, "\(title) twice: \(alerts)")
        }
        let statuses = try await outbox(config, environment: server.environment).compactMap {
            $0["status"] as? String
        }
        #expect(statuses.count == 3 && statuses.allSatisfy { $0 == "sent" || $0 == "unknown" }, "\(statuses)")
        #expect(statuses.filter { $0 == "sent" }.count >= 2, "nothing lost: \(statuses)")
    }

    @Test func aURLWithoutAPasswordTakesItFromPGPASSFILE() async throws {
        let server = try await LocalPostgres.shared()
        let state = try await server.createDatabase().replacingOccurrences(
            of: ":${\(LocalPostgres.passwordVariable)}@", with: "@")
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let passfile = try folder.write("pgpass", "127.0.0.1:\(server.port):*:\(server.user):\(server.password)\n")
        let migrate = try await newspush(["state", "migrate", "--state", state], environment: ["PGPASSFILE": passfile])
        #expect(migrate.status == 0 && migrate.stdout.contains("created"), "\(migrate.stderr)")
        let without = try await newspush(["state", "show", "--state", state], environment: ["HOME": folder.path])
        #expect(without.status == 1 && without.stderr.contains("password"), "\(without.stderr)")
        #expect(!without.stderr.contains(server.password))
    }

    @Test func sslmodeDecidesWhetherTheConnectionUsesTLSAndWhatItTrusts() async throws {
        let server = try await LocalPostgres.start(tls: true)
        defer { server.stop() }
        let state = try await server.createDatabase()
        func migrate(_ mode: String) async throws -> CommandResult {
            try await newspush(
                [
                    "state", "migrate", "--state",
                    state.replacingOccurrences(of: "sslmode=disable", with: "sslmode=\(mode)"),
                ],
                environment: server.environment)
        }
        // The server takes TCP connections over TLS only.
        for mode in ["require", "prefer", "allow"] {
            let result = try await migrate(mode)
            #expect(result.status == 0, "\(mode): \(result.stderr)")
        }
        let plain = try await migrate("disable")
        #expect(plain.status == 1 && plain.stderr.contains("no encryption"), "\(plain.stderr)")
        // A self-signed certificate is not trusted where the chain is verified.
        for mode in ["verify-ca", "verify-full"] {
            let result = try await migrate(mode)
            #expect(
                result.status == 1 && result.stderr.contains("127.0.0.1:\(server.port)"), "\(mode): \(result.stderr)")
            #expect(!result.stderr.contains(server.password))
        }
    }
}
