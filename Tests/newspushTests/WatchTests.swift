import Foundation
import HubEmulator
import NewsPushTesting
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `newspush watch` (SPEC §10) through the built binary, against feed servers and the emulator:
/// each feed on its own schedule, the server's limits honoured, a new story pushed once beside a
/// cron run, SIGTERM after the cycle in hand.
@Suite("The watcher")
struct WatchTests {
    /// Feeds whose documents a test changes while the watcher runs, each request's time kept.
    final class Feeds: Sendable {
        private let state = Mutex<(stories: [String: [String]], requests: [String: [ContinuousClock.Instant]])>(
            ([:], [:]))

        func add(_ title: String, to path: String) { state.withLock { $0.stories[path, default: []].append(title) } }

        func requests(_ path: String) -> [ContinuousClock.Instant] { state.withLock { $0.requests[path] ?? [] } }

        /// The answer to a request for `path`: an RSS document of its stories (dated now).
        func answer(_ path: String) -> CannedResponse {
            let titles = state.withLock { state in
                state.requests[path, default: []].append(.now)
                return state.stories[path] ?? []
            }
            let date = DateFormatter.rfc822.string(from: Date())
            let items = titles.map {
                "<item><title>\($0)</title><link>https://news.example.org/\($0.hashValue)</link>"
                    + "<guid>\($0)</guid><pubDate>\(date)</pubDate></item>"
            }
            let body = "<rss version=\"2.0\"><channel><title>\(path)</title>\(items.joined())</channel></rss>"
            switch path {
            case "/cached.xml": return CannedResponse(headers: [("Cache-Control", "max-age=4")], text: body)
            case "/busy.xml" where requests(path).count == 1:
                return CannedResponse(status: 503, headers: [("Retry-After", "4")], text: "busy")
            default: return CannedResponse(text: body)
            }
        }
    }

    /// The gaps between consecutive requests, in seconds.
    static func gaps(_ times: [ContinuousClock.Instant]) -> [Double] {
        zip(times, times.dropFirst()).map { pair in
            let gap = pair.1 - pair.0
            return Double(gap.components.seconds) + Double(gap.components.attoseconds) / 1e18
        }
    }

    /// Waits (a minute at most) until `condition` holds.
    static func until(_ condition: () async -> Bool) async throws -> Bool {
        for _ in 0..<600 {
            if await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return await condition()
    }

    @Test func aWatcherPollsEachFeedOnItsScheduleAndPushesANewStoryOnce() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let feeds = Feeds()
            let server = try await LocalHTTPServer.start { feeds.answer($0.uri) }
            defer { server.stop() }
            let config = try HostileOperatorTests().config(
                folder, hub: hub.endpoint,
                extra: "watch: {interval: 1s, min_interval: 1s, max_interval: 2s, listen: \"127.0.0.1:0\"}",
                feeds: ["world.xml", "cached.xml", "busy.xml"].map {
                    "{url: \"\(server.baseURL)/\($0)\", category: World}"
                })
            let process = try WatchProcess(["watch", "--config", config])
            defer { process.kill() }
            #expect(try await Self.until { feeds.requests("/world.xml").count >= 3 }, "the watcher polls")
            feeds.add("Dam bursts upstream of the city", to: "/world.xml")
            // A cron run beside the watcher, on the same ledger, at the same moment (its own fetches,
            // which know nothing of the watcher's schedule, are left out of the gaps below; its exit
            // is 2 when it meets busy.xml's 503, 75 when the watcher holds the lock).
            let cronStarted = ContinuousClock.now
            let cron = try await newspush(["run", "--config", config], environment: hubEnvironment)
            let cronEnded = ContinuousClock.now
            #expect([0, 2, 75].contains(cron.status), "\(cron.stderr)")
            let watcher = { (path: String) in
                feeds.requests(path).filter { $0 < cronStarted || $0 > cronEnded }
            }
            #expect(
                try await Self.until {
                    await hub.emulator.allDeliveries().contains { $0.payload.contains("Dam bursts") }
                        && feeds.requests("/world.xml").count >= 8
                        // Two watcher fetches of the limited feeds outside the cron run's window (a
                        // loaded machine can make that window long).
                        && watcher("/cached.xml").count >= 2 && watcher("/busy.xml").count >= 2
                })
            let pushed = await hub.emulator.allDeliveries().filter { $0.payload.contains("Dam bursts") }
            #expect(pushed.count == 1, "one push to the one World phone: \(pushed.map(\.device))")
            // The server's limits: max-age=4 and a 503 with Retry-After: 4 are never overtaken.
            let cached = Self.gaps(watcher("/cached.xml")), busy = Self.gaps(watcher("/busy.xml"))
            let world = Self.gaps(watcher("/world.xml"))
            #expect(cached.count >= 1 && cached.allSatisfy { $0 >= 3.5 }, "max-age=4: \(cached)")
            #expect(busy.count >= 1 && busy[0] >= 3.5, "Retry-After: 4: \(busy)")
            #expect(world.allSatisfy { $0 >= 0.85 }, "min_interval 1s: \(world)")
            process.terminate()
            #expect(try await process.exitStatus() == 0)
            #expect(await process.stderr.until("stopping after the cycle in hand"))
        }
    }
}

/// A `newspush` process that runs until told to stop, its standard error read as it comes.
final class WatchProcess: @unchecked Sendable {
    let child: RunningChild
    let stderr: ChildOutput
    let stdout: ChildOutput

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        child = try ChildProcess.start(
            try binaryURL().path, arguments,
            environment: ["PATH": "/usr/bin:/bin", "NO_COLOR": "1"].merging(hubEnvironment) { $1 }
                .merging(environment) { $1 })
        stdout = try child.stdout.orFail("standard output")
        stderr = try child.stderr.orFail("standard error")
    }

    func terminate() { child.terminate() }

    func kill() { child.signal(SIGKILL) }

    /// The exit status once the process has ended.
    func exitStatus() async throws -> Int32 { await child.exitStatus() }
}

extension DateFormatter {
    /// RFC 822 dates, as RSS writes them.
    static let rfc822: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }()
}
