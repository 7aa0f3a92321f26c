import Foundation
import NewsPushModel

/// Where the text of an element inside an item goes once the element closes.
enum ItemField {
    case title, dcTitle, link, description, rssSummary, content, atomSummary, guid, atomId
    case pubDate, dcDate, published, updated, created, author, dcCreator, atomAuthorName, atomAuthorEmail, category

    /// An item's HTML text, whose first `<img>` is the item's image when nothing else names one.
    var mayHoldImage: Bool {
        switch self {
        case .description, .atomSummary, .content, .rssSummary: true
        default: false
        }
    }
}

/// An item being read: what its elements said, settled into a `FeedItem` when it closes. A
/// class, so the reader's checks and updates of the open item never copy its forty-odd fields.
final class ItemDraft {
    var item = FeedItem()
    /// The depth of the item element.
    let depth: Int
    var rssLink: String?
    var atomLinks: [AlternateLink] = []
    /// The scheme and label of the category being read (RSS `domain`, `media:category`).
    var pendingTag: FeedTag?
    var guid: String?
    var pubDate: String?
    var dcDate: String?
    var published: String?
    var updated: String?
    var description: String?
    var atomSummary: String?
    var content: FeedText?
    var author: String?
    var atomAuthorName: String?
    var atomAuthorEmail: String?
    var authors: [(String?, String?)] = []
    var dcTitle: String?
    var rssSummary: String?
    var summaryBeforeDescription = false
    /// The largest media image so far (`media:content`, `media:thumbnail`) by pixel area.
    var mediaImage: (url: String, area: Int)?
    /// The first `<img>` of the item's HTML (description, summary, content).
    var htmlImage: String?

    init(depth: Int) {
        self.depth = depth
    }

    /// Keeps the plain text of a closed element.
    func set(_ field: ItemField, _ text: String) {
        switch field {
        // A second, empty <title> says nothing.
        case .title: if !text.isEmpty || item.title == nil { item.title = text }
        case .dcTitle: dcTitle = text
        case .link: if !text.isEmpty { rssLink = text }  // an empty one (`<atom:link/>` read as RSS) says nothing
        case .description: description = text
        case .rssSummary: rssSummary = text
        case .content: content = FeedText(markup: Array(text.utf8), kind: .plain)
        case .atomSummary: atomSummary = text
        case .guid: guid = text
        case .atomId: item.id = text
        case .pubDate: pubDate = text
        case .dcDate: dcDate = text
        case .published: published = text
        case .updated: updated = text
        case .created: item.createdText = text
        case .author: author = text
        case .dcCreator:
            if author == nil { author = text }
            if !text.isEmpty { authors.append(FeedAuthor.split(text)) }
        case .atomAuthorName: atomAuthorName = text
        case .atomAuthorEmail: atomAuthorEmail = text
        case .category:
            if !text.isEmpty {
                item.categories.append(text)
                item.tags.append(FeedTag(term: text, scheme: pendingTag?.scheme, label: pendingTag?.label))
            }
            pendingTag = nil
        }
    }

    /// An Atom `<author>` closed: its name and e-mail join the authors.
    func closeAtomAuthor() {
        if let name = atomAuthorName, let email = atomAuthorEmail {
            authors.append((name, email))
        } else if let name = atomAuthorName {
            authors.append((name, nil))
        } else if let email = atomAuthorEmail {
            authors.append((nil, email))
        }
    }

    /// The item, its RSS link resolved against `base`. The item is moved out of the draft, not
    /// copied with its twenty-odd fields.
    func finish(base: String?) -> FeedItem {
        var item = FeedItem()
        swap(&item, &self.item)
        if let guid, !guid.isEmpty { item.id = guid }
        if item.id?.isEmpty == true { item.id = nil }
        if item.title?.isEmpty == true { item.title = nil }
        item.link = link(base: base, id: item.id, guidIsPermaLink: item.guidIsPermaLink)
        (item.summary, item.contentSource) = summaryAndContent()
        if item.title == nil, let dcTitle, !dcTitle.isEmpty { item.title = dcTitle }
        item.publishedText = pubDate ?? published ?? dcDate
        item.updatedText = updated ?? dcDate
        item.published =
            (pubDate ?? dcDate ?? published).flatMap(FeedDates.parse)
            ?? dcDate.flatMap(FeedDates.parse) ?? published.flatMap(FeedDates.parse)
        item.updated = updated.flatMap(FeedDates.parse)
        item.authors = authors.map { FeedAuthor(name: $0.0, email: $0.1) }
        (item.author, item.authorEmail) = mainAuthor()
        if item.links.isEmpty, let link = item.link {
            item.links = [FeedLink(href: link, rel: "alternate", type: "text/html")]
        }
        item.image =
            ImageSource.pushable(mediaImage?.url)
            ?? ImageSource.pushable(
                item.links.first { $0.rel == "enclosure" && ImageSource.isImageType($0.type) }?.href)
            ?? ImageSource.pushable(htmlImage)
        return item
    }

    /// RSS `<link>`; else the preferred Atom alternate; else a permalink guid; else an id that
    /// is an address (an Atom entry or RSS 1.0 item without a link).
    private func link(base: String?, id: String?, guidIsPermaLink: Bool?) -> String? {
        if let rssLink, !rssLink.isEmpty { return FeedURL.resolve(rssLink, against: base) ?? rssLink }
        if let link = AlternateLink.preferred(atomLinks) { return link }
        if let guid, guidIsPermaLink != false, guid.hasPrefix("http://") || guid.hasPrefix("https://") { return guid }
        if guid == nil, let id, id.hasPrefix("http://") || id.hasPrefix("https://") { return id }
        return nil
    }

    /// The summary (an empty one stays empty: markup without text, such as an SVG) and the
    /// full content. `<summary>` and `<description>` in one RSS item: the first is the
    /// summary, the other the content.
    private func summaryAndContent() -> (String?, FeedText?) {
        var content = self.content
        var description = self.description
        if let rssSummary {
            if let other = description, content == nil {
                content = FeedText(markup: Array((summaryBeforeDescription ? other : rssSummary).utf8), kind: .plain)
                description = summaryBeforeDescription ? rssSummary : other
            } else if description == nil {
                description = rssSummary
            }
        }
        return (description ?? atomSummary ?? content?.text, content)
    }

    /// The item's author and e-mail: the first Atom author, else the RSS or Dublin Core one.
    private func mainAuthor() -> (String?, String?) {
        if let first = authors.first, atomAuthorName != nil || atomAuthorEmail != nil { return first }
        if let name = atomAuthorName, !name.isEmpty { return (name, atomAuthorEmail) }
        if let email = atomAuthorEmail, !email.isEmpty { return (nil, email) }
        if let author, !author.isEmpty { return FeedAuthor.split(author) }
        return (nil, nil)
    }
}

/// Where the text of a feed-level element goes once the element closes.
enum ChannelField {
    case title, link, subtitle, language, author, authorName, authorEmail, published, updated, category, id, ttl
}

/// The feed-level values read so far (RSS `<channel>`, Atom `<feed>`).
struct ChannelDraft {
    var title: String?
    var rssLink: String?
    var subtitle: String?
    var language: String?
    var author: (String?, String?) = (nil, nil)
    var published: String?
    var updated: String?
    var id: String?
    /// RSS `<ttl>`: minutes the channel may be cached.
    var ttl: Int?
    var tags: [FeedTag] = []
    /// The `domain` of the category being read.
    var pendingTagScheme: String?
    var atomLinks: [AlternateLink] = []
    var links: [FeedLink] = []

    /// Keeps the plain text of a closed element.
    mutating func set(_ field: ChannelField, _ text: String) {
        switch field {
        case .title: title = text.isEmpty ? nil : text
        case .link: if !text.isEmpty { rssLink = text }
        case .subtitle: subtitle = text
        case .language: language = text.isEmpty ? nil : text
        case .author: if !text.isEmpty { author = FeedAuthor.split(text) }
        case .authorName: author.0 = text
        case .authorEmail: author.1 = text
        case .published: published = text
        case .updated: updated = text
        case .category: if !text.isEmpty { tags.append(FeedTag(term: text, scheme: pendingTagScheme, label: nil)) }
        case .id: id = text.isEmpty ? nil : text
        case .ttl: ttl = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)).flatMap { $0 > 0 ? $0 : nil }
        }
    }

    /// The feed's link: its RSS `<link>` resolved against the document's address, else its
    /// preferred Atom alternate.
    func link(documentURL: String?) -> String? {
        if let rssLink { return FeedURL.resolve(rssLink, against: documentURL) ?? rssLink }
        return AlternateLink.preferred(atomLinks)
    }
}

/// An Atom `<link>` as the choice of an item's or feed's link sees it.
struct AlternateLink {
    var rel: String
    var type: String
    var href: String

    /// The first `alternate` link of an HTML type, else the first `alternate` link.
    static func preferred(_ links: [AlternateLink]) -> String? {
        var first: String?
        for link in links where link.rel == "alternate" {
            if link.type.containsASCII("html") { return link.href }
            if first == nil { first = link.href }
        }
        return first
    }
}

extension FeedAuthor {
    /// "me@example.com (Name)", "Name (me@example.com)", "Name <me@example.com>" or a bare
    /// address, split into name and e-mail.
    static func split(_ text: String) -> (String?, String?) {
        // Most authors are a plain name: nothing to split or trim.
        let utf8 = text.utf8
        if let first = utf8.first, let last = utf8.last, first > 0x20, first < 0x80, last > 0x20, last < 0x80,
            !utf8.contains(where: { $0 == UInt8(ascii: "(") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: "@") })
        {
            return (text, nil)
        }
        // Trimmed of white space (Character's sense) without Foundation's NSString round trip.
        func trim<S: StringProtocol>(_ text: S) -> String {
            guard let first = text.firstIndex(where: { !$0.isWhitespace }),
                let last = text.lastIndex(where: { !$0.isWhitespace })
            else { return "" }
            return String(text[first...last])
        }
        let trimmed = trim(text)
        let at = UInt8(ascii: "@")
        if let open = trimmed.firstIndex(where: { $0 == "(" || $0 == "<" }),
            let close = trimmed.lastIndex(where: { $0 == ")" || $0 == ">" }), open < close
        {
            let inside = trim(trimmed[trimmed.index(after: open)..<close])
            let outside = trim(trimmed[..<open] + trimmed[trimmed.index(after: close)...])
            if inside.utf8.contains(at) { return (outside.isEmpty ? nil : outside, inside) }
            if outside.utf8.contains(at) { return (inside.isEmpty ? nil : inside, outside) }
        }
        if trimmed.utf8.contains(at), !trimmed.utf8.contains(0x20) { return (nil, trimmed) }
        return (trimmed, nil)
    }
}
