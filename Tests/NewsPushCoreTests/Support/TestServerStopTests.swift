import Foundation
import NewsPushTesting
import Testing

@testable import NewsPushCore

/// The test servers stop without taking the test process down with them: stopping one used to
/// cancel its task, and NIO traps on a connection accepted but not yet served ("Deinited
/// NIOAsyncWriter without calling finish()"), which killed a whole test run once in a few.
@Suite("The test servers stop cleanly while connections arrive")
struct TestServerStopTests {
    static let rounds = 20

    func fetch(_ urls: [String]) async -> [FetchedFeed] {
        var settings = FetchSettings()
        settings.timeout = 10
        settings.concurrency = 24
        settings.perHost = 24
        let fetcher = FeedFetcher(settings: settings, baseFolder: "/")
        return await offThePool { fetcher.fetch(urls, now: Date()) }
    }

    /// Fetches 24 URLs of `baseURL` and stops the server while they connect.
    func stopWhileConnecting(_ baseURL: String, stop: @escaping @Sendable () -> Void) async throws {
        async let burst = fetch((0..<24).map { "\(baseURL)/\($0).xml" })
        try await Task.sleep(for: .microseconds(Int.random(in: 0...3000)))
        stop()
        _ = await burst
    }

    /// The servers of `baseURLs` no longer serve `token` within 20 seconds (a loaded machine runs
    /// the shutdown late, never not at all; another test's server may have its port by then).
    func expectStopped(_ baseURLs: [String], token: String) async throws {
        var answering = baseURLs
        let deadline = ContinuousClock.now + .seconds(20)
        while !answering.isEmpty && ContinuousClock.now < deadline {
            let fetched = await fetch(answering.map { "\($0)/after.xml" })
            answering = zip(answering, fetched).filter { $0.1.body == Data(token.utf8) }.map(\.0)
            if !answering.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(answering.isEmpty, "still answering after stop(): \(answering)")
    }

    @Test("a feed server stopped in a burst of connections")
    func feedServer() async throws {
        let token = UUID().uuidString
        // Kept to the end, so what stops them is `stop()`, not their release.
        var stopped: [LocalHTTPServer] = []
        for _ in 0..<Self.rounds {
            let server = try await LocalHTTPServer.serving(["/after.xml": CannedResponse(text: token)])
            try await stopWhileConnecting(server.baseURL) { server.stop() }
            stopped.append(server)
        }
        try await expectStopped(stopped.map(\.baseURL), token: token)
    }

    /// The emulator stops the same way (`ServedOnThread`); here the process living on is the test.
    @Test("the hub emulator stopped in a burst of connections")
    func hub() async throws {
        for _ in 0..<Self.rounds {
            let hub = try await LocalHub.start(devicesYAML: "devices: []\n")
            try await stopWhileConnecting(hub.endpoint + "breaking-news") { hub.stop() }
        }
    }
}
