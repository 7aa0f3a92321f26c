import Foundation
import NewsPushModel
import Testing

@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

@Suite("Fetching with libcurl against local servers")
struct FeedFetcherTests {
    // 20 s (a 10 s stall limit): the suite runs many tests at once on two cores, and a local
    // server starved for two seconds is not what these tests are about (the slow-server test
    // sets its own).
    func fetcher(timeout: Double = 20, maxBytes: Int = 1 << 20, concurrency: Int = 16, perHost: Int = 2) -> FeedFetcher
    {
        var settings = FetchSettings()
        settings.timeout = timeout
        settings.maxBytes = maxBytes
        settings.concurrency = concurrency
        settings.perHost = perHost
        settings.contact = "https://newsroom.example/bots"
        return FeedFetcher(settings: settings, baseFolder: "/")
    }

    func fetch(_ fetcher: FeedFetcher, _ urls: [String], validators: [String: ConditionalGetValidators] = [:]) async
        -> [FetchedFeed]
    {
        await timedFetch(fetcher, urls, validators: validators).results
    }

    /// The fetch, with the time it started and the seconds it took on its own thread (a resumed
    /// test task can wait long for the concurrency pool on a busy machine; the fetch cannot).
    func timedFetch(
        _ fetcher: FeedFetcher, _ urls: [String], validators: [String: ConditionalGetValidators] = [:]
    ) async -> (results: [FetchedFeed], started: Date, seconds: Double) {
        await offThePool {
            let started = Date()
            let results = fetcher.fetch(urls, validators: validators, now: started)
            return (results, started, Date().timeIntervalSince(started))
        }
    }

    let body = rssFeed(title: "T", items: [("a", "A story", 1)])

    @Test func conditionalGetGives304AndSendsTheUserAgent() async throws {
        let body = self.body
        let server = try await LocalHTTPServer.start { request in
            if request.header("If-None-Match") == "\"v1\""
                || request.header("If-Modified-Since") == "Sun, 22 Nov 2026 06:00:00 GMT"
            {
                return CannedResponse(status: 304)
            }
            return CannedResponse(
                headers: [("ETag", "\"v1\""), ("Last-Modified", "Sun, 22 Nov 2026 06:00:00 GMT")], text: body)
        }
        defer { server.stop() }
        let url = "\(server.baseURL)/feed.xml"
        let first = await fetch(fetcher(), [url])[0]
        #expect(first.status == .ok)
        #expect(
            first.validators == ConditionalGetValidators(etag: "\"v1\"", lastModified: "Sun, 22 Nov 2026 06:00:00 GMT"))
        let second = await fetch(fetcher(), [url], validators: [url: first.validators!])[0]
        #expect(second.status == .notModified)
        #expect(second.httpStatus == 304)
        #expect(second.error == nil)
        let requests = await server.requests()
        try #require(requests.count == 2)
        #expect(
            requests[0].header("User-Agent")
                == "newspush/\(NewsPushVersion.current) (breaking-news push pipeline; +https://newsroom.example/bots)")
        #expect(requests[0].header("Accept-Encoding")?.contains("gzip") == true)
        #expect(requests[1].header("If-None-Match") == "\"v1\"")
    }

    @Test func redirectsAreFollowedAndPermanentMovesReported() async throws {
        let body = self.body
        let server = try await LocalHTTPServer.start { request in
            switch request.uri {
            case "/old.xml": return CannedResponse(status: 301, headers: [("Location", "/new.xml")])
            case "/temp.xml": return CannedResponse(status: 302, headers: [("Location", "/new.xml")])
            case "/new.xml": return CannedResponse(text: body)
            case "/file": return CannedResponse(status: 302, headers: [("Location", "file:///etc/passwd")])
            default:
                // /loop/N redirects to /loop/N+1 forever
                let n = Int(request.uri.split(separator: "/").last ?? "0") ?? 0
                return CannedResponse(status: 302, headers: [("Location", "/loop/\(n + 1)")])
            }
        }
        defer { server.stop() }
        let results = await fetch(
            fetcher(),
            [
                "\(server.baseURL)/old.xml", "\(server.baseURL)/temp.xml", "\(server.baseURL)/file",
                "\(server.baseURL)/loop/0",
            ])
        #expect(results[0].status == .ok)
        #expect(results[0].movedTo == "\(server.baseURL)/new.xml")
        #expect(results[0].finalURL == "\(server.baseURL)/new.xml")
        #expect(results[1].status == .ok && results[1].movedTo == nil)
        #expect(results[2].status == .error)
        #expect(results[2].error?.contains("only http and https") == true)
        #expect(results[3].status == .error)
        #expect(results[3].error?.contains("more than 5 redirects") == true)
    }

    @Test func statusErrorsAreNamed() async throws {
        let server = try await LocalHTTPServer.start { request in
            switch request.uri {
            case "/500": return CannedResponse(status: 500)
            case "/410": return CannedResponse(status: 410)
            case "/429": return CannedResponse(status: 429, headers: [("Retry-After", "600")])
            default: return CannedResponse(status: 404)
            }
        }
        defer { server.stop() }
        let (results, started, _) = await timedFetch(
            fetcher(), ["500", "404", "410", "429"].map { "\(server.baseURL)/\($0)" })
        #expect(results.map(\.httpStatus) == [500, 404, 410, 429])
        #expect(results.allSatisfy { $0.status == .error })
        #expect(results[0].error == "\(server.baseURL)/500: HTTP 500 Internal Server Error")
        #expect(results[1].error == "\(server.baseURL)/404: HTTP 404 Not Found")
        #expect(results[2].error?.contains("Gone (the publisher removed this feed") == true)
        let retry = try #require(results[3].retryAfter)
        #expect(abs(retry.timeIntervalSince(started) - 600) < 30)
    }

    @Test func slowBodyTimesOut() async throws {
        let server = try RawTCPServer { connection in
            connection.write(
                "HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nContent-Length: 100000\r\n\r\n<rss>")
            // Two bytes a second for a minute, unless the client gives up first.
            for _ in 0..<120 {
                Thread.sleep(forTimeInterval: 0.5)
                if !connection.write("x") { break }
            }
            connection.reset()
        }
        defer { server.stop() }
        let (results, _, seconds) = await timedFetch(fetcher(timeout: 3), ["\(server.baseURL)/slow"])
        #expect(results[0].status == .error)
        #expect(results[0].error?.contains("timed out") == true)
        // Cut by the 3 s timeout, long before the server would have finished (60 s): timed on the
        // fetch's own thread, since the test's task may wait long to resume on a busy machine.
        #expect(seconds < 30)
    }

    @Test func endlessBodyIsCutAtMaxBytes() async throws {
        let server = try RawTCPServer { connection in
            connection.write("HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\n\r\n")
            let chunk = Data(repeating: UInt8(ascii: "a"), count: 65536)
            while connection.write(chunk) {}
            connection.reset()
        }
        defer { server.stop() }
        let result = await fetch(fetcher(maxBytes: 2 << 20), ["\(server.baseURL)/endless"])[0]
        #expect(result.status == .error)
        #expect(result.error?.contains("response larger than 2097152 bytes") == true)
    }

    @Test func gzipBombIsCutAfterDecompression() async throws {
        let bomb = try Fixtures.data("bomb-64mb.gz")
        let server = try await LocalHTTPServer.serving([
            "/bomb.xml": CannedResponse(headers: [("Content-Encoding", "gzip")], body: bomb)
        ])
        defer { server.stop() }
        let result = await fetch(fetcher(maxBytes: 4 << 20), ["\(server.baseURL)/bomb.xml"])[0]
        #expect(result.status == .error)
        #expect(result.error?.contains("response larger than 4194304 bytes") == true)
        // A small gzip body decodes.
        let small = try await LocalHTTPServer.serving([
            "/ok.xml": CannedResponse(headers: [("Content-Encoding", "gzip")], body: try gzipped(Data(body.utf8)))
        ])
        defer { small.stop() }
        let ok = await fetch(fetcher(), ["\(small.baseURL)/ok.xml"])[0]
        #expect(ok.status == .ok)
        #expect(String(decoding: ok.body, as: UTF8.self) == body)
    }

    @Test func connectionResetIsAConnectionError() async throws {
        let server = try RawTCPServer { connection in
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n<rss version=\"2.0\">")
            Thread.sleep(forTimeInterval: 0.1)
            connection.reset()
        }
        defer { server.stop() }
        let refused = "http://127.0.0.1:1/feed.xml"
        let results = await fetch(fetcher(), ["\(server.baseURL)/reset", refused])
        #expect(results[0].status == .error)
        #expect(results[0].error?.contains("connection error") == true)
        #expect(
            results[1].error
                == "\(refused): connection refused: Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't "
                + "connect to server"
                || results[1].error?.contains("connection refused") == true)
    }

    @Test func perHostAndTotalLimitsAreObserved() async throws {
        let tracker = InFlight()
        func handler(_ host: String) -> @Sendable (RecordedRequest) async -> CannedResponse {
            { _ in
                await tracker.begin(host)
                try? await Task.sleep(nanoseconds: 300_000_000)
                await tracker.end(host)
                return CannedResponse(text: "<rss version=\"2.0\"><channel><title>x</title></channel></rss>")
            }
        }
        let a = try await LocalHTTPServer.start(handler("a"))
        let b = try await LocalHTTPServer.start(handler("b"))
        defer {
            a.stop()
            b.stop()
        }
        let urls = (0..<8).map { "\(a.baseURL)/\($0).xml" } + (0..<8).map { "\(b.baseURL)/\($0).xml" }
        let results = await fetch(fetcher(concurrency: 3, perHost: 2), urls)
        #expect(results.allSatisfy { $0.status == .ok })
        let (total, perHost) = await tracker.peaks()
        // At most the limit; and more than one at a time (a loaded machine may start the third
        // transfer only after one of the first two ended, so exactly three is not promised).
        #expect((2...3).contains(total), "at most fetch.concurrency in flight: \(total)")
        #expect(perHost.values.allSatisfy { $0 <= 2 }, "at most fetch.per_host per host: \(perHost)")
        #expect(perHost.values.contains(2))
    }
}

actor InFlight {
    var total = 0
    var perHost: [String: Int] = [:]
    var peakTotal = 0
    var peakPerHost: [String: Int] = [:]

    func begin(_ host: String) {
        total += 1
        perHost[host, default: 0] += 1
        peakTotal = max(peakTotal, total)
        peakPerHost[host] = max(peakPerHost[host] ?? 0, perHost[host]!)
    }

    func end(_ host: String) {
        total -= 1
        perHost[host, default: 1] -= 1
    }

    func peaks() -> (Int, [String: Int]) { (peakTotal, peakPerHost) }
}
