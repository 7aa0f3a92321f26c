import Foundation
import NewsPushTesting
import Testing

/// A run's memory is bounded by the fetch concurrency and what a push needs, not by the number
/// of feeds: ten times the feeds barely moves the peak, in a preview with the whole
/// JSON report and in a first run that records every item in the ledger.
@Suite("Run memory")
struct RunMemoryTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: gnuTime), "needs GNU time (package time)"))
    func tenTimesTheFeedsBarelyMovesThePeak() async throws {
        let now = Date()
        let server = try await LocalHTTPServer.start { request in
            let feed = String(request.uri.dropFirst().prefix { $0 != "." })
            let items = (0..<15).map { index in
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
        func config(_ feeds: Int, _ name: String) throws -> String {
            let list = (0..<feeds).map { "  - {url: \"\(server.baseURL)/f\($0).xml\", category: World}" }
            return try folder.write(
                name,
                """
                hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "http://127.0.0.1:9/"}
                state: \(name).db
                fetch: {concurrency: 64, per_host: 64, timeout: 300s}
                feeds:
                \(list.joined(separator: "\n"))
                """)
        }
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]
        let binary = try binaryURL().path
        let few = try await measuredRun(
            binary, ["run", "--dry-run", "--format", "json", "--config", try config(200, "few.yaml")],
            environment: environment)
        let many = try config(2000, "many.yaml")
        let preview = try await measuredRun(
            binary, ["run", "--dry-run", "--format", "json", "--config", many], environment: environment)
        let firstRun = try await measuredRun(binary, ["run", "-q", "--config", many], environment: environment)
        #expect(
            [few.status, preview.status, firstRun.status] == [0, 0, 0],
            "stderr: \(firstRun.errorTail)\nstdout (the first run's report): \(firstRun.outputTail)")
        // 3,000 items, then 30,000. The debug build of 11bd84e grew by 150 MB here (every document, item
        // and report line kept to the end); this one by a few MB.
        let growth = (preview.peakKilobytes - few.peakKilobytes) / 1024
        let recording = (firstRun.peakKilobytes - few.peakKilobytes) / 1024
        #expect(
            growth < 16, "200 feeds: \(few.peakKilobytes / 1024) MB, 2,000 feeds: \(preview.peakKilobytes / 1024) MB")
        #expect(
            recording < 24, "a first run of 2,000 feeds recording 30,000 stories: \(firstRun.peakKilobytes / 1024) MB")
    }
}
