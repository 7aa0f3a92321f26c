import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// Forgetting a reader erases them and nothing of anyone else's (SPEC §9, "Forgetting
/// erases"), through the built binaries, the emulator, both ledger engines.
@Suite("Forgetting one reader erases no one else's alert")
struct ApiForgetTests {
    static func publish(_ fixture: ApiFixture, _ arguments: [String]) async throws -> CommandResult {
        try await newspush(
            ["publish", "--config", fixture.config, "--yes", "--category", "World"] + arguments,
            environment: ApiFixture.environment)
    }

    /// A time a day ahead, as `--at` takes it.
    static var tomorrow: String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date().addingTimeInterval(86400))
    }

    static func outbox(_ fixture: ApiFixture) async throws -> [[String: Any]] {
        let export = try await newspush(
            ["state", "export", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(export.status == 0, "\(export.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: Any]
        return try #require(document?["outbox"] as? [[String: Any]], "\(export.stdout)")
    }

    // Stories that first went to alice by name went to everyone else as `World &&
    // !username:alice`: a sent one, a scheduled one and one still pending (the hub down). When
    // alice is forgotten, each broadcast stays, as it reached everyone else (`World`), and only
    // what reached her alone goes (before, every row naming her went: the broadcasts vanished
    // from history, the scheduled one from the editors' sight, the pending one was never sent).
    @Test(arguments: LedgerBackend.allCases)
    func forgettingAReaderKeepsTheBroadcastsThatExcludedHer(_ backend: LedgerBackend) async throws {
        // A feed for the run that sends what is pending (empty: nothing of its own to push).
        let wire = try TemporaryFolder()
        defer { wire.cleanup() }
        let feed = try wire.write("wire.xml", rssFeed(title: "Wire", items: []))
        let fixture = try await ApiFixture.start(backend, feeds: ["{url: \"\(feed)\", category: World}"])
        defer { fixture.stop() }
        for (id, user, handle) in [("a-1", "alice", "aa01"), ("b-1", "bob", "bb02")] {
            let answer = await fixture.send(
                "PUT /api/installations/\(id)",
                json: #"{"platform":"apns","pushChannel":"\#(handle)","topics":["World"]}"#,
                headers: [ApiFixture.basic(user)])
            #expect(answer.status == 200, "\(answer.body)")
        }
        let stories = [
            ("Dam bursts upstream", "https://news.example.org/dam", [String]()),
            ("Ferry strike called off", "https://news.example.org/ferry", ["--at", Self.tomorrow]),
            ("Glacier retreat measured", "https://news.example.org/glacier", []),
        ]
        for (index, (title, url, extra)) in stories.enumerated() {
            let personal = try await Self.publish(fixture, ["--user", "alice", "--title", title, "--url", url])
            #expect(personal.status == 0, "\(personal.stderr)")
            // The last broadcast meets a hub that is down: it stays pending.
            if index == 2 { await fixture.hub.emulator.inject(Fault(status: 503, count: 100)) }
            let everyone = try await Self.publish(fixture, ["--title", title, "--url", url] + extra)
            #expect([0, 1].contains(everyone.status), "\(everyone.stdout) \(everyone.stderr)")
        }
        await fixture.hub.emulator.clearFaults()
        let before = try await Self.outbox(fixture).filter {
            ($0["tags"] as? String)?.contains("!username:alice") == true
        }
        #expect(before.count == 3, "three broadcasts excluded alice: \(before.map { $0["tags"] ?? "" })")
        #expect(await fixture.send("DELETE /api/users/me", headers: [ApiFixture.basic("alice")]).status == 204)
        let after = try await Self.outbox(fixture)
        #expect(!after.contains { ($0["tags"] as? String)?.contains("alice") == true }, "nothing names alice")
        let broadcasts = after.filter { before.map { $0["id"] as? String }.contains($0["id"] as? String) }
        #expect(broadcasts.count == 3, "every broadcast stays: \(after)")
        #expect(broadcasts.allSatisfy { $0["tags"] as? String == "World" }, "\(broadcasts.map { $0["tags"] ?? "" })")
        #expect(
            Set(broadcasts.compactMap { $0["status"] as? String }) == ["sent", "scheduled", "pending"],
            "\(broadcasts.map { $0["status"] ?? "" })")
        // The pending one still goes out, to everyone but the forgotten reader.
        let run = try await newspush(["run", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(await fixture.deliveries(to: "b-1").contains { $0.payload.contains("Glacier retreat") })
    }

    // Forgetting reader `al` rewrites no mention of reader `alice` in the audit trail (before,
    // the tag was replaced as a substring: `username:al` turned `username:alice` into
    // `[a forgotten reader]ice`).
    @Test func forgettingAReaderLeavesALongerNameAlone() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let added = try await newspush(
            ["api", "add-user", "al", "--role", "reader", "--config", fixture.config],
            environment: ApiFixture.environment,
            input: "al-password\n")
        #expect(added.status == 0)
        for user in ["al", "alice"] {
            let personal = try await Self.publish(fixture, ["--user", user, "--title", "A word for \(user)"])
            #expect(personal.status == 0, "\(personal.stderr)")
        }
        let forgot = try await newspush(
            ["devices", "forget-user", "al", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(forgot.status == 0, "\(forgot.stderr)")
        let history = try await newspush(
            ["review", "history", "--format", "json", "--config", fixture.config], environment: ApiFixture.environment)
        #expect(history.stdout.contains("username:alice"), "alice's mention is intact: \(history.stdout)")
        #expect(!history.stdout.contains("]ice"), "\(history.stdout)")
        #expect(!history.stdout.contains("username:al\""), "al's own mention is gone")
    }
}
