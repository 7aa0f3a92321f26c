import Crypto
import FeedParsing
import Foundation
import NewsPushModel

/// The identity of a story across runs: what the state file is keyed by.
public enum StoryKey {
    /// `guid:…` when the item has an id unique within its feed, else `link:…` (canonical link),
    /// else `hash:…` of title and date. Ids that are not URLs are scoped by the feed's host,
    /// because short ids like "12345" repeat across publishers.
    public static func key(for item: FeedItem, feedURL: String, idIsUnique: Bool) -> String {
        if let id = item.id?.trimmingWhiteSpace(), !id.isEmpty, idIsUnique {
            if id.contains("://") || id.hasPrefix("urn:") || id.hasPrefix("tag:") { return "guid:\(id)" }
            return "guid:\(host(of: feedURL))/\(id)"
        }
        if let link = item.link, let canonical = canonicalLink(link) {
            return "link:\(canonical)"
        }
        let seed = "\(item.title ?? "")\n\(item.published.map(FeedDates.format) ?? "")\n\(item.summary ?? "")"
        let digest = SHA256.hash(data: Data(seed.utf8))
        return "hash:" + Hex.string(digest.prefix(12))
    }

    /// Keys for every item of a feed, in order. Ids repeated within the feed are not trusted.
    public static func keys(for items: [FeedItem], feedURL: String) -> [String] {
        var counts: [String: Int] = [:]
        for item in items { if let id = item.id { counts[id, default: 0] += 1 } }
        return items.map { key(for: $0, feedURL: feedURL, idIsUnique: ($0.id.map { counts[$0] ?? 0 } ?? 0) == 1) }
    }

    /// A link with scheme, `www.`, fragment and tracking parameters removed (`StoryLink`).
    public static func canonicalLink(_ link: String) -> String? { StoryLink.canonical(link) }

    static func host(of url: String) -> String {
        URLComponents(string: url)?.host?.lowercased() ?? url
    }
}
