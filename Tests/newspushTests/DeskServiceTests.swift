import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// The desk as a service (issue 38 §4), against a running `newspush desk` in raw HTTP.
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
        let href = try #require(
            page.body.range(of: #"href="/publish\?replace=[^"]+""#, options: .regularExpression).map {
                String(page.body[$0].dropFirst(6).dropLast())
            }, "no correct link")
        #expect(!href.contains("&amp;") && href.contains("%26"), "\(href)")
        let form = await process.send("GET \(href) HTTP/1.1", headers: ["Cookie: \(alice.cookie)"])
        let escapedKey = key.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
        #expect(form.body.contains("name=\"replace\" value=\"\(escapedKey)\""), "\(href)")
    }
}
