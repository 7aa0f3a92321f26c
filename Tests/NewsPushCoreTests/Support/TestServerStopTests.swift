import Foundation
import NewsPushTesting
import Testing

@testable import NewsPushCore

/// The test servers stop without taking the test process down with them: stopping one used to
/// cancel its task, and NIO traps on a connection accepted but not yet served ("Deinited
/// NIOAsyncWriter without calling finish()"), which killed a whole test run once in a few.
@Suite("The test servers stop cleanly while connections arrive")
struct TestServerStopTests {
    static let rounds = 30

    func fetch(_ urls: [String]) async -> [FetchedFeed] {
        var settings = FetchSettings()
        settings.timeout = 10
        settings.concurrency = 24
        settings.perHost = 24
        let fetcher = FeedFetcher(settings: settings, baseFolder: "/")
        return await offThePool { fetcher.fetch(urls, now: Date()) }
    }

    /// Fetches 24 URLs of `baseURL` and stops the server while they connect; then the port
    /// refuses a new fetch within two seconds.
    func stopWhileConnecting(_ baseURL: String, stop: @escaping @Sendable () -> Void) async throws {
        async let burst = fetch((0..<24).map { "\(baseURL)/\($0).xml" })
        try await Task.sleep(for: .microseconds(Int.random(in: 0...3000)))
        stop()
        _ = await burst
        let deadline = ContinuousClock.now + .seconds(2)
        var refused = false
        while !refused && ContinuousClock.now < deadline {
            refused = await fetch(["\(baseURL)/after.xml"]).first?.httpStatus == nil
            if !refused { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(refused, "\(baseURL) still answers after stop()")
    }

    @Test("a feed server stopped in a burst of connections")
    func feedServer() async throws {
        for _ in 0..<Self.rounds {
            let server = try await LocalHTTPServer.serving(["/0.xml": CannedResponse(text: "<rss/>")])
            try await stopWhileConnecting(server.baseURL) { server.stop() }
        }
    }

    @Test("the hub emulator stopped in a burst of connections")
    func hub() async throws {
        for _ in 0..<Self.rounds {
            let hub = try await LocalHub.start(devicesYAML: "devices: []\n")
            try await stopWhileConnecting(hub.endpoint + "breaking-news") { hub.stop() }
        }
    }
}
