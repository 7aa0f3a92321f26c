import Foundation
import NewsPushModel

/// The feed dialects newspush reads; raw values are the `format` field of SPEC §3.
public enum FeedFormat: String, Sendable, Codable {
    case rss20 = "rss2.0"
    case rss09x = "rss0.9x"
    case rss10 = "rss1.0"
    case atom10 = "atom1.0"
}

/// A link of a feed or item, with its relation (`alternate`, `enclosure`, …).
public struct FeedLink: Sendable, Equatable, Codable {
    /// The link's target, absolute.
    public var href: String
    /// Its relation (`alternate`, `enclosure`, `self`…).
    public var rel: String
    /// Its media type.
    public var type: String?
    /// Its size in bytes, as written.
    public var length: String?
    /// Its language.
    public var hreflang: String?
    /// Its title.
    public var title: String?
}

/// One author of an item.
public struct FeedAuthor: Sendable, Equatable, Codable {
    /// The author's name.
    public var name: String?
    /// The author's address.
    public var email: String?
}

/// A category term with its scheme (RSS `domain`, Atom `scheme`) and label.
public struct FeedTag: Sendable, Equatable, Codable {
    /// The category's term.
    public var term: String
    /// Its scheme (RSS `domain`).
    public var scheme: String?
    /// Its label.
    public var label: String?
}

/// One entry of a feed, normalised: plain-text title and summary, absolute link, UTC dates.
public struct FeedItem: Sendable, Equatable, Codable {
    /// The item's own id (RSS guid, RSS 1.0 rdf:about, Atom id), or nil.
    public var id: String?
    /// The headline as plain text.
    public var title: String?
    /// The item's link, absolute.
    public var link: String?
    /// The summary as plain text.
    public var summary: String?
    /// When it was published.
    public var published: Date?
    /// When it was last updated.
    public var updated: Date?
    /// The first author's name.
    public var author: String?
    /// The terms of its categories.
    public var categories: [String] = []
    /// Enclosure and media URLs, absolute.
    public var enclosures: [String] = []
    /// The item's picture for an alert: the largest `media:content`/`media:thumbnail` image,
    /// else an enclosure of an image type, else the first `<img>` of its HTML. Absolute https
    /// URLs only (a push may only point devices at https).
    public var image: String?
    /// The full content (`content:encoded`, Atom content) as plain text, when given; converted
    /// from the feed's markup when read.
    public var content: String? {
        get {
            guard let text = contentSource?.text, !text.isEmpty else { return nil }
            return text
        }
        set { contentSource = newValue.map { FeedText(markup: Array($0.utf8), kind: .plain) } }
    }
    /// The content as the feed wrote it.
    var contentSource: FeedText?
    /// Whether an RSS guid is a permalink (only meaningful when `id` came from a guid).
    public var guidIsPermaLink: Bool?
    /// The first author's address.
    public var authorEmail: String?
    /// Every author when there are several (`author` is the first).
    public var authors: [FeedAuthor] = []
    /// Every link with its relation (enclosures included).
    public var links: [FeedLink] = []
    /// Categories with scheme and label (`categories` holds their terms).
    public var tags: [FeedTag] = []
    /// The content's media type (`text/html`, `text/plain`, `application/xhtml+xml`).
    public var contentType: String?
    /// The dates as the feed wrote them.
    public var publishedText: String?
    /// The updated date as written.
    public var updatedText: String?
    /// The created date as written.
    public var createdText: String?

    /// An item with these fields.
    public init(
        id: String? = nil, title: String? = nil, link: String? = nil, summary: String? = nil,
        published: Date? = nil, updated: Date? = nil, author: String? = nil, categories: [String] = []
    ) {
        self.id = id
        self.title = title
        self.link = link
        self.summary = summary
        self.published = published
        self.updated = updated
        self.author = author
        self.categories = categories
    }
}

/// A parsed feed document.
public struct ParsedFeed: Sendable, Codable {
    /// RSS 2.0, RSS 0.9x, RSS 1.0 or Atom 1.0.
    public var format: FeedFormat
    /// The feed's title.
    public var title: String?
    /// The feed's own link.
    public var link: String?
    /// RSS channel description, Atom subtitle (tagline), as plain text.
    public var subtitle: String?
    /// The feed's language, as written.
    public var language: String?
    /// Every link of the feed with its relation.
    public var links: [FeedLink] = []
    /// The feed's author.
    public var author: String?
    /// The author's address.
    public var authorEmail: String?
    /// The feed's categories.
    public var tags: [FeedTag] = []
    /// The feed's own id (Atom).
    public var id: String?
    /// The channel's dates as written (RSS pubDate / dcterms:issued; lastBuildDate / dc:date /
    /// Atom updated).
    public var publishedText: String?
    /// The updated date as written.
    public var updatedText: String?
    /// RSS `<ttl>`: how many minutes the channel may be cached before it is fetched again.
    public var ttl: Int?
    /// The items in document order.
    public var items: [FeedItem]
    /// What was wrong with the document but did not stop the parse (not well-formed,
    /// wrong encoding label…), for the report.
    public var problems: [String]
    /// How many elements named `item` or `entry` the document holds outside text, in any
    /// namespace (more than `items.count` when some could not be read as items).
    public var itemElements = 0

    /// Never silently nothing: a document with `<item>` or `<entry>` elements that yields no
    /// item, or only items with neither a title nor a link, cannot be used. (The parser
    /// itself reads such documents: feedparser's conformance feeds are made of them.)
    public var unusable: FeedParseError? {
        if items.isEmpty, itemElements > 0 {
            let element = format == .atom10 ? "<entry>" : "<item>"
            return .noReadableItems(
                "the document has \(itemElements) <item> or <entry> elements but none is an \(element) of its "
                    + "\(format.rawValue) feed (elements in a namespace the feed does not use?)")
        }
        if !items.isEmpty, items.allSatisfy({ $0.title == nil && $0.link == nil }) {
            return .noReadableItems("none of its \(items.count) items has a title or a link")
        }
        return nil
    }
}

/// Why a document yielded no feed at all.
public enum FeedParseError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case notAFeed(String)
    case unreadable(String)
    /// A document built to make the parser work for minutes (refused before parsing).
    case hostile(String)
    /// The parse took longer than its budget and was stopped.
    case tooSlow(seconds: Double)
    /// The document holds items, but none that can be read (or none with a title or a link):
    /// an error rather than a feed that silently has nothing.
    case noReadableItems(String)

    /// What was wrong with the document.
    public var description: String {
        switch self {
        case .empty: return "the document is empty"
        case .notAFeed(let what): return "not a feed: \(what)"
        case .unreadable(let why): return "cannot be parsed: \(why)"
        case .hostile(let why): return "refused: \(why)"
        case .noReadableItems(let why): return "no usable items: \(why)"
        case .tooSlow(let seconds):
            return String(
                format:
                    "parsing stopped after %.1f s, its budget (fetch.parse_budget): the document is too costly to read",
                seconds)
        }
    }
}

extension String {
    /// The text without leading and trailing ASCII white space; a byte scan, much cheaper on the
    /// parsing hot path than Foundation's `trimmingCharacters(in:)`.
    func trimmedASCIIWhitespace() -> String {
        let bytes = utf8
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 || b == 0x0C }
        // Usually there is nothing to trim: no copy then.
        if let first = bytes.first, let last = bytes.last, !isSpace(first), !isSpace(last) { return self }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else {
            return ""
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    /// Whether the text holds `needle` (ASCII), as bytes. (The generic `firstRange(of:)` on
    /// `utf8` cost more than a percent of a parse, choosing each Atom entry's link.)
    func containsASCII(_ needle: StaticString) -> Bool {
        var text = self
        return text.withUTF8 { FeedBytes.indexAfter(needle, in: $0, from: 0) != nil }
    }

    /// Whether the text starts with `prefix` (lower-case ASCII) in any ASCII case, without
    /// building anything.
    func hasASCIIPrefixIgnoringCase(_ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        var index = 0
        for byte in utf8 {
            guard index < count else { return true }
            let lower = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
            guard lower == prefix.utf8Start[index] else { return false }
            index += 1
        }
        return index == count
    }
}
