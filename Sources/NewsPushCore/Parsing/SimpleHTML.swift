/// A fast path for `HTMLText`: the text of the simple HTML most feed summaries are (paragraphs,
/// links, emphasis, images, lists, named and numeric references). libxml2's HTML parser reads
/// a character at a time and was most of the parse time on real feeds; this loop gives the same
/// text for such fragments and answers nil for anything else (comments, scripts, unknown tags,
/// references it does not know, a stray `<`), which then goes to libxml2. A test compares both
/// on every summary of the real-world corpus.
enum SimpleHTML {
    /// Tags that only add a space (block) or nothing (inline) to the text.
    private static let blockTags: Set<String> = [
        "p", "div", "br", "li", "ul", "ol", "tr", "td", "th", "table", "h1", "h2", "h3", "h4", "h5", "h6",
        "blockquote", "pre", "hr", "section", "article", "header", "footer", "figure", "figcaption", "dd", "dt", "dl",
        "tbody", "thead", "tfoot",
    ]
    private static let inlineTags: Set<String> = [
        "a", "b", "i", "u", "s", "em", "strong", "span", "img", "small", "sup", "sub", "code", "cite", "q", "abbr",
        "strike", "del", "ins", "font", "big", "tt", "mark", "time", "picture", "source", "wbr", "center", "nobr", "iframe",
    ]

    /// `rawText`: script and style, whose content is never text and runs to their end tag.
    private enum Role { case block, inline, rawText }

    /// The tables above keyed by the lower-case name packed into an integer (names of up to
    /// eight bytes), so a tag costs no String.
    private static let packedRoles: [UInt64: Role] = {
        var table: [UInt64: Role] = [:]
        for name in blockTags where name.utf8.count <= 8 { table[pack(Array(name.utf8)[...])] = .block }
        for name in inlineTags where name.utf8.count <= 8 { table[pack(Array(name.utf8)[...])] = .inline }
        for name in ["script", "style"] { table[pack(Array(name.utf8)[...])] = .rawText }
        return table
    }()

    private static func pack<C: Collection>(_ name: C) -> UInt64 where C.Element == UInt8 {
        var value: UInt64 = 0
        for byte in name { value = value << 8 | UInt64(byte | 0x20) }
        return value
    }

    private static func role(_ name: UnsafeBufferPointer<UInt8>) -> Role? {
        if name.count <= 8 { return packedRoles[pack(name)] }
        let string = String(decoding: name, as: UTF8.self).lowercased()
        return blockTags.contains(string) ? .block : inlineTags.contains(string) ? .inline : nil
    }

    static func text(_ html: [UInt8]) -> [UInt8]? {
        html.withUnsafeBufferPointer { text($0) }
    }

    static func text(_ html: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(html.count)
        let n = html.count
        var i = 0
        var runStart = 0
        func flush() {
            if runStart < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: html[runStart..<i])) }
        }
        func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        while i < n {
            let b = html[i]
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
                while j < n, isLetter(html[j]) || (j > nameStart && isDigit(html[j])) { j += 1 }
                guard j > nameStart, j < n else { return nil }
                // The name ends at white space, '/' or '>'.
                let after = html[j]
                guard after == UInt8(ascii: ">") || after == UInt8(ascii: "/") || after == 0x20 || after == 0x0A || after == 0x09 || after == 0x0D else { return nil }
                let nameEnd = j
                guard let role = role(UnsafeBufferPointer(rebasing: html[nameStart..<nameEnd])) else { return nil }
                // Attributes: skip to the '>' outside quotes.
                var quote: UInt8 = 0
                while j < n {
                    let c = html[j]
                    if quote != 0 {
                        if c == quote { quote = 0 }
                    } else if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                        quote = c
                    } else if c == UInt8(ascii: "<") {
                        return nil
                    } else if c == UInt8(ascii: ">") {
                        break
                    }
                    j += 1
                }
                guard j < n else { return nil }
                if role == .block { out.append(0x20) }
                i = j + 1
                if role == .rawText, !closing {
                    // libxml2 (recovering) ends the content at "</" and the same name, in any case.
                    let name = UnsafeBufferPointer(rebasing: html[nameStart..<nameEnd])
                    var k = i
                    while k + 1 + name.count < n {
                        if html[k] == UInt8(ascii: "<"), html[k + 1] == UInt8(ascii: "/"),
                           name.indices.allSatisfy({ (html[k + 2 + $0] | 0x20) == (name[$0] | 0x20) }) { break }
                        k += 1
                    }
                    guard k + 1 + name.count < n else { return nil }
                    i = k
                }
                runStart = i
                continue
            }
            if b == UInt8(ascii: "&") {
                flush()
                var j = i + 1
                guard j < n else { out.append(b); i += 1; runStart = i; continue }
                if html[j] == UInt8(ascii: "#") {
                    j += 1
                    let hex = j < n && (html[j] | 0x20) == UInt8(ascii: "x")
                    if hex { j += 1 }
                    let digitsStart = j
                    var value: UInt32 = 0
                    while j < n, j - digitsStart < 7 {
                        let c = html[j]
                        if isDigit(c) { value = value * (hex ? 16 : 10) + UInt32(c - 0x30) }
                        else if hex, (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66 { value = value * 16 + UInt32((c | 0x20) - 0x61 + 10) }
                        else { break }
                        j += 1
                    }
                    guard j > digitsStart, j < n, html[j] == UInt8(ascii: ";"), FeedBytes.xmlAllowed(value) else { return nil }
                    FeedBytes.appendUTF8(value, to: &out)
                } else if isLetter(html[j]) {
                    let nameStart = j
                    while j < n, isLetter(html[j]) || isDigit(html[j]) { j += 1 }
                    guard j < n, html[j] == UInt8(ascii: ";"),
                          let value = HTMLText.entityCodePoint(UnsafeBufferPointer(rebasing: html[nameStart..<j])), value > 0 else { return nil }
                    FeedBytes.appendUTF8(value, to: &out)
                } else if html[j] == 0x20 || html[j] == 0x0A || html[j] == 0x09 || html[j] == 0x0D || isDigit(html[j]) {
                    // A bare '&' is kept as text.
                    out.append(b)
                    i += 1
                    runStart = i
                    continue
                } else {
                    return nil
                }
                i = j + 1
                runStart = i
                continue
            }
            i += 1
        }
        flush()
        return out
    }
}
