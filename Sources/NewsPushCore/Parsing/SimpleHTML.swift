import Foundation
import NewsPushModel


/// A fast path for `HTMLParser.text`: the text of the simple HTML most feed summaries are (paragraphs,
/// links, emphasis, images, lists, named and numeric references). libxml2's HTML parser reads
/// a character at a time and was most of the parse time on real feeds; this loop gives the same
/// text for such fragments and answers nil for anything else (comments, scripts, unknown tags,
/// references it does not know, a stray `<`, nesting libxml2 would repair), which then goes to
/// libxml2. Tests compare both on every HTML text of the real-world corpus and on random
/// fragments.
enum SimpleHTML {
    /// Block elements add a space; inline ones nothing. Elements libxml2 opens or closes by
    /// itself in ways not modelled here (definition lists, `center`, forms…) are not listed.
    private static let blockTags = ["p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre",
                                    "section", "article", "header", "footer", "figure", "figcaption",
                                    "table", "tbody", "thead", "tfoot", "tr", "td", "th"]
    private static let voidTags = ["br", "hr", "img", "wbr", "source", "col", "meta", "link"]
    /// Table parts that add no space (libxml2's text has none for them).
    private static let silentTableTags = ["colgroup"]
    private static let inlineTags = ["a", "b", "i", "u", "s", "em", "strong", "span", "small", "sup", "sub", "code", "cite", "q", "abbr",
                                     "strike", "del", "ins", "font", "big", "tt", "mark", "time", "picture", "iframe"]
    /// Blocks that no start tag closes implicitly: another block may open inside them.
    private static let containers = ["div", "section", "article", "header", "footer", "figure", "figcaption", "blockquote", "ul", "ol", "li",
                                     "td", "th"]
    /// Table parts and the only parents they are read in here (libxml2 repairs any other).
    private static let tableParents: [String: [String]] = [
        "tbody": ["table"], "thead": ["table"], "tfoot": ["table"], "tr": ["table", "tbody", "thead", "tfoot"], "td": ["tr"], "th": ["tr"],
        "colgroup": ["table"], "col": ["table", "colgroup"],
    ]
    /// Elements only table parts may open inside.
    private static let tableOnly = ["table", "tbody", "thead", "tfoot", "tr", "colgroup"]

    /// `rawText`: script and style, whose content is never text and runs to their end tag.
    /// `document`: html, head and body, which libxml2 has already opened around the fragment
    /// (see `HTMLParser.text`) and so ignores when a fragment brings its own.
    private enum Role { case block, inline, void, rawText, document }

    /// What the loop knows of an element: its role and its place in the nesting rules, so an
    /// open element is checked against the next one without hashing either name again.
    private struct Tag {
        var key: UInt64
        var role: Role
        /// Another block may open inside it (see `containers`).
        var container = false
        /// Only table parts may open inside it.
        var tableOnly = false
        /// The element's bit among the table parents, and the bits of the parents a table part
        /// needs (0: not a table part).
        var tableBit: UInt8 = 0
        var tableParents: UInt8 = 0
    }

    /// Tags by name key, direct-mapped on the key's low bits: one array read per tag instead
    /// of hashing the key again for a Dictionary. The slot count is the smallest power of two
    /// (from 64) that leaves no two of the fixed names in one slot.
    private static let roleSlots: (slots: [Tag?], mask: UInt64) = {
        var tags: [Tag] = []
        for name in blockTags { tags.append(Tag(key: key(name.utf8), role: .block)) }
        for name in inlineTags + silentTableTags { tags.append(Tag(key: key(name.utf8), role: .inline)) }
        for name in voidTags { tags.append(Tag(key: key(name.utf8), role: .void)) }
        for name in ["script", "style"] { tags.append(Tag(key: key(name.utf8), role: .rawText)) }
        for name in ["html", "head", "body"] { tags.append(Tag(key: key(name.utf8), role: .document)) }
        let parentNames = Array(Set(tableParents.values.joined())).sorted()
        func bit(_ name: String) -> UInt8 { parentNames.firstIndex(of: name).map { 1 << UInt8($0) } ?? 0 }
        for index in tags.indices {
            func named(_ names: [String]) -> Bool { names.contains { key($0.utf8) == tags[index].key } }
            tags[index].container = named(containers)
            tags[index].tableOnly = named(tableOnly)
            for name in parentNames where key(name.utf8) == tags[index].key { tags[index].tableBit = bit(name) }
            for (part, parents) in tableParents where key(part.utf8) == tags[index].key {
                tags[index].tableParents = parents.reduce(0) { $0 | bit($1) }
            }
        }
        var size = 64
        while Set(tags.map { $0.key & UInt64(size - 1) }).count < tags.count { size *= 2 }
        var slots = [Tag?](repeating: nil, count: size)
        for tag in tags { slots[Int(tag.key & UInt64(size - 1))] = tag }
        return (slots, UInt64(size - 1))
    }()

    /// How many slots the role table needed (tests keep it small).
    static var roleSlotCount: Int { roleSlots.slots.count }

    /// What each byte is to the text loop: 0 text, 1 '<', 2 '&', 3 ASCII white space.
    private static let byteClass: [UInt8] = (0..<256).map { b in
        b == 0x3C ? 1 : b == 0x26 ? 2 : (b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 || b == 0x0C) ? 3 : 0
    }
    private static let liKey = key("li".utf8), brKey = key("br".utf8), hrKey = key("hr".utf8), headKey = key("head".utf8)
    private static let imgKey = key("img".utf8)

    /// A tag name, lower-cased and hashed (FNV-1a), so a tag costs no String.
    private static func key<C: Collection>(_ name: C) -> UInt64 where C.Element == UInt8 {
        var hash = keyBasis
        for byte in name { hash = (hash ^ UInt64(byte | 0x20)) &* keyPrime }
        return hash
    }
    private static let keyBasis: UInt64 = 0xcbf2_9ce4_8422_2325, keyPrime: UInt64 = 0x100_0000_01b3

    static func text(_ html: [UInt8]) -> [UInt8]? {
        html.withUnsafeBufferPointer { string($0) }.map { Array($0.utf8) }
    }

    /// The text with white space collapsed as `PlainText.collapse` does (runs of
    /// ASCII white space become one space, none at the ends), or nil for libxml2. It is written
    /// straight into the string's storage: the text is never longer than the HTML (a tag or
    /// white space gives at most one space, a reference at most as many bytes as it is long).
    static func string(_ html: UnsafeBufferPointer<UInt8>) -> String? {
        var image: Int?
        return string(html, firstImage: &image)
    }

    /// `string(_:)`, and where the first `<img` tag starts (the loop reads every tag anyway,
    /// so an item's picture costs no second search of its description).
    static func string(_ html: UnsafeBufferPointer<UInt8>, firstImage: inout Int?) -> String? {
        guard html.count > 0 else { return "" }
        var answered = true
        var image: Int?
        let text = String(unsafeUninitializedCapacity: html.count) { buffer in
            guard let written = write(html, into: buffer, firstImage: &image) else {
                answered = false
                return 0
            }
            return written
        }
        firstImage = image
        return answered ? text : nil
    }

    /// The open elements, innermost last, in storage on the stack (no heap allocation per
    /// text); nesting deeper than it holds is left to libxml2. libxml2 closes elements
    /// implicitly (a block opening inside a paragraph, an end tag that skips an open element)
    /// and ignores or invents elements for end tags that close nothing; such fragments are left
    /// to it too.
    private struct OpenElements {
        let storage: UnsafeMutableBufferPointer<Tag>
        var count = 0
        var last: Tag? { count > 0 ? storage[count - 1] : nil }
        var isEmpty: Bool { count == 0 }
        mutating func push(_ tag: Tag) -> Bool {
            guard count < storage.count else { return false }
            storage.initializeElement(at: count, to: tag)
            count += 1
            return true
        }
        mutating func removeLast() { count -= 1 }
    }

    /// The text of `html` written into `out`; the number of bytes written, or nil for libxml2.
    private static func write(_ html: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>, firstImage: inout Int?) -> Int? {
        withUnsafeTemporaryAllocation(of: Tag.self, capacity: 48) { storage in
            write(html, into: out, open: OpenElements(storage: storage), firstImage: &firstImage)
        }
    }

    private static func write(_ html: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>, open: OpenElements,
                              firstImage: inout Int?) -> Int? {
        var open = open
        var count = 0
        // Never expected (see `string`), but a write past the end would corrupt memory.
        var overflow = false
        func put(_ byte: UInt8) {
            guard count < out.count else { overflow = true; return }
            out[count] = byte
            count += 1
        }
        let n = html.count
        var i = 0
        var runStart = 0
        // White space (or a block boundary) seen since the last text written.
        var pendingSpace = false
        func flush() {
            guard runStart < i else { return }
            if pendingSpace, count > 0 { put(0x20) }
            pendingSpace = false
            guard count + (i - runStart) <= out.count else { overflow = true; return }
            UnsafeMutableRawPointer(out.baseAddress! + count).copyMemory(from: html.baseAddress! + runStart, byteCount: i - runStart)
            count += i - runStart
        }
        /// Text made by a reference: a run of its own.
        func append(_ value: UInt32) {
            if pendingSpace, count > 0 { put(0x20) }
            pendingSpace = false
            UTF8.encode(Unicode.Scalar(value) ?? "\u{FFFD}") { put($0) }
        }
        func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        let classes = byteClass
        let (slots, slotMask) = roleSlots
        let base = html.baseAddress!
        while i < n {
            let b = html[i]
            let kind = classes[Int(b)]
            if kind == 0 {
                // Text: on to the end of its run (single spaces between words belong to it).
                i += 1 + ByteScan.textRun(base + i + 1, n - i - 1, markup: true)
                continue
            }
            if b == UInt8(ascii: "<") {
                flush()
                var j = i + 1
                // A comment is skipped whole; an unterminated one is left to libxml2.
                if j + 2 < n, html[j] == UInt8(ascii: "!"), html[j + 1] == UInt8(ascii: "-"), html[j + 2] == UInt8(ascii: "-") {
                    j += 3
                    while j + 2 < n, !(html[j] == UInt8(ascii: "-") && html[j + 1] == UInt8(ascii: "-") && html[j + 2] == UInt8(ascii: ">")) { j += 1 }
                    guard j + 2 < n else { return nil }
                    i = j + 3
                    runStart = i
                    continue
                }
                let closing = j < n && html[j] == UInt8(ascii: "/")
                if closing { j += 1 }
                let nameStart = j
                // The name, read and hashed as `key` does in one pass.
                var name = keyBasis
                while j < n {
                    let c = html[j]
                    guard isLetter(c) || (j > nameStart && isDigit(c)) else { break }
                    name = (name ^ UInt64(c | 0x20)) &* keyPrime
                    j += 1
                }
                guard j > nameStart, j < n else { return nil }
                // The name ends at white space, '/' or '>'.
                let after = html[j]
                guard after == UInt8(ascii: ">") || after == UInt8(ascii: "/") || after == 0x20 || after == 0x0A || after == 0x09 || after == 0x0D else { return nil }
                let nameEnd = j
                let tag: Tag
                if let listed = slots[Int(name & slotMask)], listed.key == name {
                    tag = listed
                } else {
                    // An element libxml2 does not know (SVG's svg and path, custom elements)
                    // opens and closes nothing by itself, so it reads like an inline element.
                    // Elements libxml2 knows but this loop does not list have rules of their own.
                    guard !HTMLParser.isKnownElement(UnsafeBufferPointer(rebasing: html[nameStart..<nameEnd])) else { return nil }
                    tag = Tag(key: name, role: .inline)
                }
                let role = tag.role
                // Attributes: skip to the '>' outside quotes (sixteen bytes at a time to the next
                // quote or bracket; a quoted value, often a long URL, is skipped with memchr).
                while j < n, html[j] != UInt8(ascii: ">") {
                    j += ByteScan.tag(base + j, n - j)
                    guard j < n else { break }
                    let c = html[j]
                    if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                        guard let close = memchr(html.baseAddress! + j + 1, Int32(c), n - j - 1) else { return nil }
                        j = UnsafePointer<UInt8>(close.assumingMemoryBound(to: UInt8.self)) - html.baseAddress! + 1
                        continue
                    }
                    if c == UInt8(ascii: "<") { return nil }
                    break
                }
                guard j < n else { return nil }
                // "<path d='…'/>": libxml2 ends any element written this way at once. A '/' that
                // may end an unquoted attribute value (`<a href=x/>`) is left to libxml2.
                var selfClosing = false
                if !closing, role != .void, html[j - 1] == UInt8(ascii: "/") {
                    let before = html[j - 2]
                    guard j - 1 == nameEnd || before == 0x20 || before == 0x0A || before == 0x09 || before == 0x0D
                            || before == UInt8(ascii: "\"") || before == UInt8(ascii: "'"), role != .rawText else { return nil }
                    selfClosing = true
                }
                switch role {
                case .void:
                    // libxml2 ignores </img> and the like but reads </br> as <br>.
                    if closing { guard name != brKey && name != hrKey else { return nil }; break }
                    if tag.tableParents != 0 {
                        // <col> only right inside a table or column group.
                        guard let top = open.last, top.tableBit & tag.tableParents != 0 else { return nil }
                    } else if let top = open.last, top.tableOnly || (name == hrKey && !top.container) { return nil }
                    if name == brKey || name == hrKey { pendingSpace = true }
                    if name == imgKey, firstImage == nil { firstImage = i }
                case .rawText:
                    guard !closing else { return nil }
                case .document:
                    // Whole documents in a description ("<html><head></head><body>…</body></html>"):
                    // read here only outside any other element and with an empty head.
                    // libxml2 drops text after </html> and reads a late <html> or <body> its own way:
                    // start tags only before any text, end tags only where nothing but white space
                    // and </html> follows.
                    guard open.isEmpty, !selfClosing else { return nil }
                    var k = j + 1
                    while k < n, html[k] == 0x20 || html[k] == 0x0A || html[k] == 0x09 || html[k] == 0x0D { k += 1 }
                    func follows(_ literal: String) -> Bool {
                        let bytes = Array(literal.utf8)
                        return k + bytes.count <= n && bytes.indices.allSatisfy { html[k + $0] | 0x20 == bytes[$0] }
                    }
                    if closing {
                        guard name != headKey, k == n || follows("</html>") else { return nil }
                    } else {
                        guard count == 0 else { return nil }
                        if name == headKey {
                            guard follows("</head>") else { return nil }
                            j = k + 6
                        }
                    }
                case .inline, .block:
                    if closing {
                        guard open.last?.key == name else { return nil }
                        open.removeLast()
                    } else {
                        if tag.tableParents != 0 {
                            // A table part opens only right inside its parent.
                            guard let top = open.last, top.tableBit & tag.tableParents != 0 else { return nil }
                        } else if let top = open.last, top.tableOnly {
                            // Anything else directly inside a table or row is moved by libxml2.
                            return nil
                        } else if role == .block, let top = open.last, !top.container || (name == liKey && top.key == liKey) {
                            return nil
                        }
                        if !selfClosing { guard open.push(tag) else { return nil } }
                    }
                    if role == .block { pendingSpace = true }
                }
                i = j + 1
                if role == .rawText, !closing {
                    // libxml2 (recovering) ends the content at "</" and the same name, in any case.
                    let rawName = UnsafeBufferPointer(rebasing: html[nameStart..<nameEnd])
                    var k = i
                    while k + 1 + rawName.count < n {
                        if html[k] == UInt8(ascii: "<"), html[k + 1] == UInt8(ascii: "/"),
                           rawName.indices.allSatisfy({ (html[k + 2 + $0] | 0x20) == (rawName[$0] | 0x20) }) { break }
                        k += 1
                    }
                    // Past the end tag itself.
                    var close = k + 2 + rawName.count
                    while close < n, html[close] != UInt8(ascii: ">") { close += 1 }
                    guard close < n else { return nil }
                    i = close + 1
                }
                runStart = i
                continue
            }
            if b == UInt8(ascii: "&") {
                flush()
                var j = i + 1
                // libxml2 keeps or drops a bare '&' at the very end depending on what came before.
                guard j < n else { return nil }
                if html[j] == UInt8(ascii: "#") {
                    j += 1
                    let hex = j < n && (html[j] | 0x20) == UInt8(ascii: "x")
                    if hex { j += 1 }
                    let digitsStart = j
                    let value: UInt32
                    (value, j) = FeedBytes.referenceDigits(html, from: digitsStart, hex: hex, maxDigits: 7)
                    guard j > digitsStart, j < n, html[j] == UInt8(ascii: ";"), FeedBytes.xmlAllowed(value) else { return nil }
                    append(value)
                } else if isLetter(html[j]) {
                    let nameStart = j
                    while j < n, isLetter(html[j]) || isDigit(html[j]) { j += 1 }
                    guard j < n else { return nil }
                    if html[j] == UInt8(ascii: ";"), let value = HTMLEntities.codePoint(UnsafeBufferPointer(rebasing: html[nameStart..<j])), value > 0 {
                        append(value)
                    } else {
                        // An entity HTML does not define, or one without its ';' ("AT&T",
                        // "&D class"), is text to libxml2: '&' and the name, and what follows.
                        runStart = i
                        i = j
                        continue
                    }
                } else {
                    // A bare '&' ("R & D", "&&", "&(") is kept as text: a new run starts with it.
                    runStart = i
                    i += 1
                    continue
                }
                i = j + 1
                runStart = i
                continue
            }
            if b <= 0x20, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 || b == 0x0C {
                // One space between two characters of text needs no collapsing: the run goes on.
                if b == 0x20, i > runStart, i + 1 < n, html[i + 1] > 0x20, html[i + 1] != UInt8(ascii: "<") {
                    i += 1
                    continue
                }
                flush()
                pendingSpace = true
                i += 1
                runStart = i
                continue
            }
            i += 1
        }
        flush()
        return overflow ? nil : count
    }
}
