import Crypto
import Foundation
import HubEmulator
import NewsPushCore
import NewsPushHTTP
import NewsPushModel
import NewsPushTesting
import Synchronization
import Testing

@testable import NewsPushAPI
@testable import NewsPushSessions

/// The back-end under attack, through the built binary against the emulator: quota
/// exhaustion, password guessing, borrowed identities, a forgotten reader left behind, and the
/// contract's defects.
@Suite("The app back-end under attack", .serialized)
struct ApiAbuseTests {
    static func registration(_ handle: String, platform: String = "fcmv1", topics: String = #"["World"]"#) -> String {
        #"{"platform":"\#(platform)","pushChannel":"\#(handle)","topics":\#(topics)}"#
    }

    static func basic(_ name: String, _ password: String) -> String {
        "Authorization: Basic " + Data("\(name):\(password)".utf8).base64EncodedString()
    }

    /// Registrations by 4 clients at once until `done` says so; how many a second.
    static func rate(_ fixture: ApiFixture, prefix: String, until done: @escaping @Sendable () -> Bool) async -> Double
    {
        let started = ContinuousClock.now
        let count = Tally()
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<4 {
                group.addTask {
                    var n = client
                    while !done() {
                        let answer = await fixture.send(
                            "PUT /api/installations/\(prefix)-\(n)", json: registration("\(prefix)-token-\(n)"),
                            headers: ["X-Forwarded-For: 10.\(n / 250).\(n % 250).9"])
                        #expect(answer.status == 200, "\(answer.body)")
                        count.add(1)
                        n += 4
                    }
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        return Double(count.all.count)
            / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// 500 wrong passwords for alice from 50 addresses, numbered from `first`: 10 clients, each
    /// sending one every 100 ms, 100 a second: twice what 50 addresses get past the default
    /// `rate.per_address` (60/min). Unpaced, the clients' own sockets (in this process, on CI's
    /// two cores) took the registrations' share of the machine whatever the server did: a
    /// locked-out guess costs the server 0.9 ms of CPU, under half a registration's 2 ms.
    static func guess(_ fixture: ApiFixture, from first: Int, statuses: Tally, waits: Tally) async {
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<10 {
                group.addTask {
                    let clock = ContinuousClock(), start = clock.now
                    for (k, n) in stride(from: first + client, to: first + 500, by: 10).enumerated() {
                        try? await clock.sleep(until: start + .milliseconds(100 * k))
                        let answer = await fixture.send(
                            "PUT /api/installations/guess-\(n)", json: registration("guess-\(n)"),
                            headers: [basic("alice", "guess-\(n)"), "X-Forwarded-For: 198.51.100.\(n % 50)"])
                        statuses.add(answer.status)
                        if answer.status == 429 { waits.add(Int(answer.headers["retry-after"] ?? "") ?? 0) }
                    }
                }
            }
        }
    }

    // 1,000 wrong passwords for alice from 50 networks: 429 with Retry-After once four times
    // api.sign_in_failures (20) are counted for her name (at most 5 from any one network), so at
    // most 30 of them ever reach bcrypt (10 in flight at once); her phone (a credential found
    // good before, from its own network) still registers, her right password from elsewhere
    // does not. The registrations' rates beside the guessing are printed (the bench measures
    // them: a rate is never a test's).
    @Test func guessingOnePasswordIsStoppedAcrossAddressesWithoutSlowingRegistrations() async throws {
        let fixture = try await ApiFixture.start(api: "  trusted_proxies: [127.0.0.1]\n")
        defer { fixture.stop() }
        let right = ApiFixture.basic("alice")
        let phone = await fixture.send(
            "PUT /api/installations/alice-phone", json: Self.registration("alice-token"),
            headers: [right, "X-Forwarded-For: 203.0.113.9"])
        #expect(phone.status == 200, "\(phone.body)")
        // Quiet and busy rounds alternate and the best of each is compared: the machine's other
        // load (the suites beside this one, on two cores in CI) then falls on both alike.
        var quiet: [Double] = [], busy: [Double] = []
        let statuses = Tally(), waits = Tally()
        for round in 0..<2 {
            let second = ContinuousClock.now + .seconds(1)
            quiet.append(await Self.rate(fixture, prefix: "quiet-\(round)") { ContinuousClock.now >= second })
            let guessing = Flag()
            async let loaded = Self.rate(fixture, prefix: "busy-\(round)") { guessing.isRaised }
            await Self.guess(fixture, from: round * 500, statuses: statuses, waits: waits)
            guessing.raise()
            busy.append(await loaded)
        }
        let counted = statuses.counts
        #expect((counted[401] ?? 0) <= 20 + 10, "wrong passwords checked: \(counted)")
        #expect((counted[429] ?? 0) >= 1000 - 30, "\(counted)")
        #expect(waits.all.allSatisfy { (1...900).contains($0) })
        let again = await fixture.send(
            "PUT /api/installations/alice-phone", json: Self.registration("alice-token"),
            headers: [right, "X-Forwarded-For: 203.0.113.9"])
        #expect(again.status == 200, "her own phone is not locked out: \(again.status) \(again.body)")
        let elsewhere = await fixture.send(
            "PUT /api/installations/alice-new", json: Self.registration("alice-new-token"),
            headers: [right, "X-Forwarded-For: 192.0.2.77"])
        #expect(elsewhere.status == 429, "a right guess from another network waits too: \(elsewhere.status)")
        print("registrations: \(quiet.map(Int.init))/s unloaded, \(busy.map(Int.init))/s during 500 wrong passwords")
    }

    // One guesser on one network locks the reader out of that network only (before, five
    // wrong guesses locked her out of every network she had not used yet, for 15 minutes:
    // phones roam).
    @Test func oneGuesserLocksTheReaderOutOfItsNetworkOnly() async throws {
        let fixture = try await ApiFixture.start(api: "  trusted_proxies: [127.0.0.1]\n")
        defer { fixture.stop() }
        for n in 0..<8 {
            _ = await fixture.send(
                "PUT /api/installations/guess-\(n)", json: Self.registration("guess-\(n)"),
                headers: [Self.basic("alice", "guess-\(n)"), "X-Forwarded-For: 198.51.100.7"])
        }
        let there = await fixture.send(
            "PUT /api/installations/alice-1", json: Self.registration("alice-1"),
            headers: [ApiFixture.basic("alice"), "X-Forwarded-For: 198.51.100.7"])
        #expect(there.status == 429 && there.headers["retry-after"] != nil, "the guesser's network: \(there.status)")
        let roaming = await fixture.send(
            "PUT /api/installations/alice-2", json: Self.registration("alice-2"),
            headers: [ApiFixture.basic("alice"), "X-Forwarded-For: 192.0.2.44"])
        #expect(roaming.status == 200, "her phone on a new network: \(roaming.status) \(roaming.body)")
    }

    // Bcrypt reads 72 bytes and stops at NUL; neither a suffix past 72 bytes nor one after a
    // NUL is ever taken, and add-user refuses such passwords.
    @Test func passwordsAreNeverMatchedByTheirStart() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let long = String(repeating: "p", count: 72)
        let added = try await newspush(["api", "add-user", "carol", "--config", fixture.config], input: long + "\n")
        #expect(added.status == 0, "\(added.stderr)")
        let refused = [
            ("carol", long + "X"), ("carol", long + "suffix of any length"), ("alice", "alice-password\u{0}anything"),
        ]
        for (name, password) in refused {
            let answer = await fixture.send(
                "PUT /api/installations/x", json: Self.registration("x-token"), headers: [Self.basic(name, password)])
            #expect(answer.status == 401, "\(name) with \(password.utf8.count) bytes: \(answer.status)")
        }
        let exact = await fixture.send(
            "PUT /api/installations/c", json: Self.registration("c-token"), headers: [Self.basic("carol", long)])
        #expect(exact.status == 200, "\(exact.body)")
        let nul = try await newspush(
            ["api", "add-user", "dave", "--config", fixture.config], input: "dave-pass\u{0}word\n")
        #expect(nul.status == 64 && nul.stderr.contains("NUL"), "\(nul.status) \(nul.stderr)")
        let over = try await newspush(
            ["api", "add-user", "erin", "--config", fixture.config], input: long + "Z\n")
        #expect(over.status == 64 && over.stderr.contains("72 bytes"), "\(over.stderr)")
    }

    // A token's sub outside the tag alphabet is the tag `username:h.<hex>`; no Basic user
    // can take that name (add-user refuses it; one written into the file by hand cannot sign
    // in). With api.jwt.names: own, tokens own plain names and Basic users are basic:NAME;
    // with prefixed, tokens are jwt:SUB and Basic users keep theirs.
    @Test(arguments: ["own", "prefixed"])
    func tokenSubjectsAndBasicUsersNeverShareAName(_ names: String) async throws {
        let maker = TokenMaker()
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let jwks = try folder.write("jwks.json", maker.jwks())
        let fixture = try await ApiFixture.start(
            api: """
                  jwt: {issuer: "\(TokenMaker.issuer)", audience: \(TokenMaker.audience), jwks: \(jwks), names: \(names)}
                """)
        defer { fixture.stop() }
        let subject = "Zoë Ünïcode"
        let hashed =
            "h." + String(Hex.sha256(Data((names == "own" ? subject : "jwt:" + subject).utf8)).prefix(32))
        let zoe = await fixture.send(
            "PUT /api/installations/zoe", json: Self.registration("zoe-token"),
            headers: ["Authorization: Bearer \(maker.token(["sub": subject]))"])
        #expect(ApiFixture.object(zoe)["tags"] as? [String] == ["World", "username:" + hashed, "newspush:signed-in"])
        let taken = try await newspush(["api", "add-user", hashed, "--config", fixture.config], input: "squatter-pw\n")
        #expect(taken.status != 0 && taken.stderr.contains("reserved"), "\(taken.status) \(taken.stderr)")
        // Written into the users file by hand, with alice's hash: refused at sign-in all the same.
        let usersFile = fixture.folder.file("api-users.yaml")
        let users = try String(contentsOfFile: usersFile, encoding: .utf8)
        let aliceLine = try #require(users.split(separator: "\n").first { $0.contains("\"alice\"") })
        try (users + "\n" + aliceLine.replacingOccurrences(of: "\"alice\"", with: "\"\(hashed)\"") + "\n")
            .write(toFile: usersFile, atomically: true, encoding: .utf8)
        let squatter = await fixture.send(
            "PUT /api/installations/squat", json: Self.registration("squat-token"),
            headers: [Self.basic(hashed, "alice-password")])
        #expect(squatter.status == 401, "\(squatter.status) \(squatter.body)")
        let byToken = await fixture.send(
            "PUT /api/installations/alice-jwt", json: Self.registration("alice-jwt-token"),
            headers: ["Authorization: Bearer \(maker.token(["sub": "alice"]))"])
        let byPassword = await fixture.send(
            "PUT /api/installations/alice-basic", json: Self.registration("alice-basic-token"),
            headers: [ApiFixture.basic("alice")])
        let tokenTag = names == "own" ? "username:alice" : "username:jwt:alice"
        let basicTag = names == "own" ? "username:basic:alice" : "username:alice"
        #expect((ApiFixture.object(byToken)["tags"] as? [String])?.contains(tokenTag) == true, "\(byToken.body)")
        #expect((ApiFixture.object(byPassword)["tags"] as? [String])?.contains(basicTag) == true, "\(byPassword.body)")
    }

    // Turning on api.jwt (names: own) over Basic readers' installations would hand alice's
    // phone to the token user alice: the back-end refuses to start and says how to go on;
    // with names: prefixed it starts, and a token alice is jwt:alice.
    @Test(arguments: LedgerBackend.allCases)
    func tokensNeverTakeOverTheNamesBasicReadersRegisteredUnder(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let alice = await fixture.send(
            "PUT /api/installations/alice-phone", json: Self.registration("alice-token"),
            headers: [ApiFixture.basic("alice")])
        #expect(alice.status == 200 && alice.body.contains("username:alice"), "\(alice.status) \(alice.body)")
        fixture.api.stop()
        let maker = TokenMaker()
        let jwks = try fixture.folder.write("jwks.json", maker.jwks())
        let plain = try String(contentsOfFile: fixture.config, encoding: .utf8)
        func serve(_ names: String) async throws -> DeskProcess {
            let jwt =
                "  jwt: {issuer: \"\(TokenMaker.issuer)\", audience: \(TokenMaker.audience), jwks: \(jwks), names: \(names)}\n"
            try plain.replacingOccurrences(of: "\napi:\n", with: "\napi:\n" + jwt)
                .write(toFile: fixture.config, atomically: true, encoding: .utf8)
            return try await DeskProcess.start(
                ["api", "--listen", "127.0.0.1:0", "--config", fixture.config], environment: ApiFixture.environment)
        }
        do {
            let started = try await serve("own")
            started.stop()
            Issue.record("newspush api started with api.jwt.names: own over Basic readers' installations")
        } catch DeskProcessError.notListening(let said) {
            #expect(
                said.contains("api.jwt.names") && said.contains("prefixed") && said.contains("1 reader(s)"), "\(said)")
            let status = try await newspush(
                ["api", "--listen", "127.0.0.1:0", "--config", fixture.config], environment: ApiFixture.environment)
            #expect(status.status == 78, "\(status.status) \(status.stderr)")
        }
        let prefixed = try await serve("prefixed")
        defer { prefixed.stop() }
        let token = await prefixed.send(
            "PUT /api/installations/token-alice HTTP/1.1", body: Self.registration("token-alice"),
            headers: ["Authorization: Bearer \(maker.token(["sub": "alice"]))", "Content-Type: application/json"])
        #expect(token.body.contains("username:jwt:alice"), "\(token.status) \(token.body)")
    }

    // /healthz asks the hub at most once per 30 s however often it is called; anyone else
    // than this machine or a sender hears only "unavailable", never why.
    @Test func healthAsksTheHubOnceAndTellsStrangersNothing() async throws {
        let fixture = try await ApiFixture.start(api: "  trusted_proxies: [127.0.0.1]\n")
        defer { fixture.stop() }
        await fixture.hub.emulator.inject(Fault(status: 401, count: 1000, format: "installation"))
        let before = await fixture.hub.emulator.requestCount("installation")
        for n in 0..<20 {
            let answer = await fixture.send("GET /healthz", headers: ["X-Forwarded-For: 198.51.100.\(n)"])
            #expect(answer.status == 503 && answer.body == #"{"status":"unavailable"}"#, "\(answer.body)")
        }
        let asked = await fixture.hub.emulator.requestCount("installation") - before
        #expect((1...2).contains(asked), "\(asked) hub requests for 20 health checks")
        let local = await fixture.send("GET /healthz")
        #expect(local.status == 503 && local.body.contains("401"), "this machine is told why: \(local.body)")
        let sender = await fixture.send(
            "GET /healthz", headers: [ApiFixture.basic("sam"), "X-Forwarded-For: 198.51.100.99"])
        #expect(sender.body.contains("401"), "a sender is told why: \(sender.body)")
        let reader = await fixture.send(
            "GET /healthz", headers: [ApiFixture.basic("bob"), "X-Forwarded-For: 198.51.100.98"])
        #expect(reader.body == #"{"status":"unavailable"}"#, "\(reader.body)")
    }

    /// The resident memory of process `pid` in MB (from /proc).
    static func residentMegabytes(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }

    /// Values added from several tasks.
    final class Tally: Sendable {
        private let values = Mutex<[Int]>([])
        func add(_ value: Int) { values.withLock { $0.append(value) } }
        var all: [Int] { values.withLock { $0 } }
        var counts: [Int: Int] { Dictionary(all.map { ($0, 1) }, uniquingKeysWith: +) }
    }

    /// A key set's server whose answers a test changes as it goes.
    final class KeyServer: Sendable {
        let answer = Mutex(CannedResponse(text: ""))
        let reads = Atomic<Int>(0)
        func set(_ text: String, headers: [(name: String, value: String)] = [], delay: Double = 0) {
            answer.withLock { $0 = CannedResponse(status: 200, headers: headers, body: Data(text.utf8), delay: delay) }
        }
    }

    // A key set is never read over a redirect to http; a key removed from the set stops
    // working once the set's max-age has passed; a rotation under load is one read that every
    // token with the new key waits for, none refused.
    @Test func keySetsAreReadOnceFreshAndOnlyOverHttps() async throws {
        let old = TokenMaker(kid: "old"), new = TokenMaker(kid: "new")
        let keys = KeyServer()
        let server = try await LocalHTTPServer.start { request in
            if request.uri.hasPrefix("/moved") {
                return CannedResponse(status: 302, headers: [("Location", "/jwks.json")], text: "")
            }
            keys.reads.add(1, ordering: .relaxed)
            return keys.answer.withLock { $0 }
        }
        defer { server.stop() }
        keys.set(old.jwks())
        let jwt = { (path: String) in
            "  jwt: {issuer: \"\(TokenMaker.issuer)\", audience: \(TokenMaker.audience), jwks: \"\(server.baseURL)\(path)\"}\n"
        }
        let moved = try await ApiFixture.start(api: jwt("/moved"))
        let redirected = await moved.send(
            "PUT /api/installations/r", json: Self.registration("r-token"),
            headers: ["Authorization: Bearer \(old.token())"])
        moved.stop()
        #expect(redirected.status == 401, "a key set behind a redirect to http is not read: \(redirected.status)")

        keys.set(old.jwks(), headers: [("Cache-Control", "public, max-age=1")])
        let fixture = try await ApiFixture.start(api: jwt("/jwks.json"))
        defer { fixture.stop() }
        let first = await fixture.send(
            "PUT /api/installations/o", json: Self.registration("o-token"),
            headers: ["Authorization: Bearer \(old.token())"])
        #expect(first.status == 200, "\(first.body)")
        // The old key leaves the set and the new one comes, slowly: a rotation under load.
        keys.set(new.jwks(), headers: [("Cache-Control", "max-age=600")], delay: 0.5)
        try await Task.sleep(for: .seconds(2))
        let readsBefore = keys.reads.load(ordering: .relaxed)
        let statuses = Tally()
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<32 {
                group.addTask {
                    let answer = await fixture.send(
                        "PUT /api/installations/n\(n)", json: Self.registration("n-token-\(n)"),
                        headers: ["Authorization: Bearer \(new.token(["sub": "user\(n)"]))"])
                    statuses.add(answer.status)
                }
            }
        }
        #expect(statuses.all.allSatisfy { $0 == 200 }, "\(statuses.all)")
        #expect(keys.reads.load(ordering: .relaxed) - readsBefore == 1, "one read for 32 tokens")
        let removed = await fixture.send(
            "PUT /api/installations/o", json: Self.registration("o-token"),
            headers: ["Authorization: Bearer \(old.token())"])
        #expect(removed.status == 401, "a key removed from the set no longer works: \(removed.status)")
    }

    // HEAD on every GET route; a name given twice, or in two cases, is a 400 naming it; a
    // handle quoted in a hub's error never reaches the log or the phone; a message over the
    // limit is refused with the limit named.
    @Test func theContractHoldsAtItsEdges() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let log = folder.file("api.log")
        let fixture = try await ApiFixture.start(logFile: log)
        defer { fixture.stop() }
        for path in ["/healthz", "/openapi.json"] {
            let answer = await fixture.send("HEAD \(path)")
            #expect(answer.status == 200 && answer.body.isEmpty, "HEAD \(path): \(answer.status)")
        }
        let twice = await fixture.send(
            "PUT /api/installations/d",
            json: #"{"platform":"fcmv1","pushChannel":"a-token","pushChannel":"b-token"}"#)
        #expect(twice.status == 400 && twice.body.contains("'pushChannel' is given twice"), "\(twice.body)")
        let cases = await fixture.send(
            "PUT /api/installations/d",
            json: #"{"platform":"fcmv1","pushChannel":"a-token","PushChannel":"b-token"}"#)
        #expect(
            cases.status == 400 && cases.body.contains("'pushChannel' and 'PushChannel' differ only in case"),
            "\(cases.body)")
        let handle = String(repeating: "3f", count: 32)
        await fixture.hub.emulator.inject(
            Fault(status: 400, count: 1, format: "installation", detail: "The pushChannel \(handle) is invalid"))
        let quoted = await fixture.send(
            "PUT /api/installations/q", json: Self.registration(handle, platform: "apns"))
        #expect(quoted.status >= 400 && !quoted.body.contains(handle), "\(quoted.body)")
        #expect(quoted.body.contains("[handle]"), "\(quoted.body)")
        // The log line of the refusal, once written.
        #expect(
            try await WatchTests.until {
                (try? String(contentsOfFile: log, encoding: .utf8))?.contains("[handle]") == true
            })
        let logged = try String(contentsOfFile: log, encoding: .utf8)
        #expect(!logged.contains(handle) && logged.contains("[handle]"), "\(logged)")
        for (id, handle) in [("a-1", "alice-one"), ("a-2", "alice-two")] {
            _ = await fixture.send(
                "PUT /api/installations/\(id)", json: Self.registration(handle), headers: [ApiFixture.basic("alice")])
        }
        let long = String(repeating: "x", count: 1_200)
        let message = await fixture.send(
            "POST /api/notifications?pns=apns&to_tag=alice", json: "\"\(long)\"", headers: [ApiFixture.basic("sam")])
        #expect(message.status == 400 && message.body.contains("1000"), "\(message.body)")
        #expect(await fixture.hub.emulator.allDeliveries().isEmpty)
        await fixture.hub.emulator.inject(Fault(status: 500, count: 100, format: "installation"))
        let forgot = try await newspush(
            ["devices", "forget-user", "alice", "--format", "json", "--config", fixture.config],
            environment: ApiFixture.environment)
        #expect(forgot.status == 2, "\(forgot.stderr)")
        let document = try? JSONSerialization.jsonObject(with: Data(forgot.stdout.utf8))
        #expect(document is [String: Any], "one JSON document: \(forgot.stdout)")
    }

    // The hourly secure-push limit holds for requests at once: twenty secure pushes of
    // alice's at the same moment (each of the hub's answers taking a fifth of a second), ten are
    // sent and ten told 429 with Retry-After (before, the count was checked before any was
    // recorded, and more went).
    @Test(arguments: LedgerBackend.allCases)
    func theHourlySecureLimitHoldsForRequestsAtOnce(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let alice = ApiFixture.basic("alice")
        let phone = await fixture.send(
            "PUT /api/installations/a-1", json: #"{"platform":"apns","pushChannel":"aa01","topics":["World"]}"#,
            headers: [alice])
        #expect(phone.status == 200, "\(phone.body)")
        await fixture.hub.emulator.inject(Fault(delaySeconds: 0.2, delayAfterDelivery: true, count: 100))
        let answers = Answers()
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<20 {
                group.addTask {
                    answers.set(
                        n, await fixture.send("POST /api/notifications", json: "\"secret \(n)\"", headers: [alice]))
                }
            }
        }
        let statuses = answers.all.values.map(\.status)
        #expect(statuses.filter { $0 == 200 }.count == 10, "\(statuses.sorted())")
        #expect(
            answers.all.values.filter { $0.status != 200 }.allSatisfy {
                $0.status == 429 && $0.headers["retry-after"] != nil
            }, "\(statuses.sorted())")
    }

    // A malformed chunked body is the client's fault: 400, not a 503 the phone would retry
    // (before, 503 without Retry-After, logged as an error); a body in a transfer coding the
    // back-end does not undo (`gzip, chunked`) is 400 too, never read as if it were plain.
    @Test func aMalformedBodyIs400() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let head = "PUT /api/installations/chunky HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        let broken = await fixture.api.sendRaw(
            head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\n{\"pla\r\nzz\r\nnope\r\n")
        #expect(broken.status == 400 || broken.status == 0, "\(broken.status) \(broken.body)")
        #expect(broken.status != 503)
        let json = #"{"platform":"fcmv1","pushChannel":"gz","topics":["World"]}"#
        let gzip = await fixture.api.sendRaw(
            head + "Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n"
                + String(json.utf8.count, radix: 16) + "\r\n\(json)\r\n0\r\n\r\n")
        #expect(gzip.status == 400 && gzip.body.contains("gzip"), "\(gzip.status) \(gzip.body)")
        #expect(!fixture.api.errors.current.contains("error"), "\(fixture.api.errors.current)")
        #expect(await fixture.atHub("chunky") == nil)
    }

    // A registration flood from 10,000 addresses of one IPv6 /64 and from 1,000 networks:
    // the /64 is one client (its rate, its 3 new anonymous installations a day), each network
    // another; a signed-in reader still registers throughout (p99 before and during reported);
    // the server's memory stays flat; the rate state is bounded whatever the number of networks.
    @Test func aRegistrationFloodIsCountedPerNetworkInBoundedMemory() async throws {
        let fixture = try await ApiFixture.start(
            api: """
                  trusted_proxies: [127.0.0.1]
                  rate: {per_address: 20/min, per_user: 100000/min, new_anonymous_per_network: 3/day}
                """)
        defer { fixture.stop() }
        let reader = ApiFixture.basic("bob")
        func bobRegisters(_ rounds: Int, from n: Int) async -> [Double] {
            var times: [Double] = []
            for round in 0..<rounds {
                let started = ContinuousClock.now
                let answer = await fixture.send(
                    "PUT /api/installations/bob-phone",
                    json: Self.registration("bob-token", topics: (n + round) % 2 == 0 ? #"["World"]"# : "[]"),
                    headers: [reader, "X-Forwarded-For: 203.0.113.\((n + round) % 200)"])
                #expect(answer.status == 200, "the signed-in reader: \(answer.status) \(answer.body)")
                let elapsed = ContinuousClock.now - started
                times.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
            }
            return times
        }
        func p99(_ times: [Double]) -> Double { times.sorted()[Int(Double(times.count - 1) * 0.99)] }
        let quiet = await bobRegisters(100, from: 0)
        let rssBefore = Self.residentMegabytes(fixture.api.child.pid)
        let statuses = Tally()
        async let during = bobRegisters(200, from: 1)
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<16 {
                group.addTask {
                    for n in stride(from: client, to: 11_000, by: 16) {
                        // 10,000 addresses of 2001:db8:1:2::/64, then 1,000 networks of one address each.
                        let address =
                            n < 10_000
                            ? "2001:db8:1:2:\(String(n % 65536, radix: 16)):\(String(n * 7 % 65536, radix: 16)):1:1"
                            : "2001:db8:\(String(n, radix: 16))::1"
                        let answer = await fixture.send(
                            "PUT /api/installations/flood-\(n)", json: Self.registration("flood-token-\(n)"),
                            headers: ["X-Forwarded-For: \(address)"])
                        statuses.add(n < 10_000 ? answer.status : 1000 + answer.status)
                    }
                }
            }
        }
        let busy = await during
        let rssAfter = Self.residentMegabytes(fixture.api.child.pid)
        let counts = statuses.counts
        #expect(counts[200] == 3, "new anonymous installations from the one /64: \(counts)")
        #expect(counts[1200] == 1000, "one from each of 1,000 networks: \(counts)")
        print(
            "flood: p99 of a signed-in registration \(Int(p99(quiet))) ms before, \(Int(p99(busy))) ms during; "
                + "resident memory \(rssBefore) MB before, \(rssAfter) MB after; answers \(counts)")
        #expect(rssAfter - rssBefore < 64, "memory grew from \(rssBefore) to \(rssAfter) MB")
        #expect(
            ClientNetwork.key("::ffff:198.51.100.7", ipv4Prefix: 32, ipv6Prefix: 64)
                == ClientNetwork.key("198.51.100.7", ipv4Prefix: 32, ipv6Prefix: 64))
        #expect(
            ClientNetwork.key("198.51.100.7", ipv4Prefix: 24, ipv6Prefix: 64)
                == ClientNetwork.key("198.51.100.200", ipv4Prefix: 24, ipv6Prefix: 64))
        let limits = RateLimits(capacity: 10_000)
        let now = Date()
        for n in 0..<1_000_000 { _ = limits.take("a:\(n)", count: 60, per: 60, now: now) }
        #expect(limits.count <= 20_000, "\(limits.count) buckets for a million networks")
    }

    // With api.handle_shapes: strict (the default), a handle no push service would issue is
    // refused with the shape it should have: the quota cannot be filled with made-up strings.
    @Test func handlesOfNoPushServiceAreRefused() async throws {
        let fixture = try await ApiFixture.start(api: "  handle_shapes: strict\n")
        defer { fixture.stop() }
        let fcm = "dGhpcyBpcyBub3Qg:APA91b" + String(repeating: "Hq3xZ-9_kLm", count: 13)
        let cases: [(String, String, Int, String)] = [
            ("apns", "aa01", 400, "32 to 100 bytes"), ("apns", String(repeating: "a1", count: 32), 200, ""),
            ("fcmv1", "token-of-a-phone", 400, "FCM registration token"), ("fcmv1", fcm, 200, ""),
            ("fcmv1", String(repeating: "x", count: 70) + "/evil", 400, "FCM registration token"),
            ("wns", "https://wns.example/n1", 400, "notify.windows.com"),
            ("wns", "https://db5.notify.windows.com/?token=AwYAAAB", 200, ""),
        ]
        for (n, (platform, handle, status, reason)) in cases.enumerated() {
            let answer = await fixture.send(
                "PUT /api/installations/s\(n)", json: Self.registration(handle, platform: platform))
            #expect(
                answer.status == status && (reason.isEmpty || answer.body.contains(reason)),
                "\(platform) \(handle): \(answer.body)")
        }
    }

    // A user has at most api.max_devices_per_user installations (the oldest replaced, at the
    // hub and in the index); a network makes at most api.rate.new_anonymous_per_network new
    // anonymous ones; past api.max_installations anonymous registrations get 503 and signed-in
    // readers still register.
    @Test func capsKeepTheHubsQuotaForReaders() async throws {
        let fixture = try await ApiFixture.start(
            api: """
                  trusted_proxies: [127.0.0.1]
                  max_devices_per_user: 3
                  max_installations: 8
                  rate: {per_address: 1000/min, per_user: 1000/min, new_anonymous_per_network: 3/day}
                """)
        defer { fixture.stop() }
        for n in 1...4 {
            let answer = await fixture.send(
                "PUT /api/installations/alice-\(n)", json: Self.registration("alice-token-\(n)"),
                headers: [ApiFixture.basic("alice"), "X-Forwarded-For: 203.0.113.1"])
            #expect(answer.status == 200, "\(answer.body)")
            try await Task.sleep(for: .milliseconds(20))
        }
        let alices = try await fixture.index().filter { $0["owner"] as? String == "alice" }.compactMap {
            $0["id"] as? String
        }
        #expect(Set(alices) == ["alice-2", "alice-3", "alice-4"], "\(alices)")
        #expect(await fixture.atHub("alice-1") == nil, "the oldest is gone from the hub too")
        var fromOneNetwork: [Int] = []
        for n in 1...4 {
            let answer = await fixture.send(
                "PUT /api/installations/anon-\(n)", json: Self.registration("anon-token-\(n)"),
                headers: ["X-Forwarded-For: 198.51.100.1"])
            fromOneNetwork.append(answer.status)
            if answer.status == 429 { #expect(Int(answer.headers["retry-after"] ?? "") ?? 0 > 0) }
        }
        #expect(fromOneNetwork == [200, 200, 200, 429], "\(fromOneNetwork)")
        // 6 installations now; two more anonymous ones fill the index to 8.
        var filling: [Int] = []
        for n in 1...3 {
            let answer = await fixture.send(
                "PUT /api/installations/other-\(n)", json: Self.registration("other-token-\(n)"),
                headers: ["X-Forwarded-For: 192.0.2.\(n)"])
            filling.append(answer.status)
            if answer.status == 503 { #expect(answer.headers["retry-after"] != nil) }
        }
        #expect(filling == [200, 200, 503], "\(filling)")
        let bob = await fixture.send(
            "PUT /api/installations/bob-1", json: Self.registration("bob-token"),
            headers: [ApiFixture.basic("bob"), "X-Forwarded-For: 192.0.2.50"])
        #expect(bob.status == 200, "a signed-in reader still registers: \(bob.body)")
        let counted = try await newspush(
            ["devices", "count", "--format", "json", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(counted.stdout.contains("\"max_installations\" : 8"), "\(counted.stdout)")
        let check = try await newspush(
            ["check", "--hub", "--format", "json", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(check.stdout.contains("api.max_installations") && check.stdout.contains("113%"), "\(check.stdout)")
    }

    // Anyone can get a token from an open identity provider: a token user's new installation
    // counts against the per-network cap and api.max_installations as an anonymous phone's
    // does; Basic readers, whom the operator added, still register. The default cap is nine
    // tenths of hub.tier's device quota.
    @Test func tokenUsersCountAgainstTheCapsAsAnonymousPhonesDo() async throws {
        let maker = TokenMaker()
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let jwks = try folder.write("jwks.json", maker.jwks())
        let fixture = try await ApiFixture.start(
            api: """
                  trusted_proxies: [127.0.0.1]
                  max_installations: 3
                  rate: {per_address: 1000/min, per_user: 1000/min, new_anonymous_per_network: 2/day}
                  jwt: {issuer: "\(TokenMaker.issuer)", audience: \(TokenMaker.audience), jwks: \(jwks)}
                """)
        defer { fixture.stop() }
        func register(_ subject: String, from address: String) async -> Int {
            let answer = await fixture.send(
                "PUT /api/installations/\(subject)-phone", json: Self.registration("\(subject)-token"),
                headers: ["Authorization: Bearer \(maker.token(["sub": subject]))", "X-Forwarded-For: \(address)"])
            if answer.status >= 429 { #expect(answer.headers["retry-after"] != nil, "\(answer.headers)") }
            return answer.status
        }
        var statuses: [Int] = []
        for subject in ["t1", "t2", "t3"] { statuses.append(await register(subject, from: "198.51.100.1")) }
        statuses.append(await register("t4", from: "198.51.100.200"))
        statuses.append(await register("t5", from: "192.0.2.7"))
        #expect(statuses == [200, 200, 429, 200, 503], "\(statuses)")
        let alice = await fixture.send(
            "PUT /api/installations/alice-phone", json: Self.registration("alice-token"),
            headers: [ApiFixture.basic("alice"), "X-Forwarded-For: 192.0.2.7"])
        #expect(alice.status == 200, "a Basic reader still registers: \(alice.body)")
        let text = try String(contentsOfFile: fixture.config, encoding: .utf8)
        let free = fixture.folder.file("free.yaml")
        try text.replacingOccurrences(of: "retries: 1,", with: "tier: free, retries: 1,")
            .replacingOccurrences(of: "  max_installations: 3\n", with: "")
            .write(toFile: free, atomically: true, encoding: .utf8)
        let counted = try await newspush(
            ["devices", "count", "--format", "json", "--config", free], environment: ApiFixture.environment)
        #expect(counted.stdout.contains("\"max_installations\" : 450"), "\(counted.stdout) \(counted.stderr)")
    }

    // After a forget, no row of the ledger names the reader, a digest of the name, their
    // handles' texts or their messages: the whole SQLite file (and its log) and a pg_dump are
    // searched for them. The audit keeps that a forget happened, asked by the reader, under
    // the keyed pseudonym.
    @Test(arguments: LedgerBackend.allCases)
    func aForgottenReaderIsGoneFromEveryRow(_ backend: LedgerBackend) async throws {
        let key = "a pseudonym key of the newsroom"
        let fixture = try await ApiFixture.start(backend, api: "  pseudonym_key: \"\(key)\"\n")
        defer { fixture.stop() }
        let added = try await newspush(
            ["api", "add-user", "zelda", "--role", "sender", "--config", fixture.config], input: "zelda-password\n")
        #expect(added.status == 0)
        let zelda = Self.basic("zelda", "zelda-password")
        for (id, handle) in [("z-1", "zelda-phone-token"), ("z-2", "zelda-tablet-token")] {
            let answer = await fixture.send(
                "PUT /api/installations/\(id)", json: Self.registration(handle), headers: [zelda])
            #expect(answer.status == 200, "\(answer.body)")
        }
        let bobPhone = await fixture.send(
            "PUT /api/installations/b-1", json: Self.registration("bob-phone-token"), headers: [ApiFixture.basic("bob")]
        )
        #expect(bobPhone.status == 200)
        let reserved = await fixture.send("POST /api/register?handle=zelda-new-phone", headers: [zelda])
        #expect(reserved.status == 200)
        let secure = await fixture.send("POST /api/notifications", json: "\"zelda's secret text\"", headers: [zelda])
        #expect(secure.status == 200, "\(secure.body)")
        let secureId = try #require(ApiFixture.object(secure)["secureId"] as? Int)
        #expect(await fixture.send("GET /api/notifications/\(secureId)", headers: [zelda]).status == 200)
        let toHer = await fixture.send(
            "POST /api/notifications?pns=fcm&to_tag=zelda", json: "\"for zelda only\"",
            headers: [ApiFixture.basic("sam")])
        #expect(toHer.status == 200, "\(toHer.body)")
        let fromHer = await fixture.send(
            "POST /api/notifications?pns=fcm&to_tag=bob", json: "\"a word from a friend\"", headers: [zelda])
        #expect(fromHer.status == 200, "\(fromHer.body)")
        let personal = try await newspush(
            [
                "publish", "--config", fixture.config, "--user", "zelda", "--category", "World", "--title",
                "Exclusive for one", "--url", "https://news.example.org/one", "--yes",
            ], environment: ApiFixture.environment)
        #expect(personal.status == 0, "\(personal.stderr)")
        #expect(await fixture.send("DELETE /api/users/me", headers: [zelda]).status == 204)

        let stored: String
        switch backend {
        case .sqlite:
            // The engine's own copies (its write-ahead log) go within a second, off the request.
            #expect(await fixture.api.errors.until("erased rows are gone from the ledger's files"))
            let files = ["newspush-state.db", "newspush-state.db-wal"].map(fixture.folder.file)
            stored = files.compactMap { FileManager.default.contents(atPath: $0) }
                .map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n")
        case .postgres:
            let config = try String(contentsOfFile: fixture.config, encoding: .utf8)
            let range = try #require(
                config.range(of: #"/(np_[A-Za-z0-9_]+|[a-z0-9_]+)\?sslmode"#, options: .regularExpression))
            let database = String(config[range].dropFirst().dropLast(8))
            stored = try await LocalPostgres.shared().dump(database)
        }
        let digest = Hex.sha256(Data("zelda".utf8))
        for trace in [
            "zelda", digest, String(digest.prefix(16)), "zelda's secret text", "for zelda only", "a word from a friend",
        ] {
            #expect(!stored.contains(trace), "the ledger still holds '\(trace)'")
        }
        #expect(stored.contains("bob"), "the search reads the ledger (bob is still in it)")
        // The newsroom's own story stays on the record (sent to a reader it no longer names).
        #expect(stored.contains("Exclusive for one"))
        #expect(
            try await HostileOperatorTests().outbox(fixture.config).allSatisfy {
                "\($0)".contains("Exclusive") == false
            })
        let history = try await newspush(
            ["review", "history", "--format", "json", "--config", fixture.config], environment: ApiFixture.environment)
        let code = HMAC<SHA256>.authenticationCode(for: Data("zelda".utf8), using: SymmetricKey(data: Data(key.utf8)))
        let pseudonym = "reader hmac:" + Hex.string(Data(code))
        #expect(history.stdout.contains(pseudonym) && history.stdout.contains("the reader"), "\(history.stdout)")
    }

    // A story an editor rejected goes to no reader by name without --force; a story that went
    // to alice by name and then to everyone (by the run, or by publish) reaches her once.
    @Test func editorialPromisesHoldThroughPushesToOneReader() async throws {
        let feed = try await LocalHTTPServer.serving([
            "/world.xml": CannedResponse(
                text: rssFeed(
                    title: "World desk",
                    items: [
                        (guid: "held-1", title: "Unconfirmed coup rumour", minutesAgo: 5),
                        (guid: "quake-1", title: "Quake hits the capital", minutesAgo: 4),
                    ]))
        ])
        defer { feed.stop() }
        let fixture = try await ApiFixture.start(
            extra: #"review: {rules: [{title: "(?i)rumour", mode: review}]}"# + "\ndesk: {users: desk-users.yaml}",
            feeds: ["{url: \"\(feed.baseURL)/world.xml\", category: World}"])
        defer { fixture.stop() }
        let phones = [
            ("a-1", ApiFixture.basic("alice")), ("b-1", ApiFixture.basic("bob")), ("n-1", ""),
        ]
        for (id, auth) in phones {
            let answer = await fixture.send(
                "PUT /api/installations/\(id)", json: Self.registration("\(id)-token"),
                headers: auth.isEmpty ? [] : [auth])
            #expect(answer.status == 200)
        }
        func publish(_ title: String, _ guid: String, _ extra: [String]) async throws -> CommandResult {
            try await newspush(
                [
                    "publish", "--config", fixture.config, "--category", "World", "--title", title, "--url",
                    "https://news.example.org/\(guid)", "--yes",
                ] + extra, environment: ApiFixture.environment)
        }
        // The quake goes to alice by name first; then the run sends it to everyone.
        #expect(try await publish("Quake hits the capital", "quake-1", ["--user", "alice"]).status == 0)
        let run = try await newspush(["run", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let quake = await fixture.hub.emulator.allDeliveries().filter { $0.payload.contains("Quake hits the capital") }
        #expect(quake.filter { $0.device.hasPrefix("a-1") }.count == 1, "\(quake.map(\.device))")
        #expect(quake.filter { $0.device.hasPrefix("b-1") }.count == 1 && quake.contains { $0.device.hasPrefix("n-1") })
        // The rumour was held; an editor rejects it; no reader gets it by name without --force.
        let list = try await newspush(["review", "list", "--format", "json", "--config", fixture.config])
        let held = try #require(
            (try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])?["held"]
                as? [[String: Any]])
        let id = try #require(held.first?["id"] as? String, "\(list.stdout)")
        let rejected = try await newspush([
            "review", "reject", id, "--reason", "unconfirmed", "--config", fixture.config,
        ])
        #expect(rejected.status == 0, "\(rejected.stderr)")
        let refused = try await publish("Unconfirmed coup rumour", "held-1", ["--user", "bob"])
        #expect(refused.status == 1 && refused.stderr.contains("rejected"), "\(refused.status) \(refused.stderr)")
        #expect(!(await fixture.hub.emulator.allDeliveries()).contains { $0.payload.contains("coup rumour") })
        #expect(try await publish("Unconfirmed coup rumour", "held-1", ["--user", "bob", "--force"]).status == 0)
        // A story to bob by name, then to everyone by publish: bob once, the others once.
        #expect(try await publish("Markets close higher", "markets-1", ["--user", "bob"]).status == 0)
        let everyone = try await publish("Markets close higher", "markets-1", [])
        #expect(everyone.status == 0, "\(everyone.stderr)")
        let markets = await fixture.hub.emulator.allDeliveries().filter { $0.payload.contains("Markets close higher") }
        #expect(markets.filter { $0.device.hasPrefix("b-1") }.count == 1, "\(markets.map(\.device))")
        #expect(markets.filter { $0.device.hasPrefix("a-1") }.count == 1)
        // Past the hub's 6 tags of an && expression, the preview names who would get it twice.
        for reader in ["r1", "r2", "r3", "r4", "r5", "r6", "r7"] {
            #expect(try await publish("Seven readers first", "seven-1", ["--user", reader]).status == 0)
        }
        let preview = try await publish("Seven readers first", "seven-1", ["--dry-run"])
        #expect(preview.stderr.contains("2 readers already got this story by name"), "\(preview.stderr)")
        #expect(preview.stderr.contains("username:r6") && preview.stderr.contains("username:r7"), "\(preview.stderr)")
        // The desk's Publish preview says so too.
        let (desk, cookie, csrf) = try await fixture.editorsDesk()
        defer { desk.stop() }
        let form =
            "csrf=\(csrf)&category=World&title=Seven+readers+first"
            + "&url=https%3A%2F%2Fnews.example.org%2Fseven-1&action=preview"
        let onDesk = await desk.send(
            "POST /publish HTTP/1.1", body: form,
            headers: ["Cookie: \(cookie)", "Content-Type: application/x-www-form-urlencoded"])
        #expect(onDesk.body.contains("2 readers already got this story by name"), "\(onDesk.status)")
    }

    /// A flag several tasks read.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func raise() { value.store(true, ordering: .relaxed) }
        var isRaised: Bool { value.load(ordering: .relaxed) }
    }

    // PostgreSQL stopped at once (`-m immediate`) and started again under load: a request in
    // flight at the stop may fail, those that arrive while it is down wait for it, and after
    // it is back none fails (a connection the server closed is replaced before it is used).
    @Test(.enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"))
    func aPostgresRestartCostsAtMostTheRequestsInFlight() async throws {
        let server = try await LocalPostgres.start()
        defer { server.stop() }
        let state = try await server.createDatabase()
        let environment = hubEnvironment.merging(server.environment) { $1 }
        let fixture = try await ApiFixture.start(extra: "state: \"\(state)\"", environment: environment)
        defer { fixture.stop() }
        // A burst opens more pooled connections than the 4 clients after it keep busy: at the
        // stop, most of them are idle, and the server closes them all.
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<24 {
                group.addTask {
                    for n in 0..<6 {
                        _ = await fixture.send(
                            "PUT /api/installations/w\(client)",
                            json: Self.registration("warm-\(client)-token", topics: n % 2 == 0 ? #"["World"]"# : "[]"))
                    }
                }
            }
        }
        let clients = 4
        let stop = Flag()
        let failures = FailureLog(), requests = Tally()
        async let traffic: Void = withTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask {
                    var n = 0
                    while !stop.isRaised {
                        let topics = n % 3 == 0 ? #"["World","Sports"]"# : #"["World"]"#
                        let sent = ContinuousClock.now
                        let answer = await fixture.send(
                            "PUT /api/installations/c\(client)",
                            json: Self.registration("client-\(client)-token", topics: topics))
                        requests.add(answer.status)
                        if answer.status != 200 { failures.add(client: client, status: answer.status, sent: sent) }
                        n += 1
                    }
                }
            }
        }
        try await Task.sleep(for: .seconds(1.5))
        try await server.restart(immediate: true, down: 1)
        let back = ContinuousClock.now
        try await Task.sleep(for: .seconds(3))
        stop.raise()
        await traffic
        let failed = failures.all
        print("PostgreSQL restart: \(failures.count) failed of \(requests.all.count) requests: \(failed.map(\.status))")
        #expect(failed.count <= clients, "\(failed.count) failed requests for \(clients) in flight: \(failed)")
        // A request sent while the server was down may end (fail) after it is back, however slowly
        // a starved machine answers it; a request sent once it is back must not fail.
        let late = failed.filter { $0.sent > back + .milliseconds(500) }
        #expect(late.isEmpty, "sent after the server was back, and failed: \(late)")
    }

    /// Failed requests, by client, with when each was sent.
    final class FailureLog: Sendable {
        private let entries = Mutex<[(client: Int, status: Int, sent: ContinuousClock.Instant)]>([])
        func add(client: Int, status: Int, sent: ContinuousClock.Instant) {
            entries.withLock { $0.append((client, status, sent)) }
        }
        var all: [(client: Int, status: Int, sent: ContinuousClock.Instant)] { entries.withLock { $0 } }
        var count: Int { entries.withLock { $0.count } }
    }
}
