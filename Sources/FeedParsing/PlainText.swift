import Foundation
import NewsPushModel

/// How an element's text is written: plain, HTML (escaped or CDATA), inline XHTML, plain that
/// may carry escaped HTML anyway (RSS titles), or base64 (Atom binary content).
enum TextKind: UInt8, Sendable, Codable {
    case plain, html, xhtml, maybeHTML, base64
}

/// Text as the feed wrote it, made plain when read. Full article content is large and rarely
/// needed, so it is kept as written and converted on demand rather than on every parse.
struct FeedText: Sendable, Equatable, Codable {
    var markup: [UInt8]
    var kind: TextKind

    /// The plain text: markup removed, entities decoded, white space collapsed, double-encoded
    /// UTF-8 repaired.
    var text: String { Mojibake.repaired(markup.withUnsafeBufferPointer { PlainText.of($0, kind: kind) }) }
}

/// Feed text made plain: markup removed (the simple-HTML fast path, else libxml2's HTML
/// parser), references decoded, white space collapsed.
public enum PlainText {
    /// `bytes` written as `kind`, as plain text.
    static func of(_ bytes: UnsafeBufferPointer<UInt8>, kind: TextKind) -> String {
        switch kind {
        case .plain, .xhtml:
            if let unwrapped = unwrappedCDATA(bytes) { return collapse(unwrapped) }
            return collapse(bytes)
        case .html:
            return fromHTML(bytes)
        case .maybeHTML:
            return looksLikeHTML(bytes) ? fromHTML(bytes) : collapse(bytes)
        case .base64:
            let encoded = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
            let decoded = Data(base64Encoded: encoded).map { [UInt8]($0) } ?? Array(bytes)
            return decoded.withUnsafeBufferPointer { fromHTML($0) }
        }
    }

    /// Where an HTML text's first `<img` tag is, when the conversion found out.
    enum ImageTag: Equatable {
        case none
        case at(Int)
        /// libxml2 converted the text: it has to be searched.
        case unknown
    }

    /// `of(_:kind:)` for an item's HTML text, and where its first `<img` tag starts.
    static func ofHTML(_ bytes: UnsafeBufferPointer<UInt8>, kind: TextKind) -> (text: String, image: ImageTag) {
        guard kind == .html || (kind == .maybeHTML && looksLikeHTML(bytes)) else {
            return (of(bytes, kind: kind), .none)
        }
        var image: Int?
        if let simple = SimpleHTML.string(bytes, firstImage: &image) {
            return (simple, image.map(ImageTag.at) ?? .none)
        }
        return (fromHTML(bytes), .unknown)
    }

    /// The text of an HTML fragment, white space collapsed.
    static func fromHTML(_ html: UnsafeBufferPointer<UInt8>) -> String {
        if let simple = SimpleHTML.string(html) { return simple }
        if let unwrapped = unwrappedCDATA(html) { return unwrapped.withUnsafeBufferPointer { fromHTML($0) } }
        return collapse(HTMLParser.text(Array(html)))
    }

    /// Text with CDATA markers written into it as text (`&lt;![CDATA[Title]]&gt;`, or a CDATA
    /// section nested in another), without them; nil when it has none. An HTML parser would
    /// take the markers for a comment and drop what they hold.
    static func unwrappedCDATA(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard FeedBytes.indexAfter("<![CDATA[", in: text, from: 0) != nil else { return nil }
        let open = Array("<![CDATA[".utf8), close = Array("]]>".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var depth = 0, i = 0
        while i < text.count {
            if text[i] == UInt8(ascii: "<"), text[i...].starts(with: open) {
                depth += 1
                i += open.count
            } else if depth > 0, text[i] == UInt8(ascii: "]"), text[i...].starts(with: close) {
                depth -= 1
                i += close.count
            } else {
                out.append(text[i])
                i += 1
            }
        }
        return out
    }

    /// An HTML text as plain text (libxml2's HTML parser, references decoded, white space
    /// collapsed).
    public static func fromHTML(_ html: String) -> String {
        Array(html.utf8).withUnsafeBufferPointer { fromHTML($0) }
    }

    /// Collapses runs of ASCII white space into one space and trims the ends.
    public static func collapse(_ text: String) -> String {
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
                let end = i + 1 + ByteScan.textRun(base + i + 1, n - i - 1, markup: false)
                if pendingSpace {
                    target[count] = 0x20
                    count += 1
                    pendingSpace = false
                }
                (target + count).update(from: base + i, count: end - i)
                count += end - i
                i = end
            }
            return count
        }
    }

    /// A real tag (`<b>`, `</p>`, `<br/>`) or entity (`&amp;`, `&#8217;`): RSS titles are
    /// nominally plain text but publishers often escape HTML into them.
    public static func looksLikeHTML(_ text: String) -> Bool {
        Array(text.utf8).withUnsafeBufferPointer { looksLikeHTML($0) }
    }

    static func looksLikeHTML(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "<"), i + 1 < bytes.count {
                let next = bytes[i + 1]
                if (next | 0x20) >= 0x61 && (next | 0x20) <= 0x7A || next == UInt8(ascii: "/")
                    || next == UInt8(ascii: "!")
                {
                    if UnsafeBufferPointer(rebasing: bytes[(i + 1)...]).contains(UInt8(ascii: ">")) { return true }
                }
            } else if b == UInt8(ascii: "&") {
                var j = i + 1
                while j < bytes.count, j - i < 12,
                    bytes[j] == UInt8(ascii: "#") || (bytes[j] | 0x20) >= 0x61 && (bytes[j] | 0x20) <= 0x7A
                        || bytes[j] >= 0x30 && bytes[j] <= 0x39
                { j += 1 }
                if j > i + 1, j < bytes.count, bytes[j] == UInt8(ascii: ";") { return true }
            }
            i += 1
        }
        return false
    }
}
