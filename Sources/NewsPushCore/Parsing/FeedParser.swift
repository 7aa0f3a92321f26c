import Foundation
internal import CByteScan

/// Parses RSS 2.0, RSS 0.9x, RSS 1.0 (RDF) and Atom 1.0 documents into `ParsedFeed` values.
/// The dialect is detected from the document. Bytes are repaired first (`FeedBytes`), parsed
/// strictly with libxml2, and parsed again in recover mode only when they are not well-formed.
public enum FeedParser {
    /// Parses a feed document fetched from `url` (used to resolve relative links) with the
    /// HTTP `Content-Type` it came with, if any.
    /// `budget`: seconds the parse may take before it is stopped (`fetch.parse_budget`).
    public static func parse(_ data: Data, url: String?, contentType: String? = nil, budget: Double = defaultBudget) throws(FeedParseError) -> ParsedFeed {
        try parse(data, url: url, contentType: contentType, alwaysRepair: false, budget: budget)
    }

    /// The default parse budget: real feeds of several MB parse in a tenth of a second.
    public static let defaultBudget: Double = 10
    /// The most attributes a start tag may have (real feeds use fewer than twenty).
    static let maxAttributes = 256

    /// `alwaysRepair` runs the markup repair even when the bytes do not need it (tests compare).
    static func parse(_ data: Data, url: String?, contentType: String?, alwaysRepair: Bool,
                      budget: Double = defaultBudget) throws(FeedParseError) -> ParsedFeed {
        if data.isEmpty || data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            throw .empty
        }
        let prepared = FeedBytes.prepare(data, httpContentType: contentType, alwaysRepair: alwaysRepair)
        guard prepared.withBytes({ $0.contains(UInt8(ascii: "<")) }) else { throw .notAFeed("no markup in the document") }
        let flood = prepared.withBytes { bytes in bytescan_attribute_flood(bytes.baseAddress!, bytes.count, maxAttributes) }
        if flood < prepared.withBytes({ $0.count }) {
            throw .hostile("an element at byte \(flood) has more than \(maxAttributes) attributes")
        }
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(budget * 1000)))

        var builder = FeedDocumentBuilder(documentURL: url)
        let strict = XMLSAXParser(sink: builder, deadline: deadline)
        prepared.withBytes { strict.parse($0, url: url, recover: false) }
        if strict.outOfTime { throw .tooSlow(seconds: budget) }
        var problems = prepared.problems
        if !strict.wellFormed {
            builder = FeedDocumentBuilder(documentURL: url)
            let recovering = XMLSAXParser(sink: builder, deadline: deadline)
            // Recover mode drops every entity reference after the first error: it needs the
            // repaired bytes (all references numeric).
            prepared.withRepairedBytes { recovering.parse($0, url: url, recover: true) }
            if recovering.outOfTime { throw .tooSlow(seconds: budget) }
            let first = strict.errors.first ?? "unknown error"
            problems.append("not well-formed XML (\(first)); recovered what could be read")
        }
        builder.endOfInput()
        if let rejection = builder.rejection { throw .notAFeed(rejection) }
        guard let format = builder.format else {
            throw .unreadable(strict.errors.first ?? "no root element")
        }
        if builder.droppedOpenItem { problems.append("the document ends inside an item; that item was left out") }
        var feed = ParsedFeed(format: format, title: builder.feedTitle, link: builder.feedLink, subtitle: builder.feedSubtitle,
                              language: builder.feedLanguage, links: builder.feedLinks, items: builder.items, problems: problems)
        (feed.author, feed.authorEmail) = builder.feedAuthor
        feed.publishedText = builder.feedPublished
        feed.updatedText = builder.feedUpdated
        feed.tags = builder.feedTags
        feed.id = builder.feedId
        return feed
    }
}

/// Namespace URIs feeds use.
enum FeedNamespace {
    static let atom = "http://www.w3.org/2005/Atom"
    static let atom03 = "http://purl.org/atom/ns#"
    static let rss10 = "http://purl.org/rss/1.0/"
    static let rss090 = "http://my.netscape.com/rdf/simple/0.9/"
    static let rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    static let dc = "http://purl.org/dc/elements/1.1/"
    static let content = "http://purl.org/rss/1.0/modules/content/"
    static let dcterms = "http://purl.org/dc/terms/"
    static let xml = "http://www.w3.org/XML/1998/namespace"
    static let userlandRSS2 = "http://backend.userland.com/rss2"
    static let userlandRSS = "http://backend.userland.com/rss"
    static let xhtml = "http://www.w3.org/1999/xhtml"

    static let harvardRSS = "http://blogs.law.harvard.edu/tech/rss"

    static func isRSS(_ ns: String) -> Bool {
        ns.isEmpty || ns == rss10 || ns == rss090 || ns.hasPrefix(userlandRSS) || ns == harvardRSS
    }
    static func isAtom(_ ns: String) -> Bool { ns == atom || ns == atom03 }
    static func isMedia(_ ns: String) -> Bool { ns.hasPrefix("http://search.yahoo.com/mrss") }
}

/// The namespaces the builder tells apart, so an element costs an enum comparison rather than
/// string comparisons of long URIs (`XMLSAXParser` works the kind out once per URI).
enum NamespaceKind: UInt8, Sendable {
    case none, rss10, rss090, otherRSS, atom, atom03, dc, dcterms, content, xhtml, media, rdf, xml, other

    init(_ uri: String) {
        switch uri {
        case "": self = .none
        case FeedNamespace.rss10: self = .rss10
        case FeedNamespace.rss090: self = .rss090
        case FeedNamespace.atom: self = .atom
        case FeedNamespace.atom03: self = .atom03
        case FeedNamespace.dc: self = .dc
        case FeedNamespace.dcterms: self = .dcterms
        case FeedNamespace.content: self = .content
        case FeedNamespace.xhtml: self = .xhtml
        case FeedNamespace.rdf: self = .rdf
        case FeedNamespace.xml: self = .xml
        default:
            if FeedNamespace.isMedia(uri) { self = .media }
            else if FeedNamespace.isRSS(uri) { self = .otherRSS }
            else { self = .other }
        }
    }

    /// No namespace or one of RSS's: RSS 1.0, 0.90, UserLand's and Harvard's.
    var isRSS: Bool { self == .none || self == .rss10 || self == .rss090 || self == .otherRSS }
    var isAtom: Bool { self == .atom || self == .atom03 }
}

/// Turns SAX events into feed items. Text of interesting elements is captured (including the
/// text of any child markup) and converted once the element closes.
final class FeedDocumentBuilder {
    private(set) var format: FeedFormat?
    private(set) var rejection: String?
    private(set) var feedTitle: String?
    private(set) var feedLink: String?
    private(set) var feedSubtitle: String?
    private(set) var feedLanguage: String?
    private(set) var feedLinks: [FeedLink] = []
    private(set) var feedAuthor: (String?, String?) = (nil, nil)
    private(set) var feedPublished: String?
    private(set) var feedTags: [FeedTag] = []
    private(set) var feedId: String?
    private var pendingFeedTagScheme: String?
    private(set) var feedUpdated: String?
    private(set) var items: [FeedItem] = []
    private(set) var droppedOpenItem = false


    private enum Field {
        case feedTitle, feedLink, feedSubtitle, feedLanguage, feedAuthor, feedAuthorName, feedAuthorEmail, feedPublished, feedUpdated
        case dcTitle, created, rssSummary, feedCategory, feedId
        case title, link, description, contentEncoded, atomSummary, atomContent, guid, atomId
        case pubDate, dcDate, published, updated, author, dcCreator, atomAuthorName, atomAuthorEmail, category

        /// An item's HTML text, whose first `<img>` is the item's image when nothing else names one.
        var mayHoldImage: Bool {
            switch self {
            case .description, .atomSummary, .contentEncoded, .atomContent, .rssSummary: true
            default: false
            }
        }
    }

    private struct Capture {
        var field: Field
        var depth: Int
        var kind: TextKind
    }

    /// An item being read: a class, so the builder's checks and updates of the open item never
    /// copy its forty-odd fields.
    private final class Draft {
        var item = FeedItem()
        let depth: Int
        var rssLink: String?
        var atomLinks: [(rel: String, type: String, href: String)] = []
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
        var modified: String?
        var rssSummary: String?
        var summaryBeforeDescription = false
        /// The largest media image so far (`media:content`, `media:thumbnail`) by pixel area.
        var mediaImage: (url: String, area: Int)?
        /// The first `<img>` of the item's HTML (description, summary, content).
        var htmlImage: String?

        init(depth: Int) {
            self.depth = depth
        }
    }

    /// The open elements' names, outermost first.
    private var stack: [XMLName] = []
    /// The `xml:base` in force and the depth of the element that set it, only where one did
    /// (most documents have none: nothing to push per element).
    private var bases: [(depth: Int, base: String)] = []
    private var draft: Draft?
    private var capture: Capture? {
        didSet { if capture != nil, oldValue == nil { captured.removeAll() } }
    }
    /// The text of the element being captured, as written (one buffer, reused).
    private var captured = ByteBuffer()
    private var atomAuthorDepth: Int?
    private var feedAuthorDepth: Int?
    private var feedAtomLinks: [(rel: String, type: String, href: String)] = []
    private var feedRSSLink: String?
    private let documentURL: String?
    /// Sees every captured text as written, before conversion (tests compare converters with it).
    var rawTextObserver: ((TextKind, [UInt8]) -> Void)?

    init(documentURL: String?) {
        self.documentURL = documentURL
    }

    private var currentBase: String? { bases.last?.base ?? documentURL }

    // MARK: Events

    func startElement(_ name: XMLName, attributes: XMLAttributes) {
        if rejection != nil { return }
        stack.append(name)
        let depth = stack.count
        var base = currentBase
        if let xmlBase = attributes.value("base", namespace: FeedNamespace.xml) {
            let resolved = Self.resolve(xmlBase, against: base) ?? xmlBase
            bases.append((depth, resolved))
            base = resolved
        }

        if depth == 1 {
            detectFormat(name, attributes: attributes)
            return
        }
        if capture != nil {
            // Markup inside a captured element (XHTML content, naked HTML in a description).
            if name.local == "img", draft?.htmlImage == nil, let src = attribute("src", in: attributes) {
                draft?.htmlImage = Self.resolve(src, against: base)
            }
            if Self.blockLike.contains(name.local) || (name.local.utf8.contains { $0 >= 0x41 && $0 <= 0x5A } && Self.blockLike.contains(name.local.lowercased())) {
                captured.append(0x20)
            }
            return
        }
        let draftDepth = draft?.depth
        if name.kind == .media, let draftDepth, depth == draftDepth + 1, name.local == "title" || name.local == "category" {
            startItemChild(name, attributes: attributes, depth: depth, base: base)
            return
        }
        if name.kind == .media, draft != nil, name.local == "content" || name.local == "thumbnail" {
            if let url = attribute("url", in: attributes), let resolved = Self.resolve(url, against: base) {
                draft?.item.enclosures.append(resolved)
                let area = (Int(attribute("width", in: attributes) ?? "") ?? 0) * (Int(attribute("height", in: attributes) ?? "") ?? 0)
                if area > draft?.mediaImage?.area ?? -1, name.local == "thumbnail"
                    || Self.isImage(medium: attribute("medium", in: attributes), type: attribute("type", in: attributes), url: resolved) {
                    draft?.mediaImage = (resolved, area)
                }
            }
            return
        }
        if let draftDepth {
            if depth == draftDepth + 1 {
                startItemChild(name, attributes: attributes, depth: depth, base: base)
            } else if let authorDepth = atomAuthorDepth, depth == authorDepth + 1, name.kind.isAtom || name.kind == .none {
                if name.local == "name" { capture = Capture(field: .atomAuthorName, depth: depth, kind: .plain) }
                if name.local == "email" { capture = Capture(field: .atomAuthorEmail, depth: depth, kind: .plain) }
            }
            return
        }
        if isItemElement(name) {
            draft = Draft(depth: depth)
            if let about = attributes.value("about", namespace: FeedNamespace.rdf) {
                draft?.item.id = about
            }
            return
        }
        if let authorDepth = feedAuthorDepth, depth == authorDepth + 1 {
            if name.local == "name" { capture = Capture(field: .feedAuthorName, depth: depth, kind: .plain) }
            if name.local == "email" { capture = Capture(field: .feedAuthorEmail, depth: depth, kind: .plain) }
            return
        }
        // Feed-level title and link: children of <channel> or of the Atom <feed>.
        let parent = stack[stack.count - 2]
        let parentIsChannel = (parent.local == "channel" && parent.kind.isRSS) ||
            (depth == 2 && format == .atom10)
        if depth == 1 || parentIsChannel, feedLanguage == nil,
           let lang = attributes.value("lang", namespace: FeedNamespace.xml) {
            feedLanguage = lang
        }
        guard parentIsChannel else { return }
        let known = name.kind.isRSS || name.kind.isAtom
        if name.local == "title", known {
            capture = Capture(field: .feedTitle, depth: depth, kind: textKind(name, attributes))
        } else if ["description", "subtitle", "tagline"].contains(name.local), known {
            capture = Capture(field: .feedSubtitle, depth: depth, kind: name.local == "description" ? .html : textKind(name, attributes))
        } else if name.local == "language", name.kind.isRSS || name.kind == .dc {
            capture = Capture(field: .feedLanguage, depth: depth, kind: .plain)
        } else if (name.local == "category" && name.kind.isRSS) || (name.kind == .dc && name.local == "subject") {
            pendingFeedTagScheme = attribute("domain", in: attributes)
            capture = Capture(field: .feedCategory, depth: depth, kind: .plain)
        } else if name.local == "id", name.kind.isAtom || (format == .atom10 && name.kind == .none) {
            capture = Capture(field: .feedId, depth: depth, kind: .plain)
        } else if name.local == "title", name.kind == .dc, feedTitle == nil {
            capture = Capture(field: .feedTitle, depth: depth, kind: .plain)
        } else if (name.local == "author" && name.kind.isRSS) || (name.kind == .dc && ["creator", "author"].contains(name.local))
                    || (name.local == "managingEditor" && name.kind.isRSS && feedAuthor.0 == nil && feedAuthor.1 == nil) {
            capture = Capture(field: .feedAuthor, depth: depth, kind: .plain)
        } else if name.local == "author", name.kind.isAtom || (format == .atom10 && name.kind == .none) {
            feedAuthorDepth = depth
        } else if (name.local == "pubDate" && name.kind.isRSS) || (name.kind == .dcterms && name.local == "issued")
                    || (name.local == "published" && name.kind.isAtom) {
            capture = Capture(field: .feedPublished, depth: depth, kind: .plain)
        } else if (name.local == "lastBuildDate" && name.kind.isRSS) || (name.kind == .dc && name.local == "date")
                    || (name.kind == .dcterms && name.local == "modified") || (name.local == "updated" && name.kind.isAtom) {
            capture = Capture(field: .feedUpdated, depth: depth, kind: .plain)
        } else if name.local == "link" {
            if name.kind.isAtom || (format == .atom10 && name.kind == .none) {
                if let href = attribute("href", in: attributes), let resolved = Self.resolve(href, against: base) {
                    let rel = attribute("rel", in: attributes) ?? "alternate"
                    feedAtomLinks.append((rel, attribute("type", in: attributes) ?? "", resolved))
                    feedLinks.append(Self.link(resolved, rel: rel, attributes, self))
                }
            } else if name.kind.isRSS {
                capture = Capture(field: .feedLink, depth: depth, kind: .plain)
            }
        }
    }

    func endElement(_ name: XMLName) {
        if rejection != nil { return }
        let depth = stack.count
        if let current = capture, current.depth == depth {
            capture = nil
            finishCapture(current)
        }
        if let authorDepth = atomAuthorDepth, authorDepth == depth {
            atomAuthorDepth = nil
            if let name = draft?.atomAuthorName, let email = draft?.atomAuthorEmail { draft?.authors.append((name, email)) }
            else if let name = draft?.atomAuthorName { draft?.authors.append((name, nil)) }
            else if let email = draft?.atomAuthorEmail { draft?.authors.append((nil, email)) }
        }
        if let authorDepth = feedAuthorDepth, authorDepth == depth { feedAuthorDepth = nil }
        if draft?.depth == depth, let current = draft.take() {
            items.append(finish(current))
        }
        if depth == 1 {
            finishFeed()
        }
        stack.removeLast()
        if let last = bases.last, last.depth == depth { bases.removeLast() }
        if stack.isEmpty, draft != nil {
            draft = nil
            droppedOpenItem = true
        }
    }

    /// The input ended: an item still open is incomplete (truncated document) and is dropped,
    /// so a half-transferred title is never pushed.
    func endOfInput() {
        if draft != nil {
            draft = nil
            droppedOpenItem = true
        }
        if !stack.isEmpty, feedLink == nil { finishFeed() }
    }

    func characters(_ bytes: UnsafeBufferPointer<UInt8>) {
        if capture != nil { captured.append(bytes) }
    }

    // MARK: Structure

    private func detectFormat(_ name: XMLName, attributes: XMLAttributes) {
        switch name.local.lowercased() {
        case "rss":
            let version = attribute("version", in: attributes) ?? "2.0"
            format = version.hasPrefix("0.9") ? .rss09x : .rss20
        case "rdf":
            format = .rss10
        case "feed":
            format = .atom10
        case "html":
            rejection = "an HTML page, not a feed"
        default:
            rejection = "the document's root element is <\(name.local)>, not rss, rdf:RDF or feed"
        }
    }

    private func isItemElement(_ name: XMLName) -> Bool {
        switch format {
        case .atom10: return name.local == "entry" && (name.kind.isAtom || name.kind == .none)
        case .rss10:
            if name.local == "item" && name.kind == .rss090 { format = .rss09x }
            return name.local == "item" && name.kind.isRSS
        case .rss20, .rss09x: return name.local == "item" && name.kind.isRSS
        case nil: return false
        }
    }

    private func startItemChild(_ name: XMLName, attributes: XMLAttributes, depth: Int, base: String?) {
        let ns = name.kind
        var field: Field?
        var kind = TextKind.plain
        let atomish = ns.isAtom || (format == .atom10 && ns == .none)
        if atomish {
            switch name.local {
            case "title": field = .title; kind = textKind(name, attributes)
            case "summary": field = .atomSummary; kind = textKind(name, attributes)
            case "content": field = .atomContent; kind = textKind(name, attributes)
            case "id": field = .atomId
            case "published", "issued": field = .published
            case "updated", "modified": field = .updated
            case "author":
                atomAuthorDepth = depth
                // Each <author> starts afresh; the first one is the item's author.
                if draft?.authors.isEmpty == false { draft?.atomAuthorName = nil; draft?.atomAuthorEmail = nil }
            case "category":
                if let term = attribute("term", in: attributes) ?? attribute("label", in: attributes) {
                    let clean = Self.collapse(term)
                    if !clean.isEmpty {
                        draft?.item.categories.append(clean)
                        draft?.item.tags.append(FeedTag(term: clean, scheme: attribute("scheme", in: attributes), label: attribute("label", in: attributes)))
                    }
                }
            case "link":
                if let href = attribute("href", in: attributes), let resolved = Self.resolve(href.trimmedASCIIWhitespace(), against: base) {
                    let rel = attribute("rel", in: attributes) ?? "alternate"
                    if rel == "enclosure" { draft?.item.enclosures.append(resolved) }
                    draft?.atomLinks.append((rel, attribute("type", in: attributes) ?? "", resolved))
                    draft?.item.links.append(Self.link(resolved, rel: rel, attributes, self))
                }
            default: break
            }
        } else if ns.isRSS {
            switch name.local {
            case "title": field = .title; kind = .maybeHTML
            case "link": field = .link
            case "description": field = .description; kind = .html
            case "guid":
                field = .guid
                if let permalink = attribute("isPermaLink", in: attributes) {
                    draft?.item.guidIsPermaLink = permalink.lowercased() != "false"
                } else {
                    draft?.item.guidIsPermaLink = true
                }
            case "pubDate": field = .pubDate
            case "author": field = .author
            case "summary":
                field = .rssSummary
                kind = .html
                if draft?.description == nil { draft?.summaryBeforeDescription = true }
            case "fullitem", "body":
                field = .contentEncoded
                kind = .html
                draft?.item.contentType = "text/html"
            case "category":
                field = .category
                draft?.pendingTag = FeedTag(term: "", scheme: attribute("domain", in: attributes), label: nil)
            case "enclosure":
                if let url = attribute("url", in: attributes)?.trimmedASCIIWhitespace(), !url.isEmpty,
                   let resolved = Self.resolve(url, against: base) {
                    draft?.item.enclosures.append(resolved)
                    draft?.item.links.append(FeedLink(href: resolved, rel: "enclosure", type: attribute("type", in: attributes),
                                                      length: attribute("length", in: attributes)))
                }
            default: break
            }
        } else if ns == .dc {
            switch name.local {
            case "date": field = .dcDate
            case "creator", "author": field = .dcCreator
            case "subject": field = .category
            case "title": field = .dcTitle
            case "description": if draft?.description == nil { field = .description; kind = .html }
            default: break
            }
        } else if ns == .xhtml, name.local == "body" {
            field = .contentEncoded
            kind = .xhtml
            draft?.item.contentType = "application/xhtml+xml"
        } else if ns == .dcterms {
            switch name.local {
            case "issued": field = .published
            case "modified": field = .updated
            case "created": field = .created
            default: break
            }
        } else if ns == .media, name.local == "title" {
            field = .dcTitle
        } else if ns == .media, name.local == "category" {
            field = .category
            draft?.pendingTag = FeedTag(term: "", scheme: attribute("scheme", in: attributes) ?? "http://search.yahoo.com/mrss/category_schema",
                                        label: attribute("label", in: attributes))
        } else if ns == .content, name.local == "encoded" {
            field = .contentEncoded
            kind = .html
            draft?.item.contentType = "text/html"
        }
        if field == .atomContent {
            let type = (attribute("type", in: attributes) ?? "text").lowercased()
            draft?.item.contentType = ["html": "text/html", "xhtml": "application/xhtml+xml", "text": "text/plain"][type] ?? type
        }
        if let field { capture = Capture(field: field, depth: depth, kind: kind) }
    }

    private func textKind(_ name: XMLName, _ attributes: XMLAttributes) -> TextKind {
        let type = (attribute("type", in: attributes) ?? "text").lowercased()
        if attribute("mode", in: attributes) == "escaped" { return .html }
        if attribute("mode", in: attributes) == "base64" { return .base64 }
        // Atom: any other media type that is not text or XML is base64-encoded content.
        // (Byte searches: Foundation's `contains` goes through NSString, 1 % of a parse.)
        if name.kind.isAtom || format == .atom10, type.utf8.contains(UInt8(ascii: "/")), !type.hasPrefix("text/"), type.utf8.firstRange(of: "xml".utf8) == nil {
            return .base64
        }
        switch type {
        case "html", "text/html": return .html
        case "xhtml", "application/xhtml+xml": return .xhtml
        default: return name.kind.isAtom || format == .atom10 ? .plain : .maybeHTML
        }
    }

    private func finishCapture(_ capture: Capture) {
        rawTextObserver?(capture.kind, Array(captured.bytes))
        if capture.field.mayHoldImage, capture.kind == .html || capture.kind == .maybeHTML,
           let draft, draft.htmlImage == nil,
           let src = ImageSource.firstImg(in: captured.bytes) {
            draft.htmlImage = Self.resolve(src, against: currentBase)
        }
        if capture.field == .contentEncoded || capture.field == .atomContent {
            // Full content is converted to plain text only when asked for (see `FeedText`).
            draft?.content = FeedText(markup: Array(captured.bytes), kind: capture.kind)
            return
        }
        let text = FeedText.plainText(captured.bytes, kind: capture.kind)
        switch capture.field {
        case .feedTitle: feedTitle = text.isEmpty ? nil : text
        case .feedLink: feedRSSLink = text.isEmpty ? nil : text
        case .feedSubtitle: feedSubtitle = text
        case .feedLanguage: feedLanguage = text.isEmpty ? nil : text
        case .feedAuthor: if !text.isEmpty { feedAuthor = Self.splitAuthor(text) }
        case .feedAuthorName: feedAuthor.0 = text
        case .feedAuthorEmail: feedAuthor.1 = text
        case .feedPublished: feedPublished = text
        case .feedUpdated: feedUpdated = text
        case .dcTitle: draft?.dcTitle = text
        case .created: draft?.item.createdText = text
        case .rssSummary: draft?.rssSummary = text
        case .feedId: feedId = text.isEmpty ? nil : text
        case .feedCategory: if !text.isEmpty { feedTags.append(FeedTag(term: text, scheme: pendingFeedTagScheme, label: nil)) }
        case .title: draft?.item.title = text
        case .link: draft?.rssLink = text
        case .description: draft?.description = text
        case .contentEncoded, .atomContent: break
        case .atomSummary: draft?.atomSummary = text
        case .guid: draft?.guid = text
        case .atomId: draft?.item.id = text
        case .pubDate: draft?.pubDate = text
        case .dcDate: draft?.dcDate = text
        case .published: draft?.published = text
        case .updated: draft?.updated = text
        case .author: draft?.author = text
        case .dcCreator:
            if draft?.author == nil { draft?.author = text }
            if !text.isEmpty { draft?.authors.append(Self.splitAuthor(text)) }
        case .atomAuthorName: draft?.atomAuthorName = text
        case .atomAuthorEmail: draft?.atomAuthorEmail = text
        case .category:
            if !text.isEmpty {
                draft?.item.categories.append(text)
                let pending = draft?.pendingTag
                draft?.item.tags.append(FeedTag(term: text, scheme: pending?.scheme, label: pending?.label))
            }
            draft?.pendingTag = nil
        }
    }

    private func finish(_ draft: Draft) -> FeedItem {
        // The item is moved out of the draft, not copied with its twenty-odd fields.
        var item = FeedItem()
        swap(&item, &draft.item)
        let base = currentBase
        if let guid = draft.guid, !guid.isEmpty { item.id = guid }
        if item.id?.isEmpty == true { item.id = nil }
        if item.title?.isEmpty == true { item.title = nil }
        // Link: RSS <link>; else the preferred Atom alternate; else a permalink guid.
        if let link = draft.rssLink, !link.isEmpty {
            item.link = Self.resolve(link, against: base) ?? link
        } else if let link = Self.preferredAlternate(draft.atomLinks) {
            item.link = link
        } else if let guid = draft.guid, item.guidIsPermaLink != false, guid.hasPrefix("http://") || guid.hasPrefix("https://") {
            item.link = guid
        } else if draft.guid == nil, let id = item.id, id.hasPrefix("http://") || id.hasPrefix("https://") {
            // An Atom entry (or RSS 1.0 item) without a link whose id is its address.
            item.link = id
        }
        var content = draft.content
        var description = draft.description
        if let rssSummary = draft.rssSummary {
            // <summary> and <description> in one RSS item: the first is the summary, the other the content.
            if let other = description, content == nil {
                content = FeedText(markup: Array((draft.summaryBeforeDescription ? other : rssSummary).utf8), kind: .plain)
                description = draft.summaryBeforeDescription ? rssSummary : other
            } else if description == nil {
                description = rssSummary
            }
        }
        // An empty summary stays empty (markup without text, e.g. an SVG), not absent.
        item.summary = description ?? draft.atomSummary ?? content?.text
        item.contentSource = content
        if item.title == nil, let title = draft.dcTitle, !title.isEmpty { item.title = title }
        item.publishedText = draft.pubDate ?? draft.published ?? draft.dcDate
        item.updatedText = draft.updated ?? draft.dcDate
        item.published = (draft.pubDate ?? draft.dcDate ?? draft.published).flatMap(FeedDates.parse)
            ?? draft.dcDate.flatMap(FeedDates.parse) ?? draft.published.flatMap(FeedDates.parse)
        item.updated = draft.updated.flatMap(FeedDates.parse)
        item.authors = draft.authors.map { FeedAuthor(name: $0.0, email: $0.1) }
        if let first = draft.authors.first, draft.atomAuthorName != nil || draft.atomAuthorEmail != nil {
            item.author = first.0
            item.authorEmail = first.1
        } else if let name = draft.atomAuthorName, !name.isEmpty {
            item.author = name
            item.authorEmail = draft.atomAuthorEmail
        } else if let email = draft.atomAuthorEmail, !email.isEmpty {
            item.authorEmail = email
        } else if let author = draft.author, !author.isEmpty {
            (item.author, item.authorEmail) = Self.splitAuthor(author)
        }
        if item.links.isEmpty, let link = item.link { item.links = [FeedLink(href: link, rel: "alternate", type: "text/html")] }
        item.image = ImageSource.pushable(draft.mediaImage?.url)
            ?? ImageSource.pushable(item.links.first { $0.rel == "enclosure" && ImageSource.isImageType($0.type) }?.href)
            ?? ImageSource.pushable(draft.htmlImage)
        return item
    }

    /// Whether a media element names an image: `medium="image"`, an image type, or, with
    /// neither, an image file name.
    static func isImage(medium: String?, type: String?, url: String) -> Bool {
        if let medium { return medium.lowercased() == "image" }
        if let type { return ImageSource.isImageType(type) }
        // Bytes, not Characters: a media element per picture size made `split` a quarter of
        // some feeds' parse time.
        let path = url.utf8.prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        return [".jpg", ".jpeg", ".png", ".gif", ".webp", ".avif"].contains { suffix in
            path.count >= suffix.utf8.count && zip(path.suffix(suffix.utf8.count), suffix.utf8).allSatisfy { $0 | 0x20 == $1 }
        }
    }

    private func finishFeed() {
        if let link = feedRSSLink {
            feedLink = Self.resolve(link, against: documentURL) ?? link
        } else {
            feedLink = Self.preferredAlternate(feedAtomLinks)
        }
    }

    /// "me@example.com (Name)", "Name (me@example.com)", "Name <me@example.com>" or a bare
    /// address, split into name and e-mail.
    static func splitAuthor(_ text: String) -> (String?, String?) {
        // Most authors are a plain name: nothing to split or trim.
        let utf8 = text.utf8
        if let first = utf8.first, let last = utf8.last, first > 0x20, first < 0x80, last > 0x20, last < 0x80,
           !utf8.contains(where: { $0 == UInt8(ascii: "(") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: "@") }) {
            return (text, nil)
        }
        // Trimmed of white space (Character's sense) without Foundation's NSString round trip.
        func trim<S: StringProtocol>(_ text: S) -> String {
            guard let first = text.firstIndex(where: { !$0.isWhitespace }), let last = text.lastIndex(where: { !$0.isWhitespace }) else { return "" }
            return String(text[first...last])
        }
        let trimmed = trim(text)
        let at = UInt8(ascii: "@")
        if let open = trimmed.firstIndex(where: { $0 == "(" || $0 == "<" }), let close = trimmed.lastIndex(where: { $0 == ")" || $0 == ">" }), open < close {
            let inside = trim(trimmed[trimmed.index(after: open)..<close])
            let outside = trim(trimmed[..<open] + trimmed[trimmed.index(after: close)...])
            if inside.utf8.contains(at) { return (outside.isEmpty ? nil : outside, inside) }
            if outside.utf8.contains(at) { return (inside.isEmpty ? nil : inside, outside) }
        }
        if trimmed.utf8.contains(at), !trimmed.utf8.contains(0x20) { return (nil, trimmed) }
        return (trimmed, nil)
    }

    static func link(_ href: String, rel: String, _ attributes: XMLAttributes, _ builder: FeedDocumentBuilder) -> FeedLink {
        FeedLink(href: href, rel: rel, type: builder.attribute("type", in: attributes), length: builder.attribute("length", in: attributes),
                 hreflang: builder.attribute("hreflang", in: attributes), title: builder.attribute("title", in: attributes))
    }

    private static func preferredAlternate(_ links: [(rel: String, type: String, href: String)]) -> String? {
        let alternates = links.filter { $0.rel == "alternate" }
        return (alternates.first { $0.type.utf8.firstRange(of: "html".utf8) != nil } ?? alternates.first)?.href
    }

    fileprivate func attribute(_ local: String, in attributes: XMLAttributes) -> String? {
        attributes.value(local) ?? (local == "about" ? attributes.value(local, namespace: FeedNamespace.rdf) : nil)
    }

    // MARK: Text

    private static let blockLike: Set<String> = ["p", "div", "br", "li", "tr", "td", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre"]

    /// Collapses runs of ASCII white space into one space and trims the ends.
    static func collapse(_ text: String) -> String {
        var text = text
        return text.withUTF8 { collapse($0) }
    }

    static func collapse(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { collapse($0) }
    }

    static func collapse(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { out in
            guard let base = bytes.baseAddress, let target = out.baseAddress else { return 0 }
            let n = bytes.count
            var count = 0, i = 0
            var pendingSpace = false
            while i < n {
                let byte = base[i]
                if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 || byte == 0x0C {
                    pendingSpace = count > 0
                    i += 1
                    continue
                }
                // A run of text, single spaces between words included, is copied whole.
                let end = i + 1 + bytescan_text_run(base + i + 1, n - i - 1, 0)
                if pendingSpace { target[count] = 0x20; count += 1; pendingSpace = false }
                (target + count).update(from: base + i, count: end - i)
                count += end - i
                i = end
            }
            return count
        }
    }

    /// A real tag (`<b>`, `</p>`, `<br/>`) or entity (`&amp;`, `&#8217;`): RSS titles are
    /// nominally plain text but publishers often escape HTML into them.
    static func looksLikeHTML(_ text: String) -> Bool {
        looksLikeHTML(Array(text.utf8))
    }

    static func looksLikeHTML(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { looksLikeHTML($0) }
    }

    static func looksLikeHTML(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "<"), i + 1 < bytes.count {
                let next = bytes[i + 1]
                if (next | 0x20) >= 0x61 && (next | 0x20) <= 0x7A || next == UInt8(ascii: "/") || next == UInt8(ascii: "!") {
                    if UnsafeBufferPointer(rebasing: bytes[(i + 1)...]).contains(UInt8(ascii: ">")) { return true }
                }
            } else if b == UInt8(ascii: "&") {
                var j = i + 1
                while j < bytes.count, j - i < 12, bytes[j] == UInt8(ascii: "#") || (bytes[j] | 0x20) >= 0x61 && (bytes[j] | 0x20) <= 0x7A || bytes[j] >= 0x30 && bytes[j] <= 0x39 { j += 1 }
                if j > i + 1, j < bytes.count, bytes[j] == UInt8(ascii: ";") { return true }
            }
            i += 1
        }
        return false
    }

    /// `reference` made absolute against `base` (RFC 3986); nil when it cannot be.
    static func resolve(_ reference: String, against base: String?) -> String? {
        let trimmed = reference.trimmedASCIIWhitespace()
        if trimmed.isEmpty { return base }
        if trimmed.hasPrefix("http://") || trimmed.hasPrefix("https://") { return trimmed }
        guard let base, let baseURL = URL(string: base) else { return URL(string: trimmed) != nil ? trimmed : nil }
        guard let resolved = URL(string: trimmed, relativeTo: baseURL) ?? URL(string: trimmed.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed) ?? trimmed, relativeTo: baseURL) else {
            return trimmed
        }
        return resolved.absoluteString
    }
}

/// A growable byte buffer for the text the SAX callbacks deliver. libxml2 calls back once per
/// entity reference in escaped HTML, often for a single byte; an Array's uniqueness check and
/// generic append on each call were 4 % of a parse (perf), so the buffer is kept by hand.
struct ByteBuffer: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int = 1 << 14) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    /// The bytes so far; valid until the next change.
    var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        if count + bytes.count > capacity { grow(to: count + bytes.count) }
        if bytes.count <= 8 {
            // Most runs are a character or a word (escaped markup arrives a reference at a
            // time): a loop costs less than calling memmove.
            for k in 0..<bytes.count { base[count + k] = source[k] }
        } else {
            (base + count).initialize(from: source, count: bytes.count)
        }
        count += bytes.count
    }

    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(to: count + 1) }
        base[count] = byte
        count += 1
    }

    mutating func removeAll() { count = 0 }

    private mutating func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        bigger.initialize(from: base, count: count)
        base.deallocate()
        base = bigger
        capacity = newCapacity
    }
}
