import FeedParsing
import Foundation
import NewsPushModel
import NotificationHubs

/// The version newspush reports (`--version`, User-Agent).
public enum NewsPushVersion {
    /// The release's version.
    public static let current = "0.1.0"
}

/// Why a feed could not be fetched, naming it.
public enum FeedFetchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The transfer failed (DNS, refused, timeout, TLS, too large, redirects).
    case transfer(url: String, TransferFailure)
    /// The server answered with an error status (and perhaps asked for a pause).
    case http(url: String, status: Int, retryAfter: Date?)
    /// Not fetched this run: the server's Retry-After has not ended.
    case paused(url: String, until: Date)
    /// A local feed file larger than `fetch.max_bytes`.
    case tooLarge(path: String, limit: Int)
    /// A local feed file that cannot be read.
    case unreadable(path: String, reason: String)
    /// Not fetched at all (nothing came back for it).
    case notFetched(url: String)

    /// The URL and what went wrong with it.
    public var description: String {
        switch self {
        case .transfer(let url, let failure):
            return "\(url): \(failure)"
        case .http(let url, let status, let retryAfter):
            let pause =
                retryAfter.map { "; the server asked not to be fetched again before \(FeedDates.format($0))" } ?? ""
            return "\(url): HTTP \(status)\(FeedFetcher.reasonPhrase(status))\(pause)"
        case .paused(let url, let until):
            return
                "\(url): not fetched: the server asked (Retry-After) for no request before \(FeedDates.format(until))"
        case .tooLarge(let path, let limit):
            return "\(path): file larger than \(limit) bytes"
        case .unreadable(let path, let reason):
            return "\(path): cannot read: \(reason)"
        case .notFetched(let url):
            return "\(url): not fetched"
        }
    }
}

/// The outcome of fetching one feed.
public struct FetchedFeed: Sendable {
    /// Fetched, unchanged (304), or failed.
    public enum Status: String, Sendable, Codable {
        case ok
        case notModified = "not-modified"
        case error
    }

    /// The feed's URL as configured.
    public var url: String
    /// Fetched, unchanged or failed.
    public var status: Status
    /// The final response's status (nil for files).
    public var httpStatus: Int?
    /// The document (empty unless fetched).
    public var body: Data
    /// The `Content-Type` header (its charset matters to the parser).
    public var contentType: String?
    /// The URL the body came from after redirects.
    public var finalURL: String
    /// Validators to send next time, when the server gave any.
    public var validators: ConditionalGetValidators?
    /// Why the fetch failed: the URL and its problem (DNS, refused, timeout, TLS, status, size).
    public var failure: FeedFetchError?
    /// `failure` in words, naming the feed.
    public var error: String? { failure?.description }
    /// Where the feed moved for good (the first hop of a 301/308 redirect chain).
    public var movedTo: String?
    /// When the server (429/503 with Retry-After) wants the next request at the earliest.
    public var retryAfter: Date?
    /// Until when the server says its answer stays fresh (`Cache-Control: max-age`,
    /// `Expires`: `HTTPFreshness`): the watcher fetches it again no sooner.
    public var freshUntil: Date?
    /// Not fetched this run: the server's Retry-After has not ended.
    public var paused = false
    /// The server's clock beside the machine's when the answer came (its `Date` header).
    public var clock: ClockReading?
    /// The answer's `Link` header (WebSub discovery: `rel="hub"` and `rel="self"`).
    public var linkHeader: String?

    /// The outcome of a fetch of `url`.
    public init(
        url: String, status: Status, httpStatus: Int? = nil, body: Data, contentType: String? = nil, finalURL: String,
        paused: Bool = false, validators: ConditionalGetValidators? = nil, failure: FeedFetchError? = nil,
        movedTo: String? = nil, retryAfter: Date? = nil
    ) {
        self.url = url
        self.status = status
        self.httpStatus = httpStatus
        self.body = body
        self.contentType = contentType
        self.finalURL = finalURL
        self.paused = paused
        self.validators = validators
        self.failure = failure
        self.movedTo = movedTo
        self.retryAfter = retryAfter
    }
}

/// Fetches feeds: http(s) with libcurl, many at once; local paths from disk.
public struct FeedFetcher: Sendable {
    /// `fetch:` of the config.
    public var settings: FetchSettings
    /// Relative feed paths are read from here (the config file's folder).
    public var baseFolder: String

    /// A fetcher with `settings`, reading relative paths from `baseFolder`.
    public init(settings: FetchSettings, baseFolder: String) {
        self.settings = settings
        self.baseFolder = baseFolder
    }

    /// `newspush/<version> (+contact)`: publishers can see who fetches and how to reach them.
    public var userAgent: String {
        let contact = settings.contact.map { "; +\($0)" } ?? ""
        return "newspush/\(NewsPushVersion.current) (breaking-news push pipeline\(contact))"
    }

    /// The fetch stage of a run: every feed, with the validators the ledger holds, except those
    /// whose server asked for a pause (429/503 Retry-After) that has not ended. Each is handed
    /// to `deliver` with its index as soon as it is done (in any order, on the caller's thread),
    /// so only the documents in flight are in memory.
    public func fetchEach(
        _ feeds: [FeedSettings], records: [String: FeedRecord], delivered: [String: FetchedFeed] = [:], now: Date,
        gate: FetchGate = .open, deliver: (Int, FetchedFeed) -> Void
    ) {
        var fetching: [(index: Int, url: String)] = []
        for (index, feed) in feeds.enumerated() {
            if var document = delivered[feed.url] {
                // Brought by the feed's WebSub hub: read as if fetched, the validators kept.
                document.validators = document.validators ?? records[feed.url]?.validators
                document.freshUntil = document.freshUntil ?? records[feed.url]?.freshUntil
                deliver(index, document)
            } else if let until = records[feed.url]?.retryAfter, until > now {
                deliver(
                    index,
                    FetchedFeed(
                        url: feed.url, status: .error, body: Data(), finalURL: feed.url, paused: true,
                        failure: .paused(url: feed.url, until: until), retryAfter: until))
            } else {
                fetching.append((index, feed.url))
            }
        }
        let validators = records.compactMapValues(\.validators)
        fetchEach(fetching.map(\.url), validators: validators, now: now, gate: gate) { position, fetched in
            deliver(fetching[position].index, fetched)
        }
    }

    /// Fetches every URL, sending each one's validators; results in the same order.
    /// One failing feed never affects the others.
    public func fetch(_ urls: [String], validators: [String: ConditionalGetValidators] = [:], now: Date)
        -> [FetchedFeed]
    {
        var results = [FetchedFeed?](repeating: nil, count: urls.count)
        fetchEach(urls, validators: validators, now: now) { results[$0] = $1 }
        return results.enumerated().map { index, result in
            result
                ?? FetchedFeed(
                    url: urls[index], status: .error, body: Data(), finalURL: urls[index],
                    failure: .notFetched(url: urls[index]))
        }
    }

    /// `fetch` of URLs, each result handed to `deliver` with its index as soon as it is done:
    /// local files first, then the transfers as they finish.
    public func fetchEach(
        _ urls: [String], validators: [String: ConditionalGetValidators] = [:], now: Date, gate: FetchGate = .open,
        deliver: (Int, FetchedFeed) -> Void
    ) {
        var transfers: [HTTPTransfer] = []
        var transferIndex: [Int] = []
        for (index, url) in urls.enumerated() {
            let lower = url.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
                deliver(index, readLocal(url))
                continue
            }
            var headers: [(name: String, value: String)] = [
                (
                    "Accept",
                    "application/rss+xml, application/atom+xml, application/rdf+xml, application/xml;q=0.9, "
                        + "text/xml;q=0.8, */*;q=0.1"
                )
            ]
            if let v = validators[url] {
                if let etag = v.etag { headers.append(("If-None-Match", etag)) }
                if let modified = v.lastModified { headers.append(("If-Modified-Since", modified)) }
            }
            transfers.append(
                HTTPTransfer(
                    url: url, headers: headers, userAgent: userAgent, timeout: settings.timeout,
                    connectTimeout: min(10, settings.timeout), maxBytes: settings.maxBytes))
            transferIndex.append(index)
        }
        guard !transfers.isEmpty else { return }
        do {
            let runner = try CurlMultiRunner(concurrency: settings.concurrency, perHost: settings.perHost)
            runner.run(transfers, gate: gate) { position, result in
                deliver(transferIndex[position], feed(from: result, url: transfers[position].url, now: now))
            }
        } catch {
            for (position, transfer) in transfers.enumerated() {
                deliver(
                    transferIndex[position],
                    feed(
                        from: HTTPTransferResult(effectiveURL: transfer.url, failure: error), url: transfer.url,
                        now: now))
            }
        }
    }

    private func feed(from result: HTTPTransferResult, url: String, now: Date) -> FetchedFeed {
        var feed = FetchedFeed(
            url: url, status: .error, httpStatus: result.status == 0 ? nil : result.status,
            body: Data(), contentType: result.headers["content-type"], finalURL: result.effectiveURL)
        if let first = result.redirects.first, first.status == 301 || first.status == 308 {
            feed.movedTo = first.location
        }
        // The machine's own clock (not the session's: a test clock is not the machine's).
        feed.clock = ClockReading(headers: result.headers, local: Date())
        feed.freshUntil = HTTPFreshness.lifetime(result.headers).map { now.addingTimeInterval($0) }
        feed.linkHeader = result.headers["link"]
        if let failure = result.failure {
            feed.failure = .transfer(url: url, failure)
            return feed
        }
        switch result.status {
        case 304:
            feed.status = .notModified
            feed.validators = validators(from: result.headers)
        case 200..<300:
            feed.status = .ok
            feed.body = result.body
            feed.validators = validators(from: result.headers)
        default:
            if result.status == 429 || result.status == 503, let value = result.headers["retry-after"],
                let seconds = NotificationHubClient.parseRetryAfter(value, now: now)
            {
                // Honoured up to a day: a longer wait is more likely a misconfigured server.
                feed.retryAfter = now.addingTimeInterval(min(seconds, 86400))
            }
            feed.failure = .http(url: url, status: result.status, retryAfter: feed.retryAfter)
        }
        return feed
    }

    private func validators(from headers: [String: String]) -> ConditionalGetValidators? {
        let v = ConditionalGetValidators(etag: headers["etag"], lastModified: headers["last-modified"])
        return v.etag == nil && v.lastModified == nil ? nil : v
    }

    private func readLocal(_ url: String) -> FetchedFeed {
        let path = localPath(url)
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            if data.count > settings.maxBytes {
                return FetchedFeed(
                    url: url, status: .error, body: Data(), finalURL: url,
                    failure: .tooLarge(path: path, limit: settings.maxBytes))
            }
            return FetchedFeed(url: url, status: .ok, body: data, finalURL: URL(fileURLWithPath: path).absoluteString)
        } catch {
            return FetchedFeed(
                url: url, status: .error, body: Data(), finalURL: url,
                failure: .unreadable(path: path, reason: SystemErrors.reason(error)))
        }
    }

    /// The file a non-HTTP feed URL names: `file:///abs` or a path relative to `baseFolder`.
    public func localPath(_ url: String) -> String {
        if url.lowercased().hasPrefix("file://") {
            return URL(string: url)?.path ?? String(url.dropFirst(7))
        }
        return url.hasPrefix("/") ? url : (baseFolder as NSString).appendingPathComponent(url)
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 400: return " Bad Request"
        case 401: return " Unauthorized"
        case 403: return " Forbidden"
        case 404: return " Not Found"
        case 410: return " Gone (the publisher removed this feed; take it out of the config)"
        case 429: return " Too Many Requests"
        case 500: return " Internal Server Error"
        case 502: return " Bad Gateway"
        case 503: return " Service Unavailable"
        case 504: return " Gateway Timeout"
        default: return ""
        }
    }
}
