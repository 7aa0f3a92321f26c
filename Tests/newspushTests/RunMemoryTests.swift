import Foundation
import NewsPushTesting
import Testing

/// A run's memory: what it keeps of each feed is bounded by what a push needs, not by the
/// documents and their parse (issue 29, in part).
@Suite("Run memory")
struct RunMemoryTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: gnuTime), "needs GNU time (package time)"))
    func twoThousandFeedsStayUnderAMemoryCeiling() async throws {
        let now = Date()
        let server = try await LocalHTTPServer.start { request in
            let feed = String(request.uri.dropFirst().prefix { $0 != "." })
            let items = (0..<10).map { index in
                (
                    guid: "\(feed)-\(index)", title: "Story \(index) of \(feed) about the council budget and the roads",
                    published: now.addingTimeInterval(Double(-300 * index))
                )
            }
            return CannedResponse(text: rssFeed(title: "Desk \(feed)", dated: items))
        }
        defer { server.stop() }
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let list = (0..<2000).map { "  - {url: \"\(server.baseURL)/f\($0).xml\", category: World}" }
        let config = try folder.write(
            "feeds.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "http://127.0.0.1:9/"}
            fetch: {concurrency: 64, per_host: 64, timeout: 60s}
            feeds:
            \(list.joined(separator: "\n"))
            """)
        let run = try await measuredRun(
            try binaryURL().path, ["run", "--dry-run", "-q", "--config", config],
            environment: ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"])
        #expect(run.status == 0)
        // 20,000 items. The debug build of 11bd84e peaked at 132 MB (this build: 87) here (each document's
        // bytes and parsed items kept to the end, candidates copied whole between stages).
        #expect(run.peakKilobytes < 110 * 1024, "peak RSS \(run.peakKilobytes / 1024) MB")
    }
}
