import Foundation
import HubEmulator
import NewsPushTesting
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A day of watching 1,000 feeds (SPEC §10) on a fast clock (`NEWSPUSH_TEST_CLOCK_RATE`, debug
/// builds: a day in a few minutes): the watcher's memory and open files stay flat from the
/// morning to midnight, while ten feeds change every ten minutes and the rest answer 304.
@Suite("The watcher over a day", .serialized)
struct WatchDayTests {
    static let rate = 480.0
    static let start = Date(timeIntervalSince1970: 1_795_330_800)  // 2026-11-22T07:00:00Z

    /// The feeds: ten change every ten minutes of the watcher's clock, the others never do; an
    /// ETag makes an unchanged answer a 304.
    final class Day: Sendable {
        let origin = Date()
        private let fetches = Mutex(0)

        var count: Int { fetches.withLock { $0 } }

        /// The watcher's time now.
        var now: Date { WatchDayTests.start.addingTimeInterval(Date().timeIntervalSince(origin) * WatchDayTests.rate) }

        func answer(_ request: RecordedRequest) -> CannedResponse {
            fetches.withLock { $0 += 1 }
            guard let feed = Int(request.uri.dropFirst("/day/".count).dropLast(".xml".count)) else {
                return CannedResponse(status: 404, text: "no such feed")
            }
            let tick = feed < 10 ? Int(now.timeIntervalSince(WatchDayTests.start) / 600) : 0
            let etag = "\"\(feed)-\(tick)\""
            if request.headers.contains(where: { $0.name.lowercased() == "if-none-match" && $0.value == etag }) {
                return CannedResponse(status: 304, headers: [("ETag", etag)])
            }
            let items = (max(0, tick - 5)...tick).reversed().map { n in
                let date = DateFormatter.rfc822.string(from: WatchDayTests.start.addingTimeInterval(Double(n) * 600))
                let words = ["harbour", "glacier", "senate", "tariff", "satellite", "marathon", "vaccine", "volcano"]
                let title = "Feed \(feed) update \(n): \(words[(n + feed) % 8]) \(words[(n * 3 + feed) % 8]) news \(n)"
                return "<item><title>\(title)</title><guid>f\(feed)-\(n)</guid><pubDate>\(date)</pubDate></item>"
            }
            let body = "<rss version=\"2.0\"><channel><title>day \(feed)</title>\(items.joined())</channel></rss>"
            return CannedResponse(headers: [("ETag", etag)], text: body)
        }
    }

    /// The process's resident memory (kB) and open descriptors: the fewest of ten readings over
    /// a second (a reading catches the transfers in flight; a leak stays in every one).
    static func footprint(_ pid: Int32) async throws -> (kilobytes: Int, files: Int) {
        var least = (kilobytes: Int.max, files: Int.max)
        for _ in 0..<10 {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            let files = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
            least = (min(least.kilobytes, kilobytes), min(least.files, files))
            try await Task.sleep(for: .milliseconds(100))
        }
        return least
    }

    @Test(.timeLimit(.minutes(8))) func aDayOfWatchingAThousandFeedsKeepsMemoryAndFilesFlat() async throws {
        try await withNewsroom(devices: HostileOperatorTests.devices) { hub, folder in
            let day = Day()
            let server = try await LocalHTTPServer.start { day.answer($0) }
            defer { server.stop() }
            let feeds = (0..<1000).map { "  - {url: \"\(server.baseURL)/day/\($0).xml\", category: World}" }
            let config = try folder.write(
                "feeds.yaml",
                """
                hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "\(hub.endpoint)"}
                policy: {budget: {per_category: 1000, per: 1h}}
                fetch: {concurrency: 64, per_host: 64}
                watch: {listen: "127.0.0.1:0"}
                feeds:
                \(feeds.joined(separator: "\n"))
                """)
            let process = try WatchProcess(
                ["watch", "--quiet", "--config", config],
                environment: [
                    "NEWSPUSH_TEST_NOW": "2026-11-22T07:00:00Z", "NEWSPUSH_TEST_CLOCK_RATE": "\(Self.rate)",
                ])
            defer { process.kill() }
            let pid = process.child.pid
            // Readings every three hours of the watcher's day, from six in the morning on.
            var readings: [(hour: Int, kilobytes: Int, files: Int)] = []
            for hour in stride(from: 6, through: 24, by: 3) {
                let at = Self.start.addingTimeInterval(Double(hour) * 3600)
                while day.now < at {
                    #expect(process.child.isRunning, "the watcher stopped: \(process.stderr.current)")
                    try await Task.sleep(for: .milliseconds(200))
                }
                let (kilobytes, files) = try await Self.footprint(pid)
                readings.append((hour, kilobytes, files))
            }
            let text = readings.map { "\($0.hour) h: \($0.kilobytes) kB, \($0.files) files" }.joined(separator: "; ")
            print("a day of watching 1,000 feeds: \(text); \(day.count) requests")
            let morning = readings[0], night = readings[readings.count - 1]
            #expect(night.kilobytes <= morning.kilobytes + morning.kilobytes / 10 + 8192, "memory flat: \(text)")
            #expect(night.files <= morning.files + 4, "no descriptor leaks: \(text)")
            // The watcher worked all day: the changing feeds were read and their stories sent.
            #expect(day.count > 20_000, "\(day.count) requests over the day")
            #expect(await hub.emulator.allDeliveries().count > 1000, "stories of the changing feeds went out")
            // A graceful end (SIGTERM: the cycle in hand finishes) before the servers stop: a
            // server cancelled with a response in flight trips NIO's debug check of its writer.
            process.terminate()
            #expect(try await process.exitStatus() == 0)
            try await Task.sleep(for: .milliseconds(500))
        }
    }
}
