import Crypto
import Foundation
import NewsPushModel

/// How the watcher's listener names feeds in its paths (`/websub/{feed}`, `/ping/{feed}`):
/// by `name`, or, for a feed without one, by `url-` and a digest of its URL.
public enum WatchFeeds {
    /// The path segment of `feed`, percent-encoded.
    public static func segment(_ feed: FeedSettings) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: "\u{0}"..."\u{7f}"))
        allowed.insert(charactersIn: "-._~")
        return id(feed).addingPercentEncoding(withAllowedCharacters: allowed) ?? id(feed)
    }

    /// The feed's name, or `url-` and the first 16 hex digits of its URL's SHA-256.
    public static func id(_ feed: FeedSettings) -> String {
        if let name = feed.name, !name.isEmpty { return name }
        return "url-" + Hex.string(SHA256.hash(data: Data(feed.url.utf8)).prefix(8))
    }

    /// The feed `segment` (decoded or not) names in `feeds`.
    public static func find(_ segment: String, in feeds: [FeedSettings]) -> FeedSettings? {
        let decoded = segment.removingPercentEncoding ?? segment
        return feeds.first { id($0) == decoded || id($0) == segment }
    }
}
