import Foundation
import HubEmulator
import NewsPushTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The desk as a service, against a running `newspush desk` in raw HTTP.
@Suite("The desk as a service")
struct DeskServiceTests {
    let desk = HostileDeskTests()

    // A failed push's error is shown as text inside the page's markup, never as escaped markup;
    // the "correct" link names the story whatever its key holds.
    @Test func theSentPageShowsErrorsAsMarkupAndEncodesEveryURLValue() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let hub = try await LocalHub.start(devicesYAML: HostileOperatorTests.devices)
        defer { hub.stop() }
        let (config, process) = try await desk.desk(folder, hub: hub.endpoint)
        defer { process.stop() }
        let url = "https://news.example.org/a?x=1&y=a+b%2Fc#frag"
        let sent = try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", "Odd key story", "--url", url, "--yes"],
            environment: hubEnvironment)
        #expect(sent.status == 0, "\(sent.stderr)")
        // And one that fails: the hub refuses it (400), with an error to show.
        await hub.emulator.inject(Fault(status: 400, count: 1))
        let refused = try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", "Refused story", "--yes"],
            environment: hubEnvironment)
        #expect(refused.status == 2, "\(refused.stderr)")
        let export = try desk.first.json(try await newspush(["state", "export", "--config", config]))
        let key = try #require(
            (export["outbox"] as? [[String: Any]])?.compactMap { $0["story_key"] as? String }.first {
                $0.contains("&")
            },
            "\(export)")
        let alice = try await desk.signIn(process, "alice")
        let page = await process.send("GET /sent HTTP/1.1", headers: ["Cookie: \(alice.cookie)"])
        #expect(page.status == 200)
        #expect(page.body.contains("<div class=\"also\">"), "the error's box is markup")
        #expect(!page.body.contains("&lt;div class=&quot;also&quot;&gt;"), "never escaped markup")
        // Each push's latency (SPEC §10): from planned to the hub's accept, for the one accepted.
        #expect(page.body.contains("Latency</th>"))
        #expect(page.body.range(of: #"<td>\d+\.\d s</td>"#, options: .regularExpression) != nil, "the sent one")
        let accepted = (export["outbox"] as? [[String: Any]])?.compactMap { $0["accepted_at"] as? String }
        #expect(accepted?.count == 1, "only the accepted push has an acceptance time: \(export)")
        let href = try #require(
            page.body.range(of: #"href="/publish\?replace=[^"]+""#, options: .regularExpression).map {
                String(page.body[$0].dropFirst(6).dropLast())
            }, "no correct link")
        #expect(!href.contains("&amp;") && href.contains("%26"), "\(href)")
        let form = await process.send("GET \(href) HTTP/1.1", headers: ["Cookie: \(alice.cookie)"])
        let escapedKey = key.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
        #expect(form.body.contains("name=\"replace\" value=\"\(escapedKey)\""), "\(href)")
    }

    func signIn(_ process: DeskProcess, _ user: String, _ password: String, from client: String?) async -> RawAnswer {
        var headers = ["Content-Type: application/x-www-form-urlencoded"]
        if let client { headers.append("X-Forwarded-For: \(client)") }
        return await process.send("POST /login HTTP/1.1", body: "user=\(user)&password=\(password)", headers: headers)
    }

    // Behind a trusted proxy the sign-in limits count the client's address, not the proxy's; from
    // anyone else X-Forwarded-For and X-Forwarded-Proto are not believed.
    @Test func signInLimitsCountTheClientBehindATrustedProxy() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let (_, process) = try await desk.desk(folder, proxies: "[127.0.0.1]")
        defer { process.stop() }
        for attempt in 0..<20 {
            let failed = await signIn(process, "guess\(attempt)", "wrong-password", from: "203.0.113.7")
            #expect(failed.status == 401, "\(attempt): \(failed.status)")
        }
        let locked = await signIn(process, "alice", "alice-password", from: "203.0.113.7")
        #expect(locked.status == 429, "\(locked.status)")
        // Another client behind the same proxy is not locked out; a forged hop before it is ignored.
        let other = await signIn(process, "alice", "alice-password", from: "203.0.113.7, 198.51.100.9")
        #expect(other.status == 303, "\(other.status)")
        let secure = await process.send(
            "POST /login HTTP/1.1", body: "user=alice&password=alice-password",
            headers: ["Content-Type: application/x-www-form-urlencoded", "X-Forwarded-Proto: https"])
        #expect(secure.headers["set-cookie"]?.contains("Secure") == true)
        // Without trusted proxies the headers are anyone's words: not believed.
        let plain = try TemporaryFolder()
        defer { plain.cleanup() }
        let (_, direct) = try await desk.desk(plain)
        defer { direct.stop() }
        let forged = await direct.send(
            "POST /login HTTP/1.1", body: "user=alice&password=alice-password",
            headers: ["Content-Type: application/x-www-form-urlencoded", "X-Forwarded-Proto: https"])
        #expect(forged.status == 303 && forged.headers["set-cookie"]?.contains("Secure") == false)
        for attempt in 0..<20 {
            _ = await signIn(direct, "guess\(attempt)", "wrong-password", from: "192.0.2.\(attempt)")
        }
        let counted = await signIn(direct, "alice", "alice-password", from: "192.0.2.99")
        #expect(counted.status == 429, "a forged X-Forwarded-For does not escape the limit: \(counted.status)")
    }
}

extension DeskServiceTests {
    // SIGTERM while an approval is sending: the send finishes and is recorded, then the desk exits.
    @Test func aRestartMidSendLetsTheApprovalFinish() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let hub = try await LocalHub.start(devicesYAML: HostileOperatorTests.devices)
        defer { hub.stop() }
        let server = try await FeedDesk.serve(["/w.xml": FeedDesk([("g1", "Council votes on the bridge", 2)])])
        defer { server.stop() }
        let config = try desk.first.config(
            folder, hub: hub.endpoint,
            extra: "desk: {users: desk-users.yaml}\nreview: {rules: [{category: World, mode: review}]}",
            feeds: ["{url: \"\(server.baseURL)/w.xml\", category: World}"])
        #expect(try await newspush(["run", "--config", config], environment: hubEnvironment).status == 0)
        let added = try await newspush(
            ["desk", "add-user", "alice", "--role", "editor", "--config", config], input: "alice-password\n")
        #expect(added.status == 0)
        let process = try await DeskProcess.start(["desk", "--listen", "127.0.0.1:0", "--config", config])
        defer { process.stop() }
        let alice = try await desk.signIn(process, "alice")
        let queue = try desk.first.json(try await newspush(["review", "list", "--config", config, "--format", "json"]))
        let id = try #require((queue["held"] as? [[String: Any]])?.first?["id"] as? String)
        await hub.emulator.inject(Fault(delaySeconds: 600))  // held until the hub's clock moves on
        async let approval = process.send(
            "POST /api/review/\(id)/approve HTTP/1.1",
            headers: ["Cookie: \(alice.cookie)", "X-CSRF-Token: \(alice.csrf)"])
        await hub.emulator.untilSomethingWaits()
        process.child.terminate()
        // The hub holds the push until the desk has taken the signal.
        #expect(await process.errors.until("newspush desk: stopping"), "the desk never said it was stopping")
        await hub.emulator.advanceClock(by: 600)
        let answer = await approval
        #expect(answer.status == 200, "\(answer.status) \(answer.body)")
        _ = await process.child.exitStatus()
        #expect(!process.child.endedBySignal(), "a graceful exit, not killed by the signal")
        let outbox = try await desk.first.outbox(config)
        #expect(outbox.compactMap { $0["status"] as? String } == ["sent"], "\(outbox)")
        #expect(await hub.emulator.allDeliveries().count == 1)
    }
}

/// One path to the ledger: what cannot be read is said, never skipped.
@Suite("Nothing the ledger holds vanishes")
struct LoudLedgerTests {
    let first = HostileOperatorTests()

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: sqlite3), "needs sqlite3 to damage a row"))
    func anOutboxRowThatCannotBeReadStopsTheRunAndStateCheckListsIt() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let config = try first.config(
            folder, hub: "http://127.0.0.1:1/", feeds: ["{url: \"http://127.0.0.1:1/w.xml\"}"])
        let kept = try await newspush(
            ["publish", "--config", config, "--category", "World", "--title", "Waits in the outbox", "--yes"],
            environment: hubEnvironment)
        #expect(kept.status == 1, "the hub is out of reach: the push waits pending")
        let damage = "UPDATE outbox SET properties = 'not json'"
        try #require(SmallDisk.run(sqlite3, [folder.file("newspush-state.db"), damage]) == 0)
        let run = try await newspush(["run", "--config", config], environment: hubEnvironment)
        #expect(run.status == 1 && run.stderr.contains("cannot be read"), "\(run.stderr)")
        let check = try await newspush(["state", "check", "--config", config])
        #expect(check.status == 1 && check.stdout.contains("cannot be read"), "\(check.stdout) \(check.stderr)")
    }
}
