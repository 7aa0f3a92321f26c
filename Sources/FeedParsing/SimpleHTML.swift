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
    private static let blockTags = [
        "p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre",
        "section", "article", "header", "footer", "figure", "figcaption",
        "table", "tbody", "thead", "tfoot", "tr", "td", "th",
    ]
    private static let voidTags = ["br", "hr", "img", "wbr", "source", "col", "meta", "link"]
    /// Table parts that add no space (libxml2's text has none for them).
    private static let silentTableTags = ["colgroup"]
    private static let inlineTags = [
        "a", "b", "i", "u", "s", "em", "strong", "span", "small", "sup", "sub", "code", "cite", "q", "abbr",
        "strike", "del", "ins", "font", "big", "tt", "mark", "time", "picture", "iframe",
    ]
    /// Blocks that no start tag closes implicitly: another block may open inside them.
    private static let containers = [
        "div", "section", "article", "header", "footer", "figure", "figcaption", "blockquote", "ul", "ol", "li",
        "td", "th",
    ]
    /// Table parts and the only parents they are read in here (libxml2 repairs any other).
    private static let tableParents: [String: [String]] = [
        "tbody": ["table"], "thead": ["table"], "tfoot": ["table"], "tr": ["table", "tbody", "thead", "tfoot"],
        "td": ["tr"], "th": ["tr"],
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
    private static let liKey = key("li".utf8), brKey = key("br".utf8), hrKey = key("hr".utf8),
        headKey = key("head".utf8)
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
    private static func write(
        _ html: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>, firstImage: inout Int?
    ) -> Int? {
        guard let base = html.baseAddress, let outBase = out.baseAddress else { return html.isEmpty ? 0 : nil }
        return withUnsafeTemporaryAllocation(of: Tag.self, capacity: 48) { storage in
            var writer = Writer(
                html: html, base: base, out: out, outBase: outBase, open: OpenElements(storage: storage))
            let written = writer.run()
            firstImage = writer.firstImage
            return written
        }
    }

    /// One pass over a fragment: text runs are copied whole, white space collapsed, tags and
    /// references read one at a time. Every step answers false when the fragment is for libxml2.
    private struct Writer {
        let html: UnsafeBufferPointer<UInt8>
        let base: UnsafePointer<UInt8>
        let out: UnsafeMutableBufferPointer<UInt8>
        let outBase: UnsafeMutablePointer<UInt8>
        var open: OpenElements
        var count = 0
        /// Never expected (see `string`), but a write past the end would corrupt memory.
        var overflow = false
        var i = 0
        var runStart = 0
        /// White space (or a block boundary) seen since the last text written.
        var pendingSpace = false
        /// Where the first `<img` tag starts.
        var firstImage: Int?
        var n: Int { html.count }

        init(
            html: UnsafeBufferPointer<UInt8>, base: UnsafePointer<UInt8>, out: UnsafeMutableBufferPointer<UInt8>,
            outBase: UnsafeMutablePointer<UInt8>, open: OpenElements
        ) {
            self.html = html
            self.base = base
            self.out = out
            self.outBase = outBase
            self.open = open
        }

        /// The bytes written, or nil for libxml2.
        mutating func run() -> Int? {
            let classes = byteClass
            while i < n {
                let b = html[i]
                switch classes[Int(b)] {
                case 0:
                    // Text: on to the end of its run (single spaces between words belong to it).
                    i += 1 + ByteScan.textRun(base + i + 1, n - i - 1, markup: true)
                case 1:
                    flush()
                    guard tag() else { return nil }
                case 2:
                    flush()
                    guard reference() else { return nil }
                default:
                    whiteSpace(b)
                }
            }
            flush()
            return overflow ? nil : count
        }

        @inline(__always)
        private mutating func put(_ byte: UInt8) {
            guard count < out.count else {
                overflow = true
                return
            }
            out[count] = byte
            count += 1
        }

        /// Writes the text run that ends here.
        @inline(__always)
        private mutating func flush() {
            guard runStart < i else { return }
            if pendingSpace, count > 0 { put(0x20) }
            pendingSpace = false
            guard count + (i - runStart) <= out.count else {
                overflow = true
                return
            }
            UnsafeMutableRawPointer(outBase + count).copyMemory(from: base + runStart, byteCount: i - runStart)
            count += i - runStart
        }

        /// Text made by a reference: a run of its own.
        @inline(__always)
        private mutating func append(_ value: UInt32) {
            if pendingSpace, count > 0 { put(0x20) }
            pendingSpace = false
            UTF8.encode(Unicode.Scalar(value) ?? "\u{FFFD}") { put($0) }
        }

        @inline(__always)
        private static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
        @inline(__always)
        private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        @inline(__always)
        private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x09 || b == 0x0D }

        /// White space: one space between two characters of text needs no collapsing (the run
        /// goes on); anything else ends the run and becomes one space before the next text.
        @inline(__always)
        private mutating func whiteSpace(_ b: UInt8) {
            if b == 0x20, i > runStart, i + 1 < n, html[i + 1] > 0x20, html[i + 1] != UInt8(ascii: "<") {
                i += 1
                return
            }
            flush()
            pendingSpace = true
            i += 1
            runStart = i
        }

        // MARK: Tags

        /// A tag (or comment) at `i`.
        private mutating func tag() -> Bool {
            var j = i + 1
            if j + 2 < n, html[j] == UInt8(ascii: "!"), html[j + 1] == UInt8(ascii: "-"),
                html[j + 2] == UInt8(ascii: "-")
            {
                return comment(from: j + 3)
            }
            let closing = j < n && html[j] == UInt8(ascii: "/")
            if closing { j += 1 }
            let nameStart = j
            guard let (name, nameEnd) = tagName(from: nameStart), let tag = known(name, nameStart..<nameEnd) else {
                return false
            }
            guard let end = endOfAttributes(from: nameEnd) else { return false }
            j = end
            guard let selfClosing = selfClosing(tag, closing: closing, end: j, nameEnd: nameEnd) else { return false }
            guard apply(tag, closing: closing, selfClosing: selfClosing, end: &j) else { return false }
            i = j + 1
            if tag.role == .rawText, !closing {
                guard let after = endOfRawText(UnsafeBufferPointer(rebasing: html[nameStart..<nameEnd])) else {
                    return false
                }
                i = after
            }
            runStart = i
            return true
        }

        /// A comment is skipped whole; an unterminated one is left to libxml2.
        private mutating func comment(from start: Int) -> Bool {
            var j = start
            while j + 2 < n,
                !(html[j] == UInt8(ascii: "-") && html[j + 1] == UInt8(ascii: "-") && html[j + 2] == UInt8(ascii: ">"))
            {
                j += 1
            }
            guard j + 2 < n else { return false }
            i = j + 3
            runStart = i
            return true
        }

        /// The tag's name, read and hashed as `key` does in one pass, and where it ends (at white
        /// space, '/' or '>').
        @inline(__always)
        private func tagName(from nameStart: Int) -> (UInt64, Int)? {
            var name = keyBasis
            var j = nameStart
            while j < n {
                let c = html[j]
                guard Self.isLetter(c) || (j > nameStart && Self.isDigit(c)) else { break }
                name = (name ^ UInt64(c | 0x20)) &* keyPrime
                j += 1
            }
            guard j > nameStart, j < n else { return nil }
            let after = html[j]
            guard after == UInt8(ascii: ">") || after == UInt8(ascii: "/") || Self.isSpace(after) else { return nil }
            return (name, j)
        }

        /// What the loop knows of the element named `name`. An element libxml2 does not know
        /// (SVG's svg and path, custom elements) opens and closes nothing by itself, so it reads
        /// like an inline element; elements libxml2 knows but this loop does not list have rules
        /// of their own (nil).
        @inline(__always)
        private func known(_ name: UInt64, _ range: Range<Int>) -> Tag? {
            let (slots, slotMask) = roleSlots
            if let listed = slots[Int(name & slotMask)], listed.key == name { return listed }
            guard !HTMLParser.isKnownElement(UnsafeBufferPointer(rebasing: html[range])) else { return nil }
            return Tag(key: name, role: .inline)
        }

        /// Attributes: skips to the '>' outside quotes (sixteen bytes at a time to the next quote
        /// or bracket; a quoted value, often a long URL, is skipped with memchr).
        @inline(__always)
        private func endOfAttributes(from start: Int) -> Int? {
            var j = start
            while j < n, html[j] != UInt8(ascii: ">") {
                j += ByteScan.tag(base + j, n - j)
                guard j < n else { break }
                let c = html[j]
                if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                    guard let close = memchr(base + j + 1, Int32(c), n - j - 1) else { return nil }
                    j = UnsafePointer<UInt8>(close.assumingMemoryBound(to: UInt8.self)) - base + 1
                    continue
                }
                if c == UInt8(ascii: "<") { return nil }
                break
            }
            return j < n ? j : nil
        }

        /// "<path d='…'/>": libxml2 ends any element written this way at once. A '/' that may
        /// end an unquoted attribute value (`<a href=x/>`) is left to libxml2 (nil).
        @inline(__always)
        private func selfClosing(_ tag: Tag, closing: Bool, end j: Int, nameEnd: Int) -> Bool? {
            guard !closing, tag.role != .void, html[j - 1] == UInt8(ascii: "/") else { return false }
            let before = html[j - 2]
            guard
                j - 1 == nameEnd || Self.isSpace(before) || before == UInt8(ascii: "\"") || before == UInt8(ascii: "'"),
                tag.role != .rawText
            else { return nil }
            return true
        }

        /// Applies the nesting rules of the tag's role; `end` moves past a `<head></head>`.
        @inline(__always)
        private mutating func apply(_ tag: Tag, closing: Bool, selfClosing: Bool, end j: inout Int) -> Bool {
            switch tag.role {
            case .void: return void(tag, closing: closing)
            case .rawText: return !closing
            case .document: return document(tag, closing: closing, selfClosing: selfClosing, end: &j)
            case .inline, .block: return element(tag, closing: closing, selfClosing: selfClosing)
            }
        }

        /// libxml2 ignores </img> and the like but reads </br> as <br>.
        @inline(__always)
        private mutating func void(_ tag: Tag, closing: Bool) -> Bool {
            let name = tag.key
            if closing { return name != brKey && name != hrKey }
            if tag.tableParents != 0 {
                // <col> only right inside a table or column group.
                guard let top = open.last, top.tableBit & tag.tableParents != 0 else { return false }
            } else if let top = open.last, top.tableOnly || (name == hrKey && !top.container) {
                return false
            }
            if name == brKey || name == hrKey { pendingSpace = true }
            if name == imgKey, firstImage == nil { firstImage = i }
            return true
        }

        /// Whole documents in a description ("<html><head></head><body>…</body></html>"): read
        /// here only outside any other element and with an empty head. libxml2 drops text after
        /// </html> and reads a late <html> or <body> its own way: start tags only before any
        /// text, end tags only where nothing but white space and </html> follows.
        private func document(_ tag: Tag, closing: Bool, selfClosing: Bool, end j: inout Int) -> Bool {
            guard open.isEmpty, !selfClosing else { return false }
            var k = j + 1
            while k < n, Self.isSpace(html[k]) { k += 1 }
            func follows(_ literal: String) -> Bool {
                let bytes = Array(literal.utf8)
                return k + bytes.count <= n && bytes.indices.allSatisfy { html[k + $0] | 0x20 == bytes[$0] }
            }
            if closing { return tag.key != headKey && (k == n || follows("</html>")) }
            guard count == 0 else { return false }
            if tag.key == headKey {
                guard follows("</head>") else { return false }
                j = k + 6
            }
            return true
        }

        /// Inline and block elements open and close in order; a table part only right inside its
        /// parent, and a block only inside a container.
        @inline(__always)
        private mutating func element(_ tag: Tag, closing: Bool, selfClosing: Bool) -> Bool {
            if closing {
                guard open.last?.key == tag.key else { return false }
                open.removeLast()
            } else {
                if tag.tableParents != 0 {
                    guard let top = open.last, top.tableBit & tag.tableParents != 0 else { return false }
                } else if let top = open.last, top.tableOnly {
                    // Anything else directly inside a table or row is moved by libxml2.
                    return false
                } else if tag.role == .block, let top = open.last,
                    !top.container || (tag.key == liKey && top.key == liKey)
                {
                    return false
                }
                if !selfClosing { guard open.push(tag) else { return false } }
            }
            if tag.role == .block { pendingSpace = true }
            return true
        }

        /// libxml2 (recovering) ends script or style content at "</" and the same name, in any
        /// case: where the text goes on after its end tag.
        private func endOfRawText(_ rawName: UnsafeBufferPointer<UInt8>) -> Int? {
            var k = i
            while k + 1 + rawName.count < n {
                if html[k] == UInt8(ascii: "<"), html[k + 1] == UInt8(ascii: "/"),
                    rawName.indices.allSatisfy({ (html[k + 2 + $0] | 0x20) == (rawName[$0] | 0x20) })
                {
                    break
                }
                k += 1
            }
            var close = k + 2 + rawName.count
            while close < n, html[close] != UInt8(ascii: ">") { close += 1 }
            return close < n ? close + 1 : nil
        }

        // MARK: References

        /// A character reference or entity at `i`; a bare '&' and names HTML does not define stay
        /// text.
        private mutating func reference() -> Bool {
            var j = i + 1
            // libxml2 keeps or drops a bare '&' at the very end depending on what came before.
            guard j < n else { return false }
            if html[j] == UInt8(ascii: "#") {
                j += 1
                let hex = j < n && (html[j] | 0x20) == UInt8(ascii: "x")
                if hex { j += 1 }
                let digitsStart = j
                let value: UInt32
                (value, j) = FeedBytes.referenceDigits(html, from: digitsStart, hex: hex, maxDigits: 7)
                guard j > digitsStart, j < n, html[j] == UInt8(ascii: ";"), FeedBytes.xmlAllowed(value) else {
                    return false
                }
                append(value)
            } else if Self.isLetter(html[j]) {
                let nameStart = j
                while j < n, Self.isLetter(html[j]) || Self.isDigit(html[j]) { j += 1 }
                guard j < n else { return false }
                guard html[j] == UInt8(ascii: ";"),
                    let value = HTMLEntities.codePoint(UnsafeBufferPointer(rebasing: html[nameStart..<j])),
                    value > 0
                else {
                    // An entity HTML does not define, or one without its ';' ("AT&T", "&D class"),
                    // is text to libxml2: '&' and the name, and what follows.
                    runStart = i
                    i = j
                    return true
                }
                append(value)
            } else {
                // A bare '&' ("R & D", "&&", "&(") is kept as text: a new run starts with it.
                runStart = i
                i += 1
                return true
            }
            i = j + 1
            runStart = i
            return true
        }
    }
}
