import Foundation
import NewsPushModel

/// The `parse --format json|jsonl` object of SPEC §3 for one source.
public struct ParseOutput: Encodable, Sendable {
    /// The file, URL or `-` as given.
    public var source: String
    /// The parsed feed, when it could be read.
    public var feed: ParsedFeed?
    /// Why it could not be read.
    public var error: String?

    /// The output for `source`.
    public init(source: String, feed: ParsedFeed?, error: String?) {
        self.source = source
        self.feed = feed
        self.error = error
    }

    enum CodingKeys: String, CodingKey { case source, format, title, link, items, error, problems }

    /// SPEC §3's object: the feed's fields and items, or the error.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(source, forKey: .source)
        guard let feed else {
            try c.encode(error ?? "unknown error", forKey: .error)
            return
        }
        try c.encode(feed.format, forKey: .format)
        try c.encode(feed.title, forKey: .title)
        try c.encode(feed.link, forKey: .link)
        try c.encode(feed.items.map(ItemOutput.init), forKey: .items)
        if !feed.problems.isEmpty { try c.encode(feed.problems, forKey: .problems) }
    }

    struct ItemOutput: Encodable {
        var item: FeedItem
        enum CodingKeys: String, CodingKey {
            case id, title, link, summary, published, updated, author, categories, enclosures, image
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(item.id, forKey: .id)
            try c.encode(item.title, forKey: .title)
            try c.encode(item.link, forKey: .link)
            try c.encode(item.summary, forKey: .summary)
            try c.encode(item.published.map(FeedDates.format), forKey: .published)
            try c.encode(item.updated.map(FeedDates.format), forKey: .updated)
            try c.encode(item.author, forKey: .author)
            try c.encode(item.categories, forKey: .categories)
            if !item.enclosures.isEmpty { try c.encode(item.enclosures, forKey: .enclosures) }
            if let image = item.image { try c.encode(image, forKey: .image) }
        }
    }

    /// JSON text: pretty for `json`, one line for `jsonl`.
    public func jsonText(pretty: Bool) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
