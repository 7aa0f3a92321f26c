import Crypto
import Foundation
import HubEmulator
import NewsPushHTTP
import NewsPushLedger
import NewsPushTesting
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// flask-websub 0.4.1's own hub (`Tests/websub/hub.py`), run offline: a WebSub hub no one here
/// wrote. It verifies a subscription and distributes a publish within the request that asked.
struct WebSubHub: Sendable {
    /// Why the hub cannot run here (flask-websub or Celery missing), nil when it can.
    static let missing: String? = {
        let probe = try? ChildProcess.run(
            "/usr/bin/env", ["python3", "-c", "import flask_websub.hub, celery"], environment: pythonEnvironment)
        guard let probe else { return "python3 cannot be started" }
        return probe.status == 0
            ? nil : "flask-websub 0.4.1 and celery are not installed (scripts/setup.sh --tests installs them)"
    }()

    /// The test process's own `PATH` (python3 with flask-websub may be a pyenv's, not Debian's).
    static let pythonEnvironment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]

    let child: RunningChild
    /// The hub's URL (`…/hub`).
    let url: String
    /// Its log (what a failed expectation shows).
    let logPath: String

    /// The end of its log, without the lines of each lease's renewal (what a failed
    /// expectation shows: the publishes, fetches, distributions and errors).
    var log: String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let kept = text.split(separator: "\n").filter {
            !$0.contains("tasks.subscribe") && !($0.contains("POST /hub") && $0.contains("202"))
        }
        return String(kept.joined(separator: "\n").suffix(6000))
    }

    /// Starts the hub with leases of `lease` seconds, its database in `folder`.
    static func start(lease: Int, folder: TemporaryFolder) async throws -> WebSubHub {
        let logPath = folder.path + "/hub.log"
        let child = try ChildProcess.start(
            "/usr/bin/env",
            [
                "python3", packageRoot.appendingPathComponent("Tests/websub/hub.py").path, folder.path + "/hub.db",
                "\(lease)",
            ],
            environment: pythonEnvironment, errors: .read(copyTo: logPath))
        let line = try await child.stdout.orFail().firstLine()
        guard let start = line.range(of: "http://") else {
            child.stop()
            throw DeskProcessError.notListening(line)
        }
        return WebSubHub(
            child: child, url: String(line[start.lowerBound...]).trimmingCharacters(in: .whitespacesAndNewlines),
            logPath: logPath)
    }

    /// How many unexpired subscriptions to `topic` the hub has stored (read from its database as
    /// its publish reads them). The hub stores a subscription after the subscriber answered its
    /// verification: a watcher's "verified" comes first, and a publish in between reaches no one.
    func subscribers(_ topic: String) async -> Int {
        let query = """
            import sqlite3, sys
            sql = "select count(*) from hub where topic_url = ? and expiration_time > strftime('%s', 'now')"
            print(sqlite3.connect(sys.argv[1]).execute(sql, (sys.argv[2],)).fetchone()[0])
            """
        let database = URL(fileURLWithPath: logPath).deletingLastPathComponent().appendingPathComponent("hub.db")
        let ran = try? ChildProcess.run(
            "/usr/bin/env", ["python3", "-c", query, database.path, topic], environment: Self.pythonEnvironment)
        let count = ran.map { String(decoding: $0.stdout, as: UTF8.self) }
        return count.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
    }

    /// `hub.mode=publish` of `topic`: the hub fetches it and distributes it to the subscribers.
    func publish(_ topic: String) async -> Int {
        let encoded = topic.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? topic
        return await ListenerCall.post(url, body: "hub.mode=publish&hub.topic=\(encoded)").status
    }

    /// Ends the hub (SIGKILL: its Celery ignores SIGTERM) and waits for it.
    func stop() { child.stop() }
}

/// Plain HTTP calls to a local server (the watcher's listener, the WebSub hub) with curl's
/// command-line twin: libcurl through `DocumentFetch` would hide the status of a refusal.
enum ListenerCall {
    static func post(_ url: String, body: String, headers: [String] = []) async -> RawAnswer {
        await raw(url, head: "POST", body: body, headers: headers)
    }

    static func get(_ url: String) async -> RawAnswer { await raw(url, head: "GET", body: "", headers: []) }

    private static func raw(_ url: String, head method: String, body: String, headers: [String]) async -> RawAnswer {
        guard let parsed = URL(string: url), let port = parsed.port else { return RawAnswer(status: 0) }
        let query = parsed.query.map { "?\($0)" } ?? ""
        let form = method == "POST" && !headers.contains { $0.lowercased().hasPrefix("content-type") }
        return await DeskProcess.exchange(
            "\(method) \(parsed.path)\(query) HTTP/1.1", port: UInt16(port), body: body,
            headers: headers + (form ? ["Content-Type: application/x-www-form-urlencoded"] : []))
    }
}

/// The watcher's listener (SPEC §10) through the built binary, with a real WebSub hub, the
/// emulator and feed servers: distributions pushed at once and only when signed, verifications
/// only for what was asked, leases renewed, pings, `/metrics`, and every path at once pushing a
/// story once.
@Suite("The watcher's listener: WebSub, pings, metrics", .serialized)
struct WatchListenerTests {
    /// Feeds a test changes while the watcher runs; each request's user agent is kept, so the
    /// watcher's polls and the WebSub hub's fetches are told apart. Each answer names the hub in
    /// its `Link` header (both `rel="hub"` and `rel="self"`, which flask-websub requires) and in
    /// the document.
    final class Wire: Sendable {
        private let state = Mutex<(stories: [String: [String]], agents: [String: [String]], base: String)>(
            ([:], [:], ""))
        let hub: String

        init(hub: String) { self.hub = hub }

        /// The server's base URL, once it listens.
        func serve(at base: String) { state.withLock { $0.base = base } }

        func add(_ title: String, to path: String) { state.withLock { $0.stories[path, default: []].append(title) } }

        /// Requests for `path` whose user agent starts with `agent`.
        func requests(_ path: String, by agent: String = "newspush") -> Int {
            state.withLock { $0.agents[path, default: []].filter { $0.hasPrefix(agent) }.count }
        }

        func answer(_ request: RecordedRequest) -> CannedResponse {
            let agent = request.headers.first { $0.name.lowercased() == "user-agent" }?.value ?? ""
            let (titles, base) = state.withLock { state in
                state.agents[request.uri, default: []].append(agent)
                return (state.stories[request.uri] ?? [], state.base)
            }
            let me = base + request.uri
            return CannedResponse(
                headers: [
                    ("Link", "<\(hub)>; rel=\"hub\", <\(me)>; rel=\"self\""), ("Content-Type", "application/rss+xml"),
                ],
                text: Self.document(titles, me: me, hub: hub))
        }

        static func document(_ titles: [String], me: String, hub: String) -> String {
            let date = DateFormatter.rfc822.string(from: Date())
            let items = titles.map {
                "<item><title>\($0)</title><link>https://news.example.org/\(abs($0.hashValue))</link>"
                    + "<guid>\($0)</guid><pubDate>\(date)</pubDate></item>"
            }
            return """
                <rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>wire</title>\
                <atom:link rel="hub" href="\(hub)"/><atom:link rel="self" href="\(me)"/>\(items.joined())\
                </channel></rss>
                """
        }
    }

    /// How many deliveries of a story whose text holds `needle` reached phones.
    static func pushes(_ hub: LocalHub, _ needle: String) async -> Int {
        await hub.emulator.allDeliveries().filter { $0.payload.contains(needle) }.count
    }

    /// A watcher config on `port` with WebSub callbacks there, over `feeds`.
    static func config(
        _ folder: TemporaryFolder, hub: LocalHub, port: Int, feeds: [String], extra: String = ""
    ) throws -> String {
        try HostileOperatorTests().config(
            folder, hub: hub.endpoint,
            extra: """
                watch:
                  interval: 1h
                  min_interval: 15s
                  max_interval: 1h
                  listen: "127.0.0.1:\(port)"
                  callback_url: "http://127.0.0.1:\(port)/websub/"
                  ping_tokens: "topic=topic-token-0123456789"
                  hubs: {private: allow, http: allow}
                \(extra)
                """, feeds: feeds)
    }

    /// A newsroom whose watcher (listening on a free port) polled `topic.xml` once and is
    /// subscribed to it at flask-websub's hub with leases of `lease` seconds.
    func withSubscribedWatcher(
        lease: Int,
        _ body: (
            _ hub: LocalHub, _ folder: TemporaryFolder, _ websub: WebSubHub, _ wire: Wire, _ topic: String,
            _ port: Int, _ config: String, _ watcher: DeskProcess
        ) async throws -> Void
    ) async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let websub = try await WebSubHub.start(lease: lease, folder: folder)
            defer { websub.stop() }
            let wire = Wire(hub: websub.url)
            let server = try await LocalHTTPServer.start { [wire] in wire.answer($0) }
            defer { server.stop() }
            wire.serve(at: server.baseURL)
            let topic = "\(server.baseURL)/topic.xml"
            let port = try freeLoopbackPort()
            let config = try Self.config(
                folder, hub: hub, port: port, feeds: ["{url: \"\(topic)\", name: topic, category: World}"])
            let watcher = try await DeskProcess.start(["watch", "--config", config])
            defer { watcher.stop() }
            #expect(await watcher.errors.until("WebSub subscribe of \(topic) verified"), "\(watcher.errors.current)")
            #expect(
                try await WatchTests.until { await websub.subscribers(topic) > 0 }, "the hub stored it: \(websub.log)")
            try await body(hub, folder, websub, wire, topic, port, config, watcher)
        }
    }

    @Test(.enabled(if: WebSubHub.missing == nil, "\(WebSubHub.missing ?? "")"), .timeLimit(.minutes(3)))
    func aRealHubsDistributionIsPushedAtOnceAndOnlyWhenSigned() async throws {
        try await withSubscribedWatcher(lease: 6) {
            hub, folder, websub, wire, topic, port, config, watcher async throws in
            #expect(wire.requests("/topic.xml") == 1, "one poll at the start; WebSub brings the rest")

            // A story the hub distributes goes out at once, with no poll.
            wire.add("Dam bursts upstream of the city", to: "/topic.xml")
            #expect(await websub.publish(topic) == 202)
            #expect(
                try await WatchTests.until { await Self.pushes(hub, "Dam bursts") >= 1 },
                "\(websub.log)\n\(watcher.errors.current)")
            #expect(wire.requests("/topic.xml") == 1, "the watcher did not poll: the hub brought the story")
            #expect(wire.requests("/topic.xml", by: "python-requests") >= 1, "the hub fetched the topic")

            // Distributions without a valid signature are acknowledged and ignored; the next
            // signed one (distributions are read in order) shows they were read and dropped.
            let token = try Self.callbackToken(folder, topic: topic)
            let forged = Wire.document(["Forged: markets collapse"], me: topic, hub: websub.url)
            let wrongKey = HMAC<SHA512>.authenticationCode(for: Data(forged.utf8), using: SymmetricKey(size: .bits256))
            for signature in [
                "X-Hub-Signature: sha512=\(Data(wrongKey).map { String(format: "%02x", $0) }.joined())", nil,
            ] {
                let answer = await ListenerCall.post(
                    "http://127.0.0.1:\(port)/websub/topic/\(token)", body: forged,
                    headers: ["Content-Type: application/rss+xml"] + (signature.map { [$0] } ?? []))
                #expect(answer.status == 202, "acknowledged: \(answer.status)")
            }
            wire.add("Second story: bridge reopens", to: "/topic.xml")
            #expect(await websub.publish(topic) == 202)
            #expect(try await WatchTests.until { await Self.pushes(hub, "bridge reopens") >= 1 })
            #expect(await Self.pushes(hub, "Forged") == 0, "an unsigned or wrongly signed distribution is ignored")
            #expect(await Self.pushes(hub, "Dam bursts") == 1, "pushed once")

            // A verification of intent for a topic or mode never asked for is refused.
            for query in [
                "hub.mode=subscribe&hub.topic=http%3A%2F%2Fevil.example%2Ffeed&hub.challenge=c-123",
                "hub.mode=unsubscribe&hub.topic=\(topic.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")&hub.challenge=c-123",
            ] {
                let answer = await ListenerCall.get("http://127.0.0.1:\(port)/websub/topic/\(token)?\(query)")
                #expect(answer.status == 404 && !answer.body.contains("c-123"), "\(answer.status) \(answer.body)")
            }

            // The 6-second lease is renewed before it ends (half-way), and verified again.
            #expect(await watcher.errors.until("WebSub subscribe of \(topic) verified", count: 3))

            // What the listener says of it: the latency histogram and the counts.
            let metrics = await ListenerCall.get("http://127.0.0.1:\(port)/metrics").body
            #expect(metrics.contains("newspush_alert_latency_seconds_count 2"), "\(metrics)")
            #expect(metrics.contains("newspush_websub_ignored_total 2"), "\(metrics)")
            #expect(watcher.output.current.contains("accepted"), "a latency line per alert: \(watcher.output.current)")
        }
    }

    /// The callback token of the newsroom's one subscription (the random part of its callback
    /// path), as the ledger keeps it.
    static func callbackToken(_ folder: TemporaryFolder, topic: String) throws -> String {
        let ledger = try Ledger.open(configured: folder.file("newspush-state.db"), access: .read)
        let found = try ledger.subscriptions(feeds: [topic])
        return try #require(found.values.first?.token)
    }

    /// A metric's value from the listener's `/metrics` (nil when absent).
    static func metric(_ name: String, port: Int) async -> Double? {
        let text = await ListenerCall.get("http://127.0.0.1:\(port)/metrics").body
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    static func ping(_ port: Int, feed: String = "topic", token: String? = "topic-token-0123456789") async -> Int {
        await ListenerCall.post(
            "http://127.0.0.1:\(port)/ping/\(feed)", body: "",
            headers: token.map { ["Authorization: Bearer \($0)"] } ?? []
        ).status
    }

    @Test(.enabled(if: WebSubHub.missing == nil, "\(WebSubHub.missing ?? "")"), .timeLimit(.minutes(3)))
    func pingsFetchAtOnceAndCoalesceAndEveryPathAtOncePushesAStoryOnce() async throws {
        try await withSubscribedWatcher(lease: 600) {
            hub, folder, websub, wire, topic, port, config, watcher async throws in

            // Only the feed's token (or a sender) may ping, and only a configured feed.
            #expect(await Self.ping(port, token: nil) == 401)
            #expect(await Self.ping(port, token: "not-the-token-0123456789") == 401)
            #expect(await Self.ping(port, feed: "nosuch") == 404)
            // An app back-end sender's Basic credential may ping; a reader's may not.
            let users = folder.path + "/api-users.yaml"
            let written = await offThePool { () -> String? in
                do {
                    var file = try ApiUsers.load(path: users)
                    try file.set("cms", role: .sender, password: "cms-password-1")
                    try file.set("reader", role: .reader, password: "reader-password")
                    return nil
                } catch {
                    return "\(error)"
                }
            }
            #expect(written == nil)
            let beforeSender = wire.requests("/topic.xml")
            for (credential, status) in [
                ("cms:cms-password-1", 202), ("reader:reader-password", 401), ("cms:wrong", 401),
            ] {
                let basic = "Basic " + Data(credential.utf8).base64EncodedString()
                let answer = await ListenerCall.post(
                    "http://127.0.0.1:\(port)/ping/topic", body: "", headers: ["Authorization: \(basic)"])
                #expect(answer.status == status, "\(credential.prefix { $0 != ":" }): \(answer.status)")
            }
            // The sender's ping fetched the feed; the next ping is more than a second later.
            #expect(try await WatchTests.until { wire.requests("/topic.xml") > beforeSender })
            try await Task.sleep(for: .seconds(1.1))

            // `newspush ping` makes the watcher fetch now (its interval is an hour).
            wire.add("Pinged: the port closes at noon", to: "/topic.xml")
            let polls = wire.requests("/topic.xml")
            let pinged = try await newspush(["ping", "topic", "--config", config])
            #expect(pinged.status == 0 && pinged.stdout.contains("pinged topic"), "\(pinged.stderr)")
            #expect(try await WatchTests.until { await Self.pushes(hub, "port closes") == 1 })
            #expect(wire.requests("/topic.xml") == polls + 1)

            // Five pings at once: one fetch now, at most one more a second later.
            let before = wire.requests("/topic.xml")
            let answers = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<5 { group.addTask { await Self.ping(port) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers == Array(repeating: 202, count: 5))
            #expect(try await WatchTests.until { wire.requests("/topic.xml") > before })
            try await Task.sleep(for: .seconds(2.5))
            #expect(wire.requests("/topic.xml") - before <= 2, "coalesced: \(wire.requests("/topic.xml") - before)")

            // Every path at once (a cron run, the hub's distribution, a ping): one push.
            let distributed = await Self.metric("newspush_websub_distributions_total", port: port) ?? 0
            wire.add("Every path at once: the river floods", to: "/topic.xml")
            async let cron = newspush(["run", "--config", config], environment: hubEnvironment)
            async let published = websub.publish(topic)
            async let pingedAgain = newspush(["ping", "topic", "--config", config])
            let (cronRun, publishStatus, pingRun) = try await (cron, published, pingedAgain)
            #expect([0, 75].contains(cronRun.status), "\(cronRun.stderr)")
            #expect(publishStatus == 202 && pingRun.status == 0, "\(pingRun.stderr)")
            #expect(
                try await WatchTests.until {
                    await Self.metric("newspush_websub_distributions_total", port: port) ?? 0 > distributed
                })
            // The inbox is read in order: a last ping's fetch comes after everything before it.
            let last = wire.requests("/topic.xml")
            try await Task.sleep(for: .seconds(1.1))
            #expect(await Self.ping(port) == 202)
            #expect(try await WatchTests.until { wire.requests("/topic.xml") > last })
            #expect(await Self.pushes(hub, "river floods") == 1, "one push, whichever path saw it first")
            #expect(await Self.pushes(hub, "port closes") == 1)
        }
    }
}

/// Two watchers on one PostgreSQL ledger (SPEC §10): they share the feeds by lease; one killed
/// with `kill -9` has its feeds taken over once its lease ends, and every story goes out once.
@Suite(
    "Watchers sharing a PostgreSQL ledger", .enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")")
)
struct WatchLeaseTests {
    @Test(.timeLimit(.minutes(3))) func aKilledWatchersFeedsAreTakenOverWithinTheLeaseAndEveryStoryGoesOutOnce()
        async throws
    {
        let postgres = try await LocalPostgres.start()
        defer { postgres.stop() }
        let state = try await postgres.createDatabase()
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let feeds = WatchTests.Feeds()
            let server = try await LocalHTTPServer.start { feeds.answer($0.uri) }
            defer { server.stop() }
            let paths = (1...6).map { "/wire-\($0).xml" }
            let config = try HostileOperatorTests().config(
                folder, hub: hub.endpoint,
                extra: """
                    state: "\(state)"
                    watch: {interval: 1s, min_interval: 1s, max_interval: 2s, lease: 3s, listen: "127.0.0.1:0"}
                    """,
                feeds: paths.map { "{url: \"\(server.baseURL)\($0)\", category: World}" })
            let environment = hubEnvironment.merging(postgres.environment) { $1 }
            let first = try await DeskProcess.start(["watch", "--config", config], environment: environment)
            defer { first.stop() }
            #expect(await first.errors.until("holds 6 of 6 feeds"), "\(first.errors.current)")
            let second = try await DeskProcess.start(["watch", "--config", config], environment: environment)
            defer { second.stop() }
            #expect(await second.errors.until("holds 3 of 6 feeds"), "\(second.errors.current)")
            #expect(await first.errors.until("holds 3 of 6 feeds"), "\(first.errors.current)")

            // kill -9: the first watcher's leases are not given back; they end within 3 s.
            first.child.signal(SIGKILL)
            let killed = ContinuousClock.now
            for (index, path) in paths.enumerated() { feeds.add("Story \(index) from the wire", to: path) }
            #expect(await second.errors.until("holds 6 of 6 feeds"), "\(second.errors.current)")
            let takeover = ContinuousClock.now - killed
            #expect(takeover < .seconds(3 + 0.75 + 1.5), "the lease (3 s) and one renewal (0.75 s): \(takeover)")
            #expect(
                try await WatchTests.until {
                    await hub.emulator.allDeliveries().filter { $0.payload.contains("from the wire") }.count >= 6
                })
            for index in paths.indices {
                let pushed = await hub.emulator.allDeliveries().filter { $0.payload.contains("Story \(index) from") }
                #expect(pushed.count == 1, "story \(index) once: \(pushed.count)")
            }
        }
    }
}
