import Crypto
import Foundation
import HubEmulator
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NewsPushTesting
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The watcher's listener faces the internet, and several watchers share one ledger (SPEC §10),
/// through the built binary, the emulator and feed servers on 127.0.0.1: a ping or a distribution
/// reaches its feed whichever watcher it arrives at; a distribution taken while a cron run holds
/// the lock waits for it; a hub that never answers stalls nothing; a feed taken over keeps its
/// server's limits; a corrupt ledger stops the watcher, one out of reach does not.
@Suite("Watchers sharing a ledger, and their listener")
struct WatchSharingTests {
    static let hubURL = "https://hub.example/hub"

    /// A feed whose stories a test adds while the watchers run; every request counted.
    final class Wire: Sendable {
        private let state = Mutex<(stories: [String], requests: Int)>(([], 0))
        let cacheControl: String?

        init(cacheControl: String? = nil) { self.cacheControl = cacheControl }

        func add(_ title: String) { state.withLock { $0.stories.append(title) } }
        var requests: Int { state.withLock { $0.requests } }

        func answer() -> CannedResponse {
            let stories = state.withLock { state in
                state.requests += 1
                return state.stories
            }
            return CannedResponse(
                headers: cacheControl.map { [("Cache-Control", $0)] } ?? [], text: Self.document(stories))
        }

        static func document(_ stories: [String]) -> String {
            let date = DateFormatter.rfc822.string(from: Date())
            let items = stories.map {
                "<item><title>\($0)</title><link>https://news.example.org/\(abs($0.hashValue))</link>"
                    + "<guid>\($0)</guid><pubDate>\(date)</pubDate></item>"
            }
            return "<rss version=\"2.0\"><channel><title>wire</title>\(items.joined())</channel></rss>"
        }
    }

    /// A newsroom's config for watchers of `feeds` (name: URL), its hub named for each.
    static func config(
        _ folder: TemporaryFolder, hub: LocalHub, feeds: [(name: String, url: String)], state: String,
        lease: String = "3s", intervals: String = "interval: 1h, min_interval: 15s, max_interval: 1h",
        extra: String = ""
    ) throws -> String {
        try HostileOperatorTests().config(
            folder, hub: hub.endpoint,
            extra: """
                \(state)
                watch:
                  \(intervals.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n  "))
                  lease: \(lease)
                  listen: "127.0.0.1:0"
                  callback_url: "https://push.example/websub/"
                  ping_tokens: "\(feeds.map { "\($0.name)=\($0.name)-token-0123456789" }.joined(separator: ","))"
                \(extra)
                """,
            feeds: feeds.map { "{url: \"\($0.url)\", name: \($0.name), category: World, websub: \"\(hubURL)\"}" })
    }

    /// Where `state` (a config's `state:` line, empty for the default file) puts the ledger.
    static func ledgerLocation(_ state: String, _ folder: TemporaryFolder) -> String {
        state.isEmpty
            ? folder.file("newspush-state.db") : String(state.dropFirst("state: \"".count).dropLast())
    }

    /// A verified subscription of `feed` in the ledger at `location` (as its hub would have made
    /// it), renewed a day from now: its callback token and secret.
    static func subscribe(_ feed: String, ledger location: String) throws -> WebSubSubscription {
        var subscription = WebSubSubscription(
            feed: feed, links: WebSubLinks(hub: hubURL, topic: feed), secret: WebSubPolicy.newSecret(),
            token: WebSubPolicy.newToken())
        subscription.state = .active(
            until: Date().addingTimeInterval(86400 * 2), renewAt: Date().addingTimeInterval(86400))
        try Ledger.open(configured: location, access: .write).changeSubscription(feed: feed) { _ in .some(subscription)
        }
        return subscription
    }

    /// POSTs `document` to `watcher`'s callback of `subscription`, signed with its secret (or `secret`).
    static func distribute(
        _ document: String, to watcher: DeskProcess, _ subscription: WebSubSubscription, feed: String = "topic",
        secret: String? = nil
    ) async -> Int {
        let key = SymmetricKey(data: Data((secret ?? subscription.secret).utf8))
        let code = HMAC<SHA256>.authenticationCode(for: Data(document.utf8), using: key)
        return await watcher.send(
            "POST /websub/\(feed)/\(subscription.token) HTTP/1.1", body: document,
            headers: [
                "Content-Type: application/rss+xml",
                "X-Hub-Signature: sha256=" + code.map { String(format: "%02x", $0) }.joined(),
            ]
        ).status
    }

    static func ping(_ watcher: DeskProcess, feed: String = "topic") async -> Int {
        await watcher.send(
            "POST /ping/\(feed) HTTP/1.1", headers: ["Authorization: Bearer \(feed)-token-0123456789"]
        ).status
    }

    static func pushes(_ hub: LocalHub, _ needle: String) async -> Int {
        await hub.emulator.allDeliveries().filter { $0.payload.contains(needle) }.count
    }

    // Two watchers on one ledger (one host's SQLite, or PostgreSQL): the first holds the feed;
    // a distribution and a ping sent to the second, which does not, are each pushed once (the
    // second reads the feed itself under the ledger's lock: the first, whose interval is an hour,
    // never fetches it again), and the feed keeps its one subscription.
    @Test(arguments: LedgerBackend.allCases)
    func aPingOrADistributionAtTheWatcherThatDoesNotHoldTheFeedIsPushedOnce(_ backend: LedgerBackend)
        async throws
    {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let wire = Wire()
            let server = try await LocalHTTPServer.start { _ in wire.answer() }
            defer { server.stop() }
            let topic = "\(server.baseURL)/topic.xml"
            let state = try await backend.stateLine()
            let config = try Self.config(folder, hub: hub, feeds: [("topic", topic)], state: state)
            let subscription = try Self.subscribe(topic, ledger: Self.ledgerLocation(state, folder))
            let environment = hubEnvironment.merging(LocalPostgres.sharedEnvironment) { $1 }
            let holder = try await DeskProcess.start(["watch", "--config", config], environment: environment)
            defer { holder.stop() }
            #expect(await holder.errors.until("holds 1 of 1 feeds"), "\(holder.errors.current)")
            let other = try await DeskProcess.start(
                ["watch", "--listen", "127.0.0.1:0", "--config", config], environment: environment)
            defer { other.stop() }
            #expect(await other.errors.until("holds 0 of 1 feeds"), "\(other.errors.current)")
            let polled = wire.requests

            wire.add("Dam bursts upstream of the city")
            let started = ContinuousClock.now
            #expect(
                await Self.distribute(Wire.document(["Dam bursts upstream of the city"]), to: other, subscription)
                    == 202)
            #expect(try await WatchTests.until { await Self.pushes(hub, "Dam bursts") == 1 }, "\(other.errors.current)")
            let distributed = ContinuousClock.now - started

            wire.add("Port closes at noon")
            #expect(await Self.ping(other) == 202)
            #expect(
                try await WatchTests.until { await Self.pushes(hub, "Port closes") == 1 }, "\(other.errors.current)")
            #expect(await other.output.until("accepted", count: 2), "the second watcher pushed both")
            #expect(wire.requests == polled + 1, "one fetch, the ping's: \(wire.requests - polled)")
            let (dam, port) = (await Self.pushes(hub, "Dam bursts"), await Self.pushes(hub, "Port closes"))
            #expect(dam == 1 && port == 1, "each pushed once: \(dam), \(port)")
            let kept = try Ledger.open(configured: Self.ledgerLocation(state, folder), access: .read)
                .subscriptions(feeds: [topic])
            #expect(kept.count == 1 && kept[topic]?.token == subscription.token, "one subscription, the same")
            print(
                "watch-sharing (\(backend)): distribution at the watcher not holding the feed pushed in \(distributed)")
        }
    }

    // A distribution that arrives while a cron run holds the ledger's lock (its push held at the
    // hub) waits, and is pushed once the lock frees (before, it was taken for a cycle that could
    // not run, and lost).
    @Test func aDistributionTakenWhileACronRunHoldsTheLockIsPushedWhenItFrees() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let (wire, other) = (Wire(), Wire())
            let server = try await LocalHTTPServer.start { request in
                request.uri.hasPrefix("/other") ? other.answer() : wire.answer()
            }
            defer { server.stop() }
            let topic = "\(server.baseURL)/topic.xml"
            let config = try Self.config(
                folder, hub: hub, feeds: [("topic", topic), ("other", "\(server.baseURL)/other.xml")], state: "")
            let subscription = try Self.subscribe(topic, ledger: Self.ledgerLocation("", folder))
            let watcher = try await DeskProcess.start(
                ["watch", "--config", config],
                environment: hubEnvironment.merging(["NEWSPUSH_TEST_LOCK_WAIT": "1"]) { $1 })
            defer { watcher.stop() }
            #expect(await watcher.errors.until("holds 2 of 2 feeds"))
            #expect(try await WatchTests.until { wire.requests >= 1 && other.requests >= 1 })
            // A cron run with a story to push, held at the hub: it holds the lock.
            other.add("Ferry strike called off")
            await hub.emulator.inject(Fault(delaySeconds: 600, count: 1))
            let cron = try startNewspush(["run", "--config", config])
            await hub.emulator.untilSomethingWaits()
            wire.add("Bridge reopens")
            #expect(await Self.distribute(Wire.document(["Bridge reopens"]), to: watcher, subscription) == 202)
            #expect(
                await watcher.errors.until("still locked by another job"),
                "the watcher's cycle met the lock: \(watcher.errors.current)")
            await hub.emulator.advanceClock(by: 600)
            #expect(await cron.exitStatus() == 0)
            #expect(
                try await WatchTests.until { await Self.pushes(hub, "Bridge reopens") == 1 },
                "\(watcher.errors.current)")
            #expect(await Self.pushes(hub, "Ferry strike") == 1)
        }
    }

    // A WebSub hub that takes a subscription request and never answers stalls nothing: a ping
    // of another feed is pushed while that request still waits (its fetch.timeout here is ten
    // minutes; before, the loop waited out each such request).
    @Test func aHubThatNeverAnswersStallsNothing() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let waiting = DispatchSemaphore(value: 0)
            let gaveUp = Mutex(false)
            let silent = try RawTCPServer { connection in
                waiting.signal()
                var byte: UInt8 = 0
                // The watcher gives up on the request (its 10 s) when this returns 0.
                while recv(connection.socket, &byte, 1, 0) > 0 {}
                gaveUp.withLock { $0 = true }
            }
            defer { silent.stop() }
            let (slow, quick) = (Wire(), Wire())
            let server = try await LocalHTTPServer.start { request in
                request.uri.hasPrefix("/quick") ? quick.answer() : slow.answer()
            }
            defer { server.stop() }
            let config = try HostileOperatorTests().config(
                folder, hub: hub.endpoint,
                extra: """
                    fetch: {timeout: 10m}
                    watch:
                      interval: 1h
                      max_interval: 1h
                      listen: "127.0.0.1:0"
                      callback_url: "https://push.example/websub/"
                      ping_tokens: "quick=quick-token-0123456789"
                      hubs: {private: allow, http: allow}
                    """,
                feeds: [
                    "{url: \"\(server.baseURL)/slow.xml\", name: slow, category: World, websub: \"\(silent.baseURL)/hub\"}",
                    "{url: \"\(server.baseURL)/quick.xml\", name: quick, category: World}",
                ])
            let watcher = try await DeskProcess.start(["watch", "--config", config])
            defer { watcher.stop() }
            let asked = await offThePool { waiting.wait(timeout: .now() + 60) == .success }
            #expect(asked, "the watcher asked the silent hub: \(watcher.errors.current)")
            quick.add("Ferry strike called off")
            #expect(await Self.ping(watcher, feed: "quick") == 202)
            #expect(try await WatchTests.until { await Self.pushes(hub, "Ferry strike") == 1 })
            #expect(!gaveUp.withLock { $0 }, "pushed while the hub's request still waited")
        }
    }

    // A feed taken over by another watcher (or after a restart) is not fetched sooner than its
    // server allowed (max-age=300, kept in the ledger): the new watcher's first cycle fetches the
    // feed without a limit and not this one (before, it fetched both at once).
    @Test func aFeedTakenOverKeepsItsServersMaxAge() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let (cached, plain) = (Wire(cacheControl: "max-age=300"), Wire())
            let server = try await LocalHTTPServer.start { request in
                request.uri.hasPrefix("/cached") ? cached.answer() : plain.answer()
            }
            defer { server.stop() }
            let config = try HostileOperatorTests().config(
                folder, hub: hub.endpoint,
                extra: "watch: {interval: 1h, max_interval: 1h, listen: \"127.0.0.1:0\"}",
                feeds: [
                    "{url: \"\(server.baseURL)/cached.xml\", category: World}",
                    "{url: \"\(server.baseURL)/plain.xml\", category: World}",
                ])
            let first = try await DeskProcess.start(["watch", "--config", config])
            #expect(try await WatchTests.until { cached.requests == 1 && plain.requests == 1 })
            first.child.terminate()
            #expect(await first.child.exitStatus() == 0)
            let second = try await DeskProcess.start(["watch", "--config", config])
            defer { second.stop() }
            #expect(try await WatchTests.until { plain.requests == 2 }, "the second watcher's first cycle")
            #expect(await second.errors.until("holds 2 of 2 feeds"))
            #expect(cached.requests == 1, "max-age=300 honoured across watchers")
        }
    }

    // 8 and 10. SIGTERM is an orderly stop: a notice (no "error"), exit 0. A corrupt ledger stops
    // the watcher with exit 1, naming it (before, it never exited nor fetched, and /healthz said
    // ok); the listener's --listen of SPEC §2 is taken.
    @Test func aGracefulStopIsANoticeAndACorruptLedgerStopsTheWatcher() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let wire = Wire()
            let server = try await LocalHTTPServer.start { _ in wire.answer() }
            defer { server.stop() }
            let config = try HostileOperatorTests().config(
                folder, hub: hub.endpoint, extra: "watch: {interval: 1h, max_interval: 1h}",
                feeds: ["{url: \"\(server.baseURL)/w.xml\", category: World}"])
            let watcher = try await DeskProcess.start(["watch", "--listen", "127.0.0.1:0", "--config", config])
            #expect(try await WatchTests.until { wire.requests == 1 })
            let head = await watcher.send("HEAD /healthz HTTP/1.1")
            #expect(head.status == 200 && head.body.isEmpty)
            watcher.child.terminate()
            #expect(await watcher.child.exitStatus() == 0)
            #expect(watcher.errors.current.contains("newspush watch: stopping after the cycle in hand"))
            #expect(!watcher.errors.current.contains("error"), "\(watcher.errors.current)")

            try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: folder.file("newspush-state.db")))
            let broken = try startNewspush(["watch", "--listen", "127.0.0.1:0", "--config", config])
            #expect(await broken.exitStatus() == 1, "a corrupt ledger stops the watcher")
            let said = try await newspush(
                ["watch", "--listen", "127.0.0.1:0", "--config", config], environment: hubEnvironment)
            #expect(said.status == 1 && said.stderr.contains(folder.file("newspush-state.db")), "\(said.stderr)")
        }
    }

    // Leases are counted on the database's clock and renewed on their own schedule: two
    // watchers on PostgreSQL, one of them on a machine whose clock is an hour ahead, share six
    // feeds three and three (on their own clocks, the one ahead saw every lease of the other as
    // ended, and took every feed); and a cycle that lasts longer than the lease (each feed takes
    // 3 s to answer, the leases 2 s) loses none of them (before, leases were renewed only
    // between cycles).
    @Test(
        .enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"),
        .enabled(if: HostileClockTests.missing == nil, "\(HostileClockTests.missing ?? "")"))
    func leasesAreCountedOnTheDatabasesClockAndRenewedThroughALongCycle() async throws {
        let postgres = try await LocalPostgres.start()
        defer { postgres.stop() }
        let database = try await postgres.createDatabase()
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let server = try await LocalHTTPServer.start { _ in
                CannedResponse(body: Data(Wire.document([]).utf8), delay: 3)
            }
            defer { server.stop() }
            let feeds = (1...6).map { (name: "f\($0)", url: "\(server.baseURL)/f\($0).xml") }
            let config = try Self.config(
                folder, hub: hub, feeds: feeds, state: "state: \"\(database)\"", lease: "2s",
                intervals: "interval: 1s, min_interval: 1s, max_interval: 2s")
            let environment = hubEnvironment.merging(postgres.environment) { $1 }
            let first = try await DeskProcess.start(["watch", "--config", config], environment: environment)
            defer { first.stop() }
            #expect(await first.errors.until("holds 6 of 6 feeds"), "\(first.errors.current)")
            let ahead = try await DeskProcess.start(
                ["watch", "--config", config], environment: environment.merging(HostileClockTests.clock("+1h")) { $1 })
            defer { ahead.stop() }
            #expect(await ahead.errors.until("holds 3 of 6 feeds"), "\(ahead.errors.current)")
            #expect(await first.errors.until("holds 3 of 6 feeds"), "\(first.errors.current)")
            // Through cycles longer than the lease (each watcher fetches its feeds, 3 s each).
            #expect(try await WatchTests.until { await server.requests().count >= 6 + 6 })
            for watcher in [first, ahead] {
                let said = watcher.errors.current.components(separatedBy: "holds ").dropFirst().map { $0.prefix(6) }
                #expect(said.last == "3 of 6", "no feed lost or taken through long cycles: \(said)")
            }
            // Stopped, both are gone, the one under the skewed clock too (not its launcher only).
            first.stop()
            ahead.stop()
            let left = processes(mentioning: config)
            #expect(left.isEmpty, "still running after stop(): \(left)")
        }
    }

    // A ledger out of reach for a while (PostgreSQL restarted under the watcher) does not end
    // the watcher: it says so, waits, and goes on (before, any ledger error but the lock ended it).
    @Test(.enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"))
    func aLedgerOutOfReachForAWhileDoesNotEndTheWatcher() async throws {
        let postgres = try await LocalPostgres.start()
        defer { postgres.stop() }
        let database = try await postgres.createDatabase()
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let wire = Wire()
            let server = try await LocalHTTPServer.start { _ in wire.answer() }
            defer { server.stop() }
            let config = try Self.config(
                folder, hub: hub, feeds: [("topic", "\(server.baseURL)/topic.xml")], state: "state: \"\(database)\"")
            let watcher = try await DeskProcess.start(
                ["watch", "--config", config], environment: hubEnvironment.merging(postgres.environment) { $1 })
            defer { watcher.stop() }
            #expect(await watcher.errors.until("holds 1 of 1 feeds"))
            try await postgres.restart()
            wire.add("Tram lines reopen")
            // The first ping may meet the ledger still out of reach: pings until one is pushed.
            #expect(
                try await WatchTests.until {
                    _ = await Self.ping(watcher)
                    return await Self.pushes(hub, "Tram lines") == 1
                }, "\(watcher.errors.current)")
            #expect(watcher.isRunning)
        }
    }
}
