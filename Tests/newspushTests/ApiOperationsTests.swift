import Foundation
import HubEmulator
import NewsPushAPI
import NewsPushTesting
import NotificationHubs
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Operating the app back-end: the devices commands, the OpenAPI
/// contract, and several instances on one PostgreSQL ledger under kills.
@Suite("The app back-end in operation")
struct ApiOperationsTests {
    // devices list|count by owner, platform and topic; prune deletes from hub and index what was
    // not registered again within api.stale_after, and nothing else.
    @Test(arguments: LedgerBackend.allCases)
    func devicesListCountAndPruneTheIndex(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend, api: "  stale_after: 30d\n")
        defer { fixture.stop() }
        let alice = ApiFixture.basic("alice")
        let registrations = [
            ("a1", #"{"platform":"apns","pushChannel":"aa01","topics":["World","Sports"]}"#, [alice]),
            ("a2", #"{"platform":"fcmv1","pushChannel":"fcm-a2","topics":["World"]}"#, [alice]),
            ("n1", #"{"platform":"wns","pushChannel":"https://wns.example/n1","topics":["Science"]}"#, []),
        ]
        for (id, body, headers) in registrations {
            #expect(await fixture.send("PUT /api/installations/\(id)", json: body, headers: headers).status == 200)
        }
        let count = try await newspush(
            ["devices", "count", "--format", "json", "--config", fixture.config], environment: ApiFixture.environment)
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(count.stdout.utf8)) as? [String: Any])
        #expect(counts["total"] as? Int == 3 && counts["signed_in"] as? Int == 2 && counts["anonymous"] as? Int == 1)
        #expect(counts["topics"] as? [String: Int] == ["World": 2, "Sports": 1, "Science": 1], "\(counts)")
        #expect(counts["platforms"] as? [String: Int] == ["apns": 1, "fcmv1": 1, "wns": 1])
        #expect((counts["counted"] as? String)?.contains("through newspush api only") == true)
        let world = try await newspush(
            ["devices", "count", "--topic", "World", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(world.stdout.hasPrefix("World: 2 installations"), "\(world.stdout)")
        let anonymous = try await newspush(
            ["devices", "list", "--owner", "", "--format", "json", "--config", fixture.config],
            environment: ApiFixture.environment)
        #expect(anonymous.stdout.contains("\"n1\"") && !anonymous.stdout.contains("\"a1\""), "\(anonymous.stdout)")
        #expect(!anonymous.stdout.contains("https://wns.example"), "a handle is never shown")
        // On day 20 nothing is 30 days old; a1 is registered again that day (through an
        // instance whose clock reads day 20); on day 40 prune takes a2 and n1 only.
        let day20 = ApiFixture.environment.merging(testClock(Date().addingTimeInterval(20 * 86400))) { $1 }
        let early = try await newspush(["devices", "prune", "--config", fixture.config], environment: day20)
        #expect(early.stdout.hasPrefix("0 installations"), "\(early.stdout)")
        let laterApi = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", fixture.config], environment: day20)
        defer { laterApi.stop() }
        let again = await laterApi.send(
            "PUT /api/installations/a1 HTTP/1.1", body: registrations[0].1,
            headers: [alice, "Content-Type: application/json"])
        #expect(again.status == 200, "\(again.body)")
        let pruned = try await newspush(
            ["devices", "prune", "--format", "json", "--config", fixture.config],
            environment: ApiFixture.environment.merging(testClock(Date().addingTimeInterval(40 * 86400))) { $1 })
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(
            pruned.stdout.contains("\"stale\" : 2") && pruned.stdout.contains("\"finished\" : 2"), "\(pruned.stdout)")
        let (a1, a2, n1) = (await fixture.atHub("a1"), await fixture.atHub("a2"), await fixture.atHub("n1"))
        #expect(a2 == nil && n1 == nil && a1 != nil)
        #expect(try await fixture.index().compactMap { $0["id"] as? String } == ["a1"])
    }

    // Reach: `devices count --tags EXPR` evaluates the expression over the index
    // and equals the emulator's own count of the installations it would route the send to.
    @Test(arguments: LedgerBackend.allCases)
    func devicesCountOfATagExpressionEqualsTheHubsOwnCount(_ backend: LedgerBackend) async throws {
        let fixture = try await ApiFixture.start(backend)
        defer { fixture.stop() }
        let topics = ["World", "Politics", "Sports", "Science"]
        var generator = SystemRandomNumberGenerator()
        for n in 0..<40 {
            let chosen = topics.filter { _ in Bool.random(using: &generator) }
            let list = chosen.map { "\"\($0)\"" }.joined(separator: ",")
            let headers = n % 3 == 0 ? [ApiFixture.basic(n % 2 == 0 ? "alice" : "bob")] : []
            let answer = await fixture.send(
                "PUT /api/installations/reach-\(n)",
                json: #"{"platform":"fcmv1","pushChannel":"reach-token-\#(n)","topics":[\#(list)]}"#, headers: headers)
            #expect(answer.status == 200, "\(answer.body)")
        }
        let atHub = await fixture.hub.emulator.allInstallations()
        for expression in [
            "World && !Sports", "World || Science", "!Politics", "username:alice || (Sports && Science)",
        ] {
            let node = try TagExpression.parse(expression)
            let expected = atHub.filter { node.matches(Set($0.tags ?? [])) }.count
            let counted = try await newspush(
                ["devices", "count", "--tags", expression, "--format", "json", "--config", fixture.config],
                environment: ApiFixture.environment)
            let document = try JSONSerialization.jsonObject(with: Data(counted.stdout.utf8)) as? [String: Any]
            #expect(
                document?["installations"] as? Int == expected, "\(expression): \(counted.stdout) \(counted.stderr)")
        }
    }

    // Graceful shutdown: SIGTERM while a registration waits for the hub lets it
    // finish (200, at the hub and in the index), then the server exits 0.
    @Test func sigtermLetsARegistrationInFlightFinish() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        await fixture.hub.emulator.inject(Fault(delaySeconds: 600))
        let inFlight = Task {
            await fixture.send(
                "PUT /api/installations/late",
                json: #"{"platform":"fcmv1","pushChannel":"late-token","topics":["World"]}"#)
        }
        await fixture.hub.emulator.untilSomethingWaits()
        fixture.api.child.terminate()
        // The hub holds the write until the server has taken the signal.
        #expect(await fixture.api.errors.until("newspush api: stopping"), "the api never said it was stopping")
        await fixture.hub.emulator.advanceClock(by: 600)
        let answer = await inFlight.value
        #expect(answer.status == 200, "\(answer.status) \(answer.body)")
        #expect(await fixture.api.child.exitStatus() == 0)
        #expect(await fixture.atHub("late") != nil)
        #expect(try await fixture.index().compactMap { $0["id"] as? String } == ["late"])
    }

    // A hub that went away (it takes the requests and never answers): SIGTERM still stops the
    // back-end within its drain limit, saying so, with exit 0; the registration it left is
    // settled by the next start, so that the hub and the index agree.
    @Test func sigtermStopsWithinTheDrainLimitWhenTheHubNeverAnswers() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        await fixture.hub.emulator.inject(Fault(delaySeconds: 3600, count: 1000))
        let inFlight = Task {
            await fixture.send(
                "PUT /api/installations/stuck",
                json: #"{"platform":"fcmv1","pushChannel":"stuck-token","topics":["World"]}"#)
        }
        await fixture.hub.emulator.untilSomethingWaits()
        fixture.api.child.terminate()
        #expect(
            await fixture.api.errors.until("requests still in flight after 15 s; stopping without them", limit: 120),
            "\(fixture.api.errors.current)")
        #expect(await fixture.api.child.exitStatus() == 0)
        #expect(await inFlight.value.status == 0, "the phone got no answer, and tries again")
        await fixture.hub.emulator.clearFaults()
        await fixture.hub.emulator.advanceClock(by: 3601)
        let prune = try await newspush(
            ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(prune.status == 0, "\(prune.stdout) \(prune.stderr)")
        let atHub = await fixture.hub.emulator.allInstallations().map(\.installationId)
        let indexed = try await fixture.index().compactMap { $0["id"] as? String }
        #expect(atHub == indexed, "hub \(atHub), index \(indexed)")
    }

    // The OpenAPI document and the routes are in step: every route of the server is in the
    // document with its method, every operation of the document is a route the server answers
    // (never "no such route" or 405), and the server serves the document itself.
    @Test func theOpenAPIDocumentListsEveryRouteAndOnlyThose() async throws {
        let document = try #require(try JSONSerialization.jsonObject(with: ApiDocument.data) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
        let routes = Set(ApiRoutes.table.map { "\($0.method) \($0.path)" })
        #expect(
            documented == routes,
            "only documented: \(documented.subtracting(routes)); only routes: \(routes.subtracting(documented))")
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let served = await fixture.send("GET /openapi.json")
        #expect(served.status == 200 && Data(served.body.utf8) == ApiDocument.data)
        for route in ApiRoutes.table {
            let answer = await fixture.send(
                "\(route.method) \(route.path.replacing(/\{[A-Za-z]+\}/, with: "probe-id"))",
                headers: [ApiFixture.basic("alice")])
            // A route's own 404 (no such notification) is an answer; "no such route" is not.
            #expect(answer.status != 405 && !answer.body.contains("no such route"), "\(route): \(answer.status)")
        }
    }

    static let schemathesis: String? = {
        for folder in [
            "/usr/local/bin", "/usr/bin", NSHomeDirectory() + "/.pyenv/shims", NSHomeDirectory() + "/.local/bin",
        ] {
            let path = folder + "/schemathesis"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()

    // schemathesis against the running API and its own document, with and without credentials:
    // no 5xx, no answer outside the document (status, headers, body, content type).
    @Test(.enabled(if: schemathesis != nil, "schemathesis is not installed (scripts/setup.sh --tests installs it)"))
    func schemathesisFindsNoServerErrorAndNoAnswerOutsideTheDocument() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let checks =
            "not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,"
            + "response_schema_conformance"
        let base = [
            "run", "http://127.0.0.1:\(fixture.api.port)/openapi.json", "--checks", checks, "--max-examples", "25",
            "--seed", "1", "--no-color",
        ]
        for credential in [
            [], ["-H", "Authorization: Basic " + Data("alice:alice-password".utf8).base64EncodedString()],
        ] {
            let result = try await newspushRaw(
                try #require(Self.schemathesis), base + credential,
                environment: ["HOME": NSHomeDirectory(), "PATH": "/usr/local/bin:/usr/bin:/bin"],
                in: fixture.folder.path)  // its cache (.schemathesis/) goes there, not into the checkout
            #expect(
                result.status == 0, "\(credential.isEmpty ? "anonymous" : "signed in"): \(result.stdout.suffix(3000))")
        }
    }

    // Two instances on one PostgreSQL ledger under a storm of registrations (64 clients, every
    // handle registered twice under two ids, through either instance), one killed with -9
    // midway (a phone without an answer tries again, reaching the other): every installation
    // answered 200 and not replaced since is in the hub and the index, and the hub holds exactly
    // one installation per handle once the owed removals are finished (`devices prune`).
    @Test(.enabled(if: LocalPostgres.missing == nil, "\(LocalPostgres.missing ?? "")"))
    func twoInstancesUnderAStormWithAKillKeepOneInstallationPerHandle() async throws {
        let fixture = try await ApiFixture.start(.postgres)
        defer { fixture.stop() }
        let second = try await DeskProcess.start(
            ["api", "--listen", "127.0.0.1:0", "--config", fixture.config], environment: ApiFixture.environment)
        defer { second.stop() }
        let handles = 400
        let answered = Answered()
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<64 {
                group.addTask {
                    for n in stride(from: client, to: handles, by: 64) {
                        for attempt in 0..<2 {
                            let id = "h\(n)-\(attempt)"
                            let body = #"{"platform":"fcmv1","pushChannel":"handle-\#(n)","topics":["World"]}"#
                            // A phone whose request got no answer tries again; the balancer
                            // sends it to the instance that is still up.
                            for retry in 0..<3 {
                                let instance = (n + attempt) % 2 == 0 || retry > 0 ? fixture.api : second
                                let answer = await instance.send(
                                    "PUT /api/installations/\(id) HTTP/1.1", body: body,
                                    headers: ["Content-Type: application/json"])
                                if answer.status == 200 {
                                    await answered.add(handle: n, id: id)
                                    break
                                }
                            }
                        }
                        if n == handles / 2 { second.stop() }
                    }
                }
            }
        }
        #expect(!second.isRunning)
        let prune = try await newspush(
            ["devices", "prune", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(prune.status == 0, "\(prune.stdout) \(prune.stderr)")
        let atHub = await fixture.hub.emulator.allInstallations()
        let byHandle = Dictionary(grouping: atHub, by: \.pushChannel)
        #expect(byHandle.values.allSatisfy { $0.count == 1 }, "\(byHandle.filter { $0.value.count > 1 }.keys.sorted())")
        let index = try await fixture.index()
        let indexIds = Set(index.compactMap { $0["id"] as? String })
        let latest = await answered.latest
        #expect(latest.count > handles / 2, "\(latest.count) handles answered")
        for (handle, id) in latest {
            #expect(byHandle["handle-\(handle)"]?.first?.installationId == id, "handle \(handle): hub")
            #expect(indexIds.contains(id), "handle \(handle): index")
        }
        #expect(index.count == Set(index.compactMap { $0["id"] as? String }).count)
    }

    /// The last id answered 200 for each handle.
    actor Answered {
        var latest: [Int: String] = [:]
        func add(handle: Int, id: String) {
            if let known = latest[handle], known > id { return }
            latest[handle] = id
        }
    }
}
