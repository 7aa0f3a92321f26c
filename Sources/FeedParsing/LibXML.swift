internal import CLibXML2
import Foundation
import NewsPushModel

// The only file that talks to libxml2: the SAX layer under the feed builders (XMLSAXParser),
// and libxml2's HTML parser and entity table for turning markup into text. Nothing here knows
// what a feed element means.

/// The attributes of the element being started, read from libxml2's array only when asked for
/// (most elements' attributes are never needed). Valid only during `startElement`.
struct XMLAttributes {
    /// Five pointers per attribute: local name, prefix, namespace URI, value start, value end.
    fileprivate let pointers: UnsafeMutablePointer<UnsafePointer<UInt8>?>?
    let count: Int

    /// The value of the attribute `local` in `namespace` ("" for none), or nil. The name is
    /// matched without regard to ASCII case (`ispermalink`, `URL`), as feedparser does.
    func value(_ local: StaticString, namespace: StaticString = "") -> String? {
        guard let pointers, count > 0 else { return nil }
        // Names compared as C strings with the literals' own bytes (no bridging per lookup:
        // most elements' attributes are looked at several times).
        let uri = UnsafeRawPointer(namespace.utf8Start).assumingMemoryBound(to: CChar.self)
        func cString(_ p: UnsafePointer<UInt8>) -> UnsafePointer<CChar> {
            UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self)
        }
        func matches(_ base: Int) -> Bool {
            guard let name = pointers[base], Self.sameIgnoringASCIICase(name, local) else { return false }
            guard let attributeURI = pointers[base + 2] else { return uri[0] == 0 }
            return strcmp(cString(attributeURI), uri) == 0
        }
        var base = 0
        while base < count * 5, !matches(base) { base += 5 }
        guard base < count * 5, let start = pointers[base + 3], let end = pointers[base + 4] else { return nil }
        let bytes = UnsafeBufferPointer(start: start, count: end - start)
        // Without entity substitution libxml2 keeps a referenced '&' in attribute values as
        // "&#38;" (so a tree could be written back); the value means '&'.
        guard bytes.contains(UInt8(ascii: "&")) else { return String(decoding: bytes, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var k = 0
        while k < bytes.count {
            if bytes[k] == UInt8(ascii: "&"), k + 4 < bytes.count, bytes[k + 1] == UInt8(ascii: "#"),
                bytes[k + 2] == UInt8(ascii: "3"),
                bytes[k + 3] == UInt8(ascii: "8"), bytes[k + 4] == UInt8(ascii: ";")
            {
                out.append(UInt8(ascii: "&"))
                k += 5
            } else {
                out.append(bytes[k])
                k += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether the C string `name` is `literal` in any ASCII case. (`strcasecmp` goes through
    /// the locale: half a percent of a parse, with `xml:base` looked up on every element.)
    @inline(__always)
    private static func sameIgnoringASCIICase(_ name: UnsafePointer<UInt8>, _ literal: StaticString) -> Bool {
        let expected = literal.utf8Start
        for i in 0..<literal.utf8CodeUnitCount where name[i] != expected[i] {
            // Only letters may differ, by their case bit (a name ending early stops at its NUL).
            let lower = name[i] | 0x20
            guard lower == expected[i] | 0x20, lower >= 0x61, lower <= 0x7A else { return false }
        }
        return name[literal.utf8CodeUnitCount] == 0
    }
}

/// What a SAX consumer is told: start and end tags. Text is not handed up a run at a time
/// (libxml2 calls back once per entity reference in escaped HTML, often for one byte): the
/// SAX layer appends it to the consumer's `text` while the consumer has it switched on.
protocol SAXHandler: AnyObject {
    /// The text of the element being read, gathered by the SAX layer.
    var text: CapturedText { get }
    func startElement(_ name: XMLName, attributes: XMLAttributes)
    /// The innermost open element ended (its name is the one started last: libxml2 matches
    /// end tags, so it is not looked up again).
    func endElement()
}

/// The text of the element a consumer reads: appended to while `isOn`.
final class CapturedText {
    var isOn = false
    var buffer = ByteBuffer()
}

/// Runs libxml2's SAX2 parser over bytes already cleaned by `FeedBytes` (UTF-8, no declaration)
/// and hands start and end tags to a `SAXHandler` (names and namespace URIs come from libxml2's
/// dictionary, so each distinct name becomes a `String` once), gathering text into the
/// handler's `CapturedText`.
final class XMLSAXParser {
    private let handler: any SAXHandler
    private let text: CapturedText
    /// libxml2 interns names in a dictionary: cache their Swift strings by address (with the
    /// namespace kind, for names that are namespace URIs).
    private var names: [UnsafeRawPointer: (String, NamespaceKind)] = [:]
    private(set) var errors: [String] = []
    private(set) var wellFormed = true
    /// The parse ran past `deadline` and was stopped.
    private(set) var outOfTime = false
    private let deadline: ContinuousClock.Instant?
    private var context: xmlParserCtxtPtr?
    private var eventsUntilClockCheck = 512

    init(handler: any SAXHandler, deadline: ContinuousClock.Instant? = nil) {
        self.handler = handler
        self.text = handler.text
        self.deadline = deadline
    }

    /// Looks at the clock every 512 elements (a clock read per element would cost more than
    /// the element) and stops libxml2 once the deadline has passed.
    @inline(__always)
    fileprivate func checkBudget() {
        eventsUntilClockCheck -= 1
        guard eventsUntilClockCheck <= 0, let deadline else { return }
        eventsUntilClockCheck = 512
        if ContinuousClock.now > deadline, let context {
            outOfTime = true
            xmlStopParser(context)
        }
    }

    /// A direct-mapped cache in front of `names`: a feed has a few dozen distinct names, and a
    /// pointer comparison is far cheaper than hashing on every start and end tag.
    private var recent = [(UnsafeRawPointer?, String, NamespaceKind)](repeating: (nil, "", .none), count: 256)

    fileprivate func string(_ pointer: UnsafePointer<xmlChar>?) -> String {
        named(pointer).0
    }

    /// The name at `pointer` and, were it a namespace URI, its kind.
    fileprivate func named(_ pointer: UnsafePointer<xmlChar>?) -> (String, NamespaceKind) {
        guard let pointer else { return ("", .none) }
        let key = UnsafeRawPointer(pointer)
        let slot = Int(truncatingIfNeeded: (UInt(bitPattern: key) >> 3) & 255)
        if recent[slot].0 == key { return (recent[slot].1, recent[slot].2) }
        let value: (String, NamespaceKind)
        if let cached = names[key] {
            value = cached
        } else {
            let string = String(cString: pointer)
            value = (Self.canonical(string), NamespaceKind(string))
            names[key] = value
        }
        recent[slot] = (key, value.0, value.1)
        return value
    }

    /// Element names are matched without regard to case, as feedparser does (`<ITEM>`,
    /// `<pubdate>` and `<PubDate>` are read): a name is lower-cased, or given the spelling the
    /// builders use for the few that have capitals. Done once per distinct name (the cache
    /// above), not per element.
    static func canonical(_ name: String) -> String {
        let lower = name.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? name.lowercased() : name
        return mixedCase[lower] ?? lower
    }

    private static let mixedCase = [
        "pubdate": "pubDate", "lastbuilddate": "lastBuildDate", "managingeditor": "managingEditor", "rdf": "RDF",
    ]

    /// The parser behind a callback's context pointer, borrowed: `parse` keeps it alive while
    /// libxml2 calls back, and a retain and release on every text run cost more than the
    /// callback's own work (measured: 8 % of a parse went to reference counting).
    @inline(__always)
    fileprivate static func with(_ context: UnsafeMutableRawPointer, _ body: (XMLSAXParser) -> Void) {
        Unmanaged<XMLSAXParser>.fromOpaque(context)._withUnsafeGuaranteedRef(body)
    }

    fileprivate func name(_ uri: UnsafePointer<xmlChar>?, _ localName: UnsafePointer<xmlChar>) -> XMLName {
        XMLName(kind: named(uri).1, local: string(localName), namespace: uri.map(UnsafeRawPointer.init))
    }

    /// Parses `bytes`; with `recover`, keeps going after well-formedness errors.
    func parse(_ bytes: UnsafeBufferPointer<UInt8>, url: String?, recover: Bool) {
        var handler = Self.saxHandler()
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let context = xmlCreatePushParserCtxt(&handler, me, nil, 0, url) else {
            errors.append("libxml2 could not create a parser")
            wellFormed = false
            return
        }
        self.context = context
        defer {
            self.context = nil
            if let doc = context.pointee.myDoc { xmlFreeDoc(doc) }
            xmlFreeParserCtxt(context)
        }
        // Never NOENT or DTDLOAD: external entities and DTDs stay inert; NONET forbids fetching.
        var options = Int32(
            XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
                | XML_PARSE_COMPACT.rawValue | XML_PARSE_IGNORE_ENC.rawValue)
        if recover { options |= Int32(XML_PARSE_RECOVER.rawValue) }
        // A single text node may be larger than libxml2's default 10 MB limit; our own size cap
        // on the fetched body bounds memory instead.
        if bytes.count > 10_000_000 { options |= Int32(XML_PARSE_HUGE.rawValue) }
        xmlCtxtUseOptions(context, options)
        feed(bytes, to: context, recover: recover)
        if context.pointee.wellFormed == 0 { wellFormed = false }
    }

    /// Feeds the document in chunks: the push parser then never needs it whole twice. Stops at
    /// the first error unless recovering, and when the parse budget runs out.
    private func feed(_ bytes: UnsafeBufferPointer<UInt8>, to context: xmlParserCtxtPtr, recover: Bool) {
        bytes.withMemoryRebound(to: CChar.self) { chars in
            guard let start = chars.baseAddress else { return }
            let chunk = 1 << 20
            var offset = 0
            while offset < chars.count, !outOfTime {
                let length = min(chunk, chars.count - offset)
                let status = xmlParseChunk(context, start + offset, Int32(length), 0)
                offset += length
                if status != 0 && !recover { break }
                if context.pointee.disableSAX != 0 && !recover { break }
                if let deadline, ContinuousClock.now > deadline { outOfTime = true }
            }
            xmlParseChunk(context, nil, 0, 1)
        }
    }

    /// Only our callbacks: libxml2's default SAX2 handlers would build a tree and expect the
    /// parser context as their context pointer, but ours is this object.
    private static func saxHandler() -> xmlSAXHandler {
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = { context, localName, _, uri, _, _, attributeCount, _, attributes in
            guard let context, let localName else { return }
            let list = XMLAttributes(
                pointers: attributes.map {
                    UnsafeMutableRawPointer($0).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
                },
                count: Int(attributeCount))
            XMLSAXParser.with(context) {
                $0.checkBudget()
                $0.handler.startElement($0.name(uri, localName), attributes: list)
            }
        }
        handler.endElementNs = { context, _, _, _ in
            guard let context else { return }
            XMLSAXParser.with(context) { $0.handler.endElement() }
        }
        let characters: charactersSAXFunc = { context, bytes, length in
            guard let context, let bytes, length > 0 else { return }
            XMLSAXParser.with(context) { parser in
                if parser.text.isOn { parser.text.buffer.append(UnsafeBufferPointer(start: bytes, count: Int(length))) }
            }
        }
        handler.characters = characters
        handler.cdataBlock = characters
        handler.ignorableWhitespace = characters
        handler.serror = { context, error in
            guard let context, let error else { return }
            let parser = Unmanaged<XMLSAXParser>.fromOpaque(context).takeUnretainedValue()
            let level = error.pointee.level
            if level == XML_ERR_WARNING { return }
            parser.wellFormed = false
            if parser.errors.count < 20 {
                let message =
                    error.pointee.message.map { String(cString: $0) }?.trimmingCharacters(in: .whitespacesAndNewlines)
                    ?? "error"
                parser.errors.append("line \(error.pointee.line): \(message)")
            }
        }
        return handler
    }
}

/// HTML to text with libxml2's HTML parser: entities decoded, tags removed, block elements
/// separated by spaces, scripts and styles dropped; white space is left as it is (`PlainText`
/// collapses it). The parser runs in SAX mode, so no tree is built for the few characters kept.
enum HTMLParser {
    private final class Collector {
        var out: [UInt8] = []
        /// Depth inside `script`, `style` and similar elements, whose text is not shown.
        var skipped = 0
    }

    /// The text of any HTML by libxml2's HTML parser (white space not yet collapsed).
    static func text(_ html: [UInt8]) -> [UInt8] {
        if html.isEmpty { return [] }
        let collector = Collector()
        collector.out.reserveCapacity(html.count)
        var handler = htmlSAXHandler()
        handler.startElement = { context, name, _ in
            guard let context, let name else { return }
            let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
            switch HTMLParser.role(name) {
            case .skipped: collector.skipped += 1
            case .block: collector.out.append(0x20)
            case .inline: break
            }
        }
        handler.endElement = { context, name in
            guard let context, let name else { return }
            let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
            switch HTMLParser.role(name) {
            case .skipped: collector.skipped = max(0, collector.skipped - 1)
            case .block: collector.out.append(0x20)
            case .inline: break
            }
        }
        let characters: charactersSAXFunc = { context, bytes, length in
            guard let context, let bytes, length > 0 else { return }
            let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
            if collector.skipped == 0 {
                collector.out.append(contentsOf: UnsafeBufferPointer(start: bytes, count: Int(length)))
            }
        }
        handler.characters = characters
        handler.ignorableWhitespace = characters
        // Script and style bodies arrive as CDATA blocks; they are never text.
        handler.cdataBlock = { _, _, _ in }
        let me = Unmanaged.passUnretained(collector).toOpaque()
        guard let context = htmlCreatePushParserCtxt(&handler, me, nil, 0, nil, XML_CHAR_ENCODING_UTF8) else {
            return html
        }
        defer {
            if let doc = context.pointee.myDoc { xmlFreeDoc(doc) }
            htmlFreeParserCtxt(context)
        }
        htmlCtxtUseOptions(
            context,
            Int32(
                HTML_PARSE_RECOVER.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue
                    | HTML_PARSE_NONET.rawValue | HTML_PARSE_NOIMPLIED.rawValue | HTML_PARSE_NODEFDTD.rawValue))
        // The HTML parser wants a container; a body start tag works for any snippet.
        _ = htmlParseChunk(context, "<html><body>", 12, 0)
        html.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                _ = htmlParseChunk(context, chars.baseAddress, Int32(chars.count), 1)
            }
        }
        return collector.out
    }

    private enum Role { case block, skipped, inline }

    /// Whether libxml2's HTML parser knows an element of this name (any case): it then has
    /// rules for it (implied ends, allowed parents) that an unknown element does not have.
    static func isKnownElement(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        withUnsafeTemporaryAllocation(of: xmlChar.self, capacity: name.count + 1) { buffer in
            _ = buffer.initialize(from: name)
            buffer[name.count] = 0
            return htmlTagLookup(buffer.baseAddress) != nil
        }
    }

    /// What an element does to the text; names come from the HTML parser, lower case.
    private static func role(_ name: UnsafePointer<xmlChar>) -> Role {
        // Compare the NUL-terminated name byte by byte: no String per element.
        func equals(_ literal: StaticString) -> Bool {
            literal.withUTF8Buffer { bytes in
                for (i, byte) in bytes.enumerated() where name[i] != byte { return false }
                return name[bytes.count] == 0
            }
        }
        switch name[0] {
        case UInt8(ascii: "p"): return name[1] == 0 || equals("pre") ? .block : .inline
        case UInt8(ascii: "b"): return equals("br") || equals("blockquote") ? .block : .inline
        case UInt8(ascii: "d"): return equals("div") || equals("dd") || equals("dt") ? .block : .inline
        case UInt8(ascii: "l"): return equals("li") ? .block : .inline
        case UInt8(ascii: "u"): return equals("ul") ? .block : .inline
        case UInt8(ascii: "o"): return equals("ol") ? .block : .inline
        case UInt8(ascii: "t"):
            if equals("tr") || equals("td") || equals("th") || equals("table") { return .block }
            return equals("template") ? .skipped : .inline
        case UInt8(ascii: "h"):
            if name[1] >= UInt8(ascii: "1") && name[1] <= UInt8(ascii: "6") && name[2] == 0 || equals("hr")
                || equals("header")
            {
                return .block
            }
            return equals("head") ? .skipped : .inline
        case UInt8(ascii: "s"):
            if equals("section") { return .block }
            return equals("script") || equals("style") ? .skipped : .inline
        case UInt8(ascii: "a"): return equals("article") ? .block : .inline
        case UInt8(ascii: "f"): return equals("footer") || equals("figure") || equals("figcaption") ? .block : .inline
        case UInt8(ascii: "n"): return equals("noscript") ? .skipped : .inline
        default: return .inline
        }
    }
}

/// HTML's named character references (`&nbsp;` → 160), as libxml2's HTML parser knows them.
enum HTMLEntities {
    /// The code point of an HTML named entity (`nbsp` → 160), or nil when HTML has no such name.
    static func codePoint(_ name: String) -> UInt32? {
        var name = name
        return name.withUTF8 { codePoint($0) }
    }

    /// How many entities the table behind `codePoint` holds (tests: libxml2 has 253).
    static var count: Int { entityTable.count }

    /// libxml2's own lookup, which `codePoint` must agree with (tests).
    static func libxml2CodePoint(_ name: String) -> UInt32? {
        htmlEntityLookup(name).map { $0.pointee.value }
    }

    /// `codePoint` for a name given as bytes.
    static func codePoint(_ name: UnsafeBufferPointer<UInt8>) -> UInt32? {
        // libxml2's htmlEntityLookup compares the name with each of its 253 entries in turn;
        // feeds are full of &nbsp; and &rsquo;, so the table is read once into a sorted array.
        guard let key = packedEntityName(name) else { return nil }
        var low = 0, high = entityTable.count
        while low < high {
            let middle = (low + high) / 2
            if entityTable[middle].name < key { low = middle + 1 } else { high = middle }
        }
        return low < entityTable.count && entityTable[low].name == key ? entityTable[low].value : nil
    }

    /// A name of 1–8 bytes (every HTML 4 entity name) as one integer; nil for any other length.
    private static func packedEntityName(_ name: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard (1...8).contains(name.count) else { return nil }
        var key: UInt64 = 0
        for (i, byte) in name.enumerated() { key |= UInt64(byte) << (8 * UInt64(i)) }
        return key
    }

    /// libxml2's HTML entities (names and code points), sorted by packed name. The table is not
    /// exported, so it is read back through htmlEntityValueLookup over the code points it covers.
    private static let entityTable: [(name: UInt64, value: UInt32)] = {
        var table: [(name: UInt64, value: UInt32)] = []
        for value in UInt32(1)...0x2FFF {
            guard let entity = htmlEntityValueLookup(value), entity.pointee.value == value,
                let name = entity.pointee.name
            else { continue }
            let length = strlen(name)
            if let key = name.withMemoryRebound(
                to: UInt8.self, capacity: length, { packedEntityName(UnsafeBufferPointer(start: $0, count: length)) })
            {
                table.append((key, value))
            }
        }
        return table.sorted { $0.name < $1.name }
    }()
}
