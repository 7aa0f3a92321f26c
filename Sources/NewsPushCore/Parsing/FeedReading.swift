import Foundation

/// A fetched feed and what the parser made of it: the one fetch → parse step shared by `run`,
/// `check --fetch` and `parse`.
public struct FeedRead: Sendable {
    public var fetched: FetchedFeed
    /// The parsed document, when the fetch brought one and it is a feed.
    public var feed: ParsedFeed?
    /// Why the feed cannot be used this time (fetch or parse), naming its URL.
    public var error: String?

    /// ok (read), not-modified (304, or paused), or error.
    public var status: FetchedFeed.Status {
        if error != nil { return .error }
        return feed == nil ? .notModified : .ok
    }

    /// Parses what `fetched` brought; relative links resolve against `base` (the URL the
    /// document came from) when it is an http(s) URL, and stay relative otherwise (a feed read
    /// from a file or standard input has no address a reader could follow: never `file://`).
    /// `budget`: seconds the parse may take (`fetch.parse_budget`).
    public static func read(_ fetched: FetchedFeed, base: String?, budget: Double = FeedParser.defaultBudget) -> FeedRead {
        guard fetched.status == .ok else {
            return FeedRead(fetched: fetched, feed: nil, error: fetched.status == .error ? fetched.error ?? "\(fetched.url): fetch failed" : nil)
        }
        do {
            let feed = try FeedParser.parse(fetched.body, url: base.flatMap { FeedURL.isHTTP($0) ? $0 : nil }, contentType: fetched.contentType, budget: budget)
            if let unusable = feed.unusable { throw unusable }
            return FeedRead(fetched: fetched, feed: feed, error: nil)
        } catch {
            return FeedRead(fetched: fetched, feed: nil, error: "\(fetched.url): \(error)")
        }
    }
}
