import Foundation
import NewsPushModel

/// Reads a feed document from SAX events: knows the open elements, the `xml:base` in force,
/// the item being read and whose text is being gathered, and asks the vocabularies
/// (`RSSBuilder`, `AtomBuilder`, `ExtensionElements`) what each element means.
final class FeedDocumentReader: SAXHandler {
    let text = CapturedText()
    private(set) var format: FeedFormat?
    /// Why the document is not a feed (its root element says so).
    private(set) var rejection: String?
    private(set) var channel = ChannelDraft()
    private(set) var items: [FeedItem] = []
    /// An item was still open when the document ended (and was left out).
    private(set) var droppedOpenItem = false
    /// Sees every captured text as written, before conversion (tests compare converters with it).
    var rawTextObserver: ((TextKind, [UInt8]) -> Void)?

    private struct Capture {
        enum Target {
            case channel(ChannelField)
            case item(ItemField)
        }
        var target: Target
        var depth: Int
        var kind: TextKind
    }

    /// For each open element, outermost first, whether it is an RSS `<channel>` (names are not
    /// kept: a stack of strings cost a retain and a release per element).
    private var stack: [Bool] = []
    /// The `xml:base` in force and the depth of the element that set it, only where one did
    /// (most documents have none: nothing to push per element).
    private var bases: [(depth: Int, base: String)] = []
    private var item: ItemDraft?
    private var capture: Capture?
    /// The depth of the Atom `<author>` being read, in the item and in the feed.
    private var itemAuthorDepth: Int?
    private var feedAuthorDepth: Int?
    private let documentURL: String?
    /// A namespace the document puts its own elements in that is not the dialect's (an `<rss>`
    /// root with `xmlns="https://cyber.harvard.edu/rss/rss.html"`, or even Atom's URI), and
    /// the kind its elements are read as.
    private var adopted: (namespace: UnsafeRawPointer, kind: NamespaceKind)?
    /// Elements named `item` or `entry` outside text and items, in any namespace: a document
    /// with some that yields no item is an error, not an empty feed. (Inside an item they need
    /// no counting: that item was read.)
    private(set) var itemElementsSeen = 0

    init(documentURL: String?) {
        self.documentURL = documentURL
    }

    private var currentBase: String? { bases.last?.base ?? documentURL }

    /// The feed's link, once the document has been read.
    var feedLink: String? { channel.link(documentURL: documentURL) }

    // MARK: Events

    func startElement(_ name: XMLName, attributes: XMLAttributes) {
        if rejection != nil { return }
        var name = name
        if let adopted, name.namespace == adopted.namespace { name.kind = adopted.kind }
        if stack.count == 1, format == .rss10, adopted == nil, name.kind == .other,
            name.local == "channel" || name.local == "item",
            let namespace = name.namespace
        {
            // RSS 1.0 whose channel and items are in a namespace of their own
            // ("http://purl.org/rss/1.0" without its slash, say): that namespace is RSS's here.
            adopted = (namespace, .otherRSS)
            name.kind = .otherRSS
        }
        stack.append(name.local == "channel" && name.kind.isRSS)
        let depth = stack.count
        if let xmlBase = attributes.value("base", namespace: FeedNamespace.xml) {
            bases.append((depth, FeedURL.resolve(xmlBase, against: currentBase) ?? xmlBase))
        }
        if depth == 1 {
            detectFormat(name, attributes: attributes)
            adoptRootNamespace(name)
        } else if capture != nil {
            markupInText(name, attributes: attributes)
        } else if let item {
            startInItem(name, attributes: attributes, item: item, depth: depth)
        } else if name.local == "item" || name.local == "entry", countItemElement(name) {
            let draft = ItemDraft(depth: depth)
            draft.item.id = attributes.value("about", namespace: FeedNamespace.rdf)
            item = draft
        } else {
            startInFeed(name, attributes: attributes, depth: depth)
        }
    }

    func endElement() {
        if rejection != nil { return }
        let depth = stack.count
        if let current = capture, current.depth == depth {
            capture = nil
            text.isOn = false
            finishCapture(current)
        }
        if itemAuthorDepth == depth {
            itemAuthorDepth = nil
            item?.closeAtomAuthor()
        }
        if feedAuthorDepth == depth { feedAuthorDepth = nil }
        if let open = item, open.depth == depth {
            item = nil
            items.append(open.finish(base: currentBase))
        }
        stack.removeLast()
        if let last = bases.last, last.depth == depth { bases.removeLast() }
        if stack.isEmpty, item != nil {
            item = nil
            droppedOpenItem = true
        }
    }

    /// The input ended: an item still open is incomplete (truncated document) and is dropped,
    /// so a half-transferred title is never pushed.
    func endOfInput() {
        if item != nil {
            item = nil
            droppedOpenItem = true
        }
    }

    // MARK: Structure

    private func detectFormat(_ name: XMLName, attributes: XMLAttributes) {
        switch name.local.lowercased() {
        case "rss":
            let version = attributes.value("version") ?? "2.0"
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

    /// Counts an element named `item` or `entry` and answers whether it is one of the
    /// document's items.
    private func countItemElement(_ name: XMLName) -> Bool {
        itemElementsSeen += 1
        return isItemElement(name)
    }

    /// An `<rss>` root in a namespace that is not RSS's (RSS has none) puts every element of
    /// the document in it by default: those elements are read as RSS. Likewise a `<feed>` root
    /// in a namespace that is not Atom's is read as Atom. Namespaces declared further down
    /// (`atom:link` in RSS) keep their meaning unless they are the root's.
    private func adoptRootNamespace(_ name: XMLName) {
        guard let namespace = name.namespace else { return }
        switch (format, name.kind) {
        case (.rss20, let kind), (.rss09x, let kind):
            if !kind.isRSS { adopted = (namespace, .otherRSS) }
        case (.atom10, let kind):
            if !kind.isAtom { adopted = (namespace, .atom) }
        default:
            break
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

    /// Whether an element is read with Atom's vocabulary: Atom's namespaces, and no namespace
    /// in an Atom document.
    private func isAtom(_ name: XMLName) -> Bool {
        name.kind.isAtom || (format == .atom10 && name.kind == .none)
    }

    /// An element inside an item.
    private func startInItem(_ name: XMLName, attributes: XMLAttributes, item: ItemDraft, depth: Int) {
        if ExtensionElements.mediaObject(name, attributes, item: item, base: self.currentBase) { return }
        if depth == item.depth + 1 {
            let reading: ElementReading<ItemField>
            if isAtom(name) {
                reading = AtomBuilder.entryChild(name, attributes, item: item, base: self.currentBase)
            } else if name.kind.isRSS {
                reading = RSSBuilder.itemChild(name, attributes, item: item, base: self.currentBase)
            } else {
                reading = ExtensionElements.itemChild(name, attributes, item: item)
            }
            switch reading {
            case .text(let field, let kind): startCapture(.item(field), depth: depth, kind: kind)
            case .person: itemAuthorDepth = depth
            case .ignored: break
            }
        } else if let authorDepth = itemAuthorDepth, depth == authorDepth + 1, name.kind.isAtom || name.kind == .none {
            switch AtomBuilder.personChild(name) {
            case .name: startCapture(.item(.atomAuthorName), depth: depth, kind: .plain)
            case .email: startCapture(.item(.atomAuthorEmail), depth: depth, kind: .plain)
            case nil: break
            }
        }
    }

    /// An element outside every item: the feed's own (children of RSS's `<channel>` or of
    /// Atom's `<feed>`), or their children.
    private func startInFeed(_ name: XMLName, attributes: XMLAttributes, depth: Int) {
        if let authorDepth = feedAuthorDepth, depth == authorDepth + 1 {
            switch AtomBuilder.personChild(name) {
            case .name: startCapture(.channel(.authorName), depth: depth, kind: .plain)
            case .email: startCapture(.channel(.authorEmail), depth: depth, kind: .plain)
            case nil: break
            }
            return
        }
        guard stack[stack.count - 2] || (depth == 2 && format == .atom10) else { return }
        if channel.language == nil, let lang = attributes.value("lang", namespace: FeedNamespace.xml) {
            channel.language = lang
        }
        let reading: ElementReading<ChannelField>
        if isAtom(name) {
            reading = AtomBuilder.feedChild(name, attributes, channel: &channel, base: self.currentBase)
        } else if name.kind.isRSS {
            reading = RSSBuilder.channelChild(name, attributes, channel: &channel)
        } else {
            reading = ExtensionElements.channelChild(name, attributes, channel: &channel)
        }
        switch reading {
        case .text(let field, let kind): startCapture(.channel(field), depth: depth, kind: kind)
        case .person: feedAuthorDepth = depth
        case .ignored: break
        }
    }

    // MARK: Text

    private static let blockLike: Set<String> = [
        "p", "div", "br", "li", "tr", "td", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre",
    ]

    private func startCapture(_ target: Capture.Target, depth: Int, kind: TextKind) {
        capture = Capture(target: target, depth: depth, kind: kind)
        text.buffer.removeAll()
        text.isOn = true
    }

    /// Markup inside a captured element (XHTML content, naked HTML in a description): its
    /// first image, and a space for a block.
    private func markupInText(_ name: XMLName, attributes: XMLAttributes) {
        if name.local == "img", let item, item.htmlImage == nil, let src = attributes.value("src") {
            item.htmlImage = FeedURL.resolve(src, against: currentBase)
        }
        if Self.blockLike.contains(name.local)
            || (name.local.utf8.contains { $0 >= 0x41 && $0 <= 0x5A }
                && Self.blockLike.contains(name.local.lowercased()))
        {
            text.buffer.append(0x20)
        }
    }

    private func finishCapture(_ capture: Capture) {
        let bytes = text.buffer.bytes
        rawTextObserver?(capture.kind, Array(bytes))
        switch capture.target {
        case .channel(let field):
            channel.set(field, Mojibake.repaired(PlainText.of(bytes, kind: capture.kind)))
        case .item(let field):
            guard let item else { return }
            let wantsImage =
                field.mayHoldImage && item.htmlImage == nil && (capture.kind == .html || capture.kind == .maybeHTML)
            if field == .content {
                // Full content is converted to plain text only when asked for (see `FeedText`).
                item.content = FeedText(markup: Array(bytes), kind: capture.kind)
                if wantsImage {
                    item.htmlImage = ImageSource.firstImg(in: bytes).flatMap {
                        FeedURL.resolve($0, against: currentBase)
                    }
                }
            } else if wantsImage {
                let (text, image) = PlainText.ofHTML(bytes, kind: capture.kind)
                item.set(field, Mojibake.repaired(text))
                switch image {
                case .none: break
                case .at(let start):
                    item.htmlImage = ImageSource.firstImg(in: bytes, from: start).flatMap {
                        FeedURL.resolve($0, against: currentBase)
                    }
                case .unknown:
                    item.htmlImage = ImageSource.firstImg(in: bytes).flatMap {
                        FeedURL.resolve($0, against: currentBase)
                    }
                }
            } else {
                item.set(field, Mojibake.repaired(PlainText.of(bytes, kind: capture.kind)))
            }
        }
    }
}

extension TextKind {
    /// How an element says its text is written (`type`, Atom 0.3's `mode`); `atom`: Atom's
    /// rules (plain text by default, other media types base64), else RSS's (plain text that
    /// may hold escaped HTML).
    static func declared(by attributes: XMLAttributes, atom: Bool) -> TextKind {
        let type = (attributes.value("type") ?? "text").lowercased()
        let mode = attributes.value("mode")
        if mode == "escaped" { return .html }
        if mode == "base64" { return .base64 }
        // (Byte searches: Foundation's `contains` goes through NSString, 1 % of a parse.)
        if atom, type.utf8.contains(UInt8(ascii: "/")), !type.hasPrefix("text/"), !type.containsASCII("xml") {
            return .base64
        }
        switch type {
        case "html", "text/html": return .html
        case "xhtml", "application/xhtml+xml": return .xhtml
        default: return atom ? .plain : .maybeHTML
        }
    }
}
