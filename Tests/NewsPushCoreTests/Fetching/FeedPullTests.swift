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

    /// The old fetch loop ran the run's per-feed work inside libcurl's callback: while a stage
    /// was slow no other transfer moved (3 s against a 2 s timeout timed out 3 of 8 feeds).
    /// Here the first feed's stage waits until the server has been asked for every feed: the
    /// fetches go on without it (at once), or the stage gives up after 30 s and the test fails.
    @Test func aSlowStageNeverHoldsUpAnotherFeed() async throws {
        let body = rssFeed(title: "T", items: [("a", "A story", 1)])
        let asked = Mutex(0)
        let server = try await LocalHTTPServer.start { _ in
            asked.withLock { $0 += 1 }
            return CannedResponse(text: body)
        }
        defer { server.stop() }
        let feeds = feeds(server, count: 8)
        let settings = settings(timeout: 10, concurrency: 4)
        let (reads, askedDuringStage) = await offThePool {
            var reads: [Int: FeedRead] = [:]
            var askedDuringStage = 0
            FeedReading.readEach(feeds, records: [:], settings: settings, baseFolder: "/", now: Date()) { batch in
                if reads.isEmpty {
                    // A slow stage (a far ledger, a big parse), over when every feed was asked for.
                    let deadline = Date().addingTimeInterval(30)
                    while asked.withLock({ $0 }) < feeds.count && Date() < deadline { usleep(10_000) }
                    askedDuringStage = asked.withLock { $0 }
                }
                for (index, read) in batch { reads[index] = read }
            }
            return (reads, askedDuringStage)
        }
        #expect(askedDuringStage == 8, "feeds asked for while the first one's stage ran: \(askedDuringStage)")
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
