import Foundation
import NewsPushModel
import Synchronization
import Testing

@testable import NewsPushCore

/// The run pulls its feeds: the fetch loop runs on a thread of its own, so the
/// work done on each feed never holds up a transfer, and an error in that work stops the
/// fetches still to come.
@Suite("The run pulls its feeds")
struct FeedPullTests {
    func feeds(_ server: LocalHTTPServer, count: Int) -> [FeedSettings] {
        (0..<count).map {
            FeedSettings(
                url: "\(server.baseURL)/feed-\($0).xml", name: nil, category: .world, firstRun: nil, language: nil,
                line: $0 + 1)
        }
    }

    func settings(timeout: Double, concurrency: Int) -> FetchSettings {
        var settings = FetchSettings()
        settings.timeout = timeout
        settings.concurrency = concurrency
        settings.perHost = concurrency
        return settings
    }

    struct Stop: Error {}

    /// The old fetch loop ran the run's per-feed work inside libcurl's callback: a stage longer
    /// than `fetch.timeout` left every other transfer unattended past it (3 s against 2 s timed
    /// out 3 of 8 feeds). 12 s against 10 s here: room for a busy machine's slow server.
    @Test func aSlowStageNeverTimesOutAnotherFeed() async throws {
        let body = rssFeed(title: "T", items: [("a", "A story", 1)])
        let server = try await LocalHTTPServer.start { _ in CannedResponse(text: body) }
        defer { server.stop() }
        let feeds = feeds(server, count: 8)
        let settings = settings(timeout: 10, concurrency: 4)
        let reads = await offThePool {
            var reads: [Int: FeedRead] = [:]
            FeedReading.readEach(feeds, records: [:], settings: settings, baseFolder: "/", now: Date()) { batch in
                if reads.isEmpty { Thread.sleep(forTimeInterval: 12) }  // a slow stage: a far ledger, a big parse
                for (index, read) in batch { reads[index] = read }
            }
            return reads
        }
        #expect(reads.count == 8)
        let failed = reads.values.filter { $0.status != .ok }.map {
            "\($0.fetched.url): \(String(describing: $0.failure))"
        }
        #expect(failed.isEmpty, "\(failed)")
    }

    @Test func anErrorInTheRunsWorkStopsTheFetchesStillToCome() async throws {
        let body = rssFeed(title: "T", items: [("a", "A story", 1)])
        let server = try await LocalHTTPServer.start { _ in CannedResponse(text: body) }
        defer { server.stop() }
        let feeds = feeds(server, count: 60)
        let settings = settings(timeout: 20, concurrency: 2)
        let handed = await offThePool {
            let handed = Mutex(0)
            #expect(throws: Stop.self) {
                try FeedReading.readEach(feeds, records: [:], settings: settings, baseFolder: "/", now: Date()) {
                    (batch) throws(Stop) in
                    handed.withLock { $0 += batch.count }
                    throw Stop()
                }
            }
            return handed.withLock { $0 }
        }
        let requested = await server.requests().count
        // The first batch, then at most the buffer (2 × concurrency) and the transfers in flight.
        #expect(handed >= 1 && requested <= handed + 2 * 2 + 2, "\(requested) of 60 feeds fetched after the error")
    }
}
