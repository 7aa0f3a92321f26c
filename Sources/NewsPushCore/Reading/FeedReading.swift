import FeedParsing
import Foundation
import NewsPushModel

/// Why a feed cannot be used this time, naming it: its fetch failed, or its document could not
/// be read as a feed.
public enum FeedReadError: Error, Sendable, CustomStringConvertible {
    case fetch(FeedFetchError)
    case parse(url: String, FeedParseError)

    /// The feed's URL and what went wrong.
    public var description: String {
        switch self {
        case .fetch(let error): return error.description
        case .parse(let url, let error): return "\(url): \(error)"
        }
    }
}

/// A fetched feed and what the parser made of it.
public struct FeedRead: Sendable {
    /// What the fetch brought.
    public var fetched: FetchedFeed
    /// The parsed document, when the fetch brought one and it is a feed.
    public var feed: ParsedFeed?
    /// Why the feed cannot be used this time (fetch or parse), naming its URL.
    public var failure: FeedReadError?

    /// How many items the document listed (kept when the items themselves are let go).
    public var itemCount: Int

    /// `failure` in words.
    public var error: String? { failure?.description }

    /// A read of `fetched`: its document, or why there is none.
    public init(fetched: FetchedFeed, feed: ParsedFeed?, failure: FeedReadError?) {
        self.fetched = fetched
        self.feed = feed
        self.failure = failure
        itemCount = feed?.items.count ?? 0
    }

    /// The read without its items, once they became candidates: a run keeps one copy of each
    /// item, not two (what the report needs of the feed, its count and title, stays).
    public func withoutItems() -> FeedRead {
        var read = self
        read.feed?.items = []
        return read
    }

    /// A feed that was not fetched at all (nothing came back for it).
    public init(notFetched url: String) {
        self.init(
            fetched: FetchedFeed(url: url, status: .error, body: Data(), finalURL: url, failure: .notFetched(url: url)),
            feed: nil, failure: .fetch(.notFetched(url: url)))
    }

    /// ok (read), not-modified (304, or paused), or error.
    public var status: FetchedFeed.Status {
        if failure != nil { return .error }
        return feed == nil ? .notModified : .ok
    }
}

/// The one fetch → parse stage, shared by `run`, `preview`, `check --fetch` and `parse`.
public enum FeedReading {
    /// Every feed fetched (with the validators of `records`, and not at all while its server's
    /// Retry-After lasts), then parsed within `settings.parseBudget`; results in order.
    public static func fetchAndRead(
        _ feeds: [FeedSettings], records: [String: FeedRecord], settings: FetchSettings,
        baseFolder: String, now: Date,
        progress: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) -> [FeedRead] {
        var reads = [FeedRead?](repeating: nil, count: feeds.count)
        readEach(feeds, records: records, settings: settings, baseFolder: baseFolder, now: now, progress: progress) {
            for (index, read) in $0 { reads[index] = read }
        }
        return reads.enumerated().map { index, read in read ?? FeedRead(notFetched: feeds[index].url) }
    }

    /// `fetchAndRead` pulled in batches: the fetch loop runs on a thread of its own (`FeedPull`,
    /// a buffer of twice `settings.concurrency` documents); each batch is every document that
    /// has arrived, parsed here and handed to `deliver` with the feeds' indexes (in any order),
    /// the bytes let go. An error `deliver` throws stops the fetches still to come.
    public static func readEach<Failure: Error>(
        _ feeds: [FeedSettings], records: [String: FeedRecord], delivered: [String: FetchedFeed] = [:],
        settings: FetchSettings, baseFolder: String, now: Date,
        progress: (_ done: Int, _ total: Int) -> Void = { _, _ in },
        deliver: ([(index: Int, read: FeedRead)]) throws(Failure) -> Void
    ) throws(Failure) {
        let pull = FeedPull(
            feeds, records: records, delivered: delivered, settings: settings, baseFolder: baseFolder, now: now,
            capacity: 2 * settings.concurrency)
        defer { pull.stop() }
        var done = 0
        while var batch = pull.take() {
            var reads: [(index: Int, read: FeedRead)] = []
            for position in batch.indices {
                var read = read(
                    batch[position].fetched, base: batch[position].fetched.finalURL, budget: settings.parseBudget)
                read.fetched.body = Data()
                batch[position].fetched.body = Data()
                reads.append((batch[position].index, read))
            }
            done += reads.count
            progress(done, feeds.count)
            try deliver(reads)
        }
    }

    /// Each fetched document parsed, within `budget` seconds each; each document's bytes are let
    /// go as soon as it is read (nothing after the parse needs them).
    public static func read(_ fetched: consuming [FetchedFeed], budget: Double) -> [FeedRead] {
        var documents = fetched
        var reads: [FeedRead] = []
        reads.reserveCapacity(documents.count)
        for index in documents.indices {
            var read = read(documents[index], base: documents[index].finalURL, budget: budget)
            documents[index].body = Data()
            read.fetched.body = Data()
            reads.append(read)
        }
        return reads
    }

    /// Parses what `fetched` brought; relative links resolve against `base` (the URL the
    /// document came from) when it is an http(s) URL, and stay relative otherwise (a feed read
    /// from a file or standard input has no address a reader could follow: never `file://`).
    /// `budget`: seconds the parse may take (`fetch.parse_budget`).
    public static func read(_ fetched: FetchedFeed, base: String?, budget: Double = FeedParser.defaultBudget)
        -> FeedRead
    {
        guard fetched.status == .ok else {
            let failure =
                fetched.status == .error ? FeedReadError.fetch(fetched.failure ?? .notFetched(url: fetched.url)) : nil
            return FeedRead(fetched: fetched, feed: nil, failure: failure)
        }
        do throws(FeedParseError) {
            let url = base.flatMap { FeedURL.isHTTP($0) ? $0 : nil }
            let feed = try FeedParser.parse(fetched.body, url: url, contentType: fetched.contentType, budget: budget)
            if let unusable = feed.unusable { throw unusable }
            return FeedRead(fetched: fetched, feed: feed, failure: nil)
        } catch {
            return FeedRead(fetched: fetched, feed: nil, failure: .parse(url: fetched.url, error))
        }
    }
}
