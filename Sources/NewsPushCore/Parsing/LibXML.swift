internal import CLibXML2
import Foundation

// The only file that talks to libxml2: a SAX2 driver for feeds and the HTML parser used to
// turn markup into plain text.

/// Receives the parts of an XML document as libxml2 reads them. Names and namespace URIs come
/// from libxml2's dictionary, so equal names arrive as equal `String`s cheaply (see `XMLNames`).
protocol XMLEventSink: AnyObject {
    func startElement(_ name: XMLName, attributes: [XMLAttribute])
    func endElement(_ name: XMLName)
    func characters(_ bytes: UnsafeBufferPointer<UInt8>)
}

/// An element or attribute name: namespace URI ("" for none) and local name.
struct XMLName: Equatable, Hashable {
    var namespace: String
    var local: String
}

struct XMLAttribute {
    var name: XMLName
    var value: String
}

/// Runs libxml2's SAX2 parser over bytes already cleaned by `FeedBytes` (UTF-8, no declaration).
final class XMLSAXParser {
    private let sink: any XMLEventSink
    /// libxml2 interns names in a dictionary: cache their Swift strings by address.
    private var names: [UnsafeRawPointer: String] = [:]
    private(set) var errors: [String] = []
    private(set) var wellFormed = true

    init(sink: any XMLEventSink) {
        self.sink = sink
    }

    fileprivate func string(_ pointer: UnsafePointer<xmlChar>?) -> String {
        guard let pointer else { return "" }
        let key = UnsafeRawPointer(pointer)
        if let cached = names[key] { return cached }
        let value = String(cString: pointer)
        names[key] = value
        return value
    }

    /// Parses `bytes`; with `recover`, keeps going after well-formedness errors.
    func parse(_ bytes: [UInt8], url: String?, recover: Bool) {
        // Only our callbacks: libxml2's default SAX2 handlers would build a tree and expect the
        // parser context as their context pointer, but ours is this object.
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = { context, localName, _, uri, _, _, attributeCount, _, attributes in
            guard let context, let localName else { return }
            let parser = Unmanaged<XMLSAXParser>.fromOpaque(context).takeUnretainedValue()
            var list: [XMLAttribute] = []
            if let attributes, attributeCount > 0 {
                list.reserveCapacity(Int(attributeCount))
                for i in 0..<Int(attributeCount) {
                    // Five pointers per attribute: localname, prefix, URI, value start, value end.
                    let base = i * 5
                    guard let attrName = attributes[base], let start = attributes[base + 3], let end = attributes[base + 4] else { continue }
                    let bytes = UnsafeBufferPointer(start: start, count: end - start)
                    var value = String(decoding: bytes, as: UTF8.self)
                    // Without entity substitution libxml2 keeps a referenced '&' in attribute
                    // values as "&#38;" (so a tree could be written back); the value means '&'.
                    if bytes.contains(UInt8(ascii: "&")) { value = value.replacingOccurrences(of: "&#38;", with: "&") }
                    list.append(XMLAttribute(name: XMLName(namespace: parser.string(attributes[base + 2]), local: parser.string(attrName)),
                                             value: value))
                }
            }
            parser.sink.startElement(XMLName(namespace: parser.string(uri), local: parser.string(localName)), attributes: list)
        }
        handler.endElementNs = { context, localName, _, uri in
            guard let context, let localName else { return }
            let parser = Unmanaged<XMLSAXParser>.fromOpaque(context).takeUnretainedValue()
            parser.sink.endElement(XMLName(namespace: parser.string(uri), local: parser.string(localName)))
        }
        let characters: charactersSAXFunc = { context, bytes, length in
            guard let context, let bytes, length > 0 else { return }
            let parser = Unmanaged<XMLSAXParser>.fromOpaque(context).takeUnretainedValue()
            parser.sink.characters(UnsafeBufferPointer(start: bytes, count: Int(length)))
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
                let message = error.pointee.message.map { String(cString: $0) }?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "error"
                parser.errors.append("line \(error.pointee.line): \(message)")
            }
        }

        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let context = xmlCreatePushParserCtxt(&handler, me, nil, 0, url) else {
            errors.append("libxml2 could not create a parser")
            wellFormed = false
            return
        }
        defer {
            if let doc = context.pointee.myDoc { xmlFreeDoc(doc) }
            xmlFreeParserCtxt(context)
        }
        // Never NOENT or DTDLOAD: external entities and DTDs stay inert; NONET forbids fetching.
        var options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
                            | XML_PARSE_COMPACT.rawValue | XML_PARSE_IGNORE_ENC.rawValue)
        if recover { options |= Int32(XML_PARSE_RECOVER.rawValue) }
        // A single text node may be larger than libxml2's default 10 MB limit; our own size cap
        // on the fetched body bounds memory instead.
        if bytes.count > 10_000_000 { options |= Int32(XML_PARSE_HUGE.rawValue) }
        xmlCtxtUseOptions(context, options)
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                // Feed the document in chunks: the push parser then never needs it whole twice.
                let chunk = 1 << 20
                var offset = 0
                while offset < chars.count {
                    let length = min(chunk, chars.count - offset)
                    let status = xmlParseChunk(context, chars.baseAddress! + offset, Int32(length), 0)
                    offset += length
                    if status != 0 && !recover { break }
                    if context.pointee.disableSAX != 0 && !recover { break }
                }
                xmlParseChunk(context, nil, 0, 1)
            }
        }
        if context.pointee.wellFormed == 0 { wellFormed = false }
    }
}

/// HTML to plain text with libxml2's HTML parser: entities decoded, tags removed, block
/// elements separated by spaces, scripts and styles dropped. White space is not yet collapsed.
enum HTMLText {
    static func text(fromHTML html: String) -> String {
        var utf8 = Array(html.utf8)
        if utf8.isEmpty { return "" }
        // The HTML parser wants a container; a body fragment works for any snippet.
        let prefix = Array("<html><body>".utf8)
        utf8.insert(contentsOf: prefix, at: 0)
        let options = Int32(HTML_PARSE_RECOVER.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue
                            | HTML_PARSE_NONET.rawValue | HTML_PARSE_NOIMPLIED.rawValue | HTML_PARSE_COMPACT.rawValue)
        let doc = utf8.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                htmlReadMemory(chars.baseAddress, Int32(chars.count), nil, "UTF-8", options)
            }
        }
        guard let doc else { return html }
        defer { xmlFreeDoc(doc) }
        var out: [UInt8] = []
        out.reserveCapacity(html.utf8.count)
        collect(xmlDocGetRootElement(doc), into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static let blockElements: Set<String> = [
        "p", "div", "br", "li", "ul", "ol", "tr", "td", "th", "table", "h1", "h2", "h3", "h4", "h5", "h6",
        "blockquote", "pre", "hr", "section", "article", "header", "footer", "figure", "figcaption", "dd", "dt",
    ]
    private static let skippedElements: Set<String> = ["script", "style", "noscript", "template", "head"]

    private static func collect(_ node: xmlNodePtr?, into out: inout [UInt8]) {
        var current = node
        while let n = current {
            switch n.pointee.type {
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = n.pointee.content {
                    var p = content
                    while p.pointee != 0 { out.append(p.pointee); p += 1 }
                }
            case XML_ELEMENT_NODE:
                let name = n.pointee.name.map { String(cString: $0).lowercased() } ?? ""
                if skippedElements.contains(name) { break }
                let block = blockElements.contains(name)
                if block { out.append(0x20) }
                collect(n.pointee.children, into: &out)
                if block { out.append(0x20) }
            default:
                break
            }
            current = n.pointee.next
        }
    }

    /// The code point of an HTML named entity (`nbsp` → 160), or nil when HTML has no such name.
    static func entityCodePoint(_ name: String) -> UInt32? {
        guard let entity = htmlEntityLookup(name) else { return nil }
        return entity.pointee.value
    }
}

/// The yardstick of the parse benchmark: libxml2's SAX2 tokenizer over the same bytes with
/// callbacks that only count, so the cost of newspush's own work can be seen beside it.
public enum BareSAXPass {
    /// Parses `data` with libxml2 (recover mode) and returns the number of elements seen.
    public static func run(_ data: Data) -> Int {
        final class Counter { var elements = 0 }
        let counter = Counter()
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = { context, _, _, _, _, _, _, _, _ in
            guard let context else { return }
            Unmanaged<Counter>.fromOpaque(context).takeUnretainedValue().elements += 1
        }
        handler.characters = { _, _, _ in }
        handler.cdataBlock = { _, _, _ in }
        handler.serror = { _, _ in }
        let me = Unmanaged.passUnretained(counter).toOpaque()
        guard let context = xmlCreatePushParserCtxt(&handler, me, nil, 0, nil) else { return 0 }
        defer { xmlFreeParserCtxt(context) }
        xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_RECOVER.rawValue | XML_PARSE_NOERROR.rawValue
                                         | XML_PARSE_NOWARNING.rawValue | XML_PARSE_HUGE.rawValue))
        data.withUnsafeBytes { raw in
            let chars = raw.bindMemory(to: CChar.self)
            var offset = 0
            while offset < chars.count {
                let length = min(1 << 20, chars.count - offset)
                xmlParseChunk(context, chars.baseAddress! + offset, Int32(length), 0)
                offset += length
            }
            xmlParseChunk(context, nil, 0, 1)
        }
        return counter.elements
    }
}
