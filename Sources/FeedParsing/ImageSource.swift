import Foundation
import NewsPushModel

/// The first `<img src>` of an HTML text, and which image URLs a push may carry.
enum ImageSource {
    /// Pushes point devices at https only (ATS on Apple devices refuses plain http): an
    /// absolute `https://` URL with a host, in printable ASCII. (A prefix test: `URLComponents` per item was
    /// measurable in the parse, and the URL has been resolved already.)
    static func isPushable(_ url: String) -> Bool {
        let bytes = url.utf8
        guard bytes.count > 8, url.hasASCIIPrefixIgnoringCase("https://") else { return false }
        let host = bytes.dropFirst(8).prefix {
            $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#")
        }
        // Printable ASCII only: no white space, no control character (an `&nbsp;` written
        // into a URL), no raw non-ASCII a device's URL parser would refuse.
        return !host.isEmpty && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// Whether a media element names an image: `medium="image"`, an image type, or, with
    /// neither, an image file name.
    static func isImage(medium: String?, type: String?, url: String) -> Bool {
        if let medium { return medium.lowercased() == "image" }
        if let type { return isImageType(type) }
        // Bytes, not Characters: a media element per picture size made `split` a quarter of
        // some feeds' parse time.
        let path = url.utf8.prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        return [".jpg", ".jpeg", ".png", ".gif", ".webp", ".avif"].contains { suffix in
            path.count >= suffix.utf8.count
                && zip(path.suffix(suffix.utf8.count), suffix.utf8).allSatisfy { $0 | 0x20 == $1 }
        }
    }

    /// `url` when a push may carry it.
    static func pushable(_ url: String?) -> String? {
        guard let url, isPushable(url) else { return nil }
        return url
    }

    /// Whether a media type names an image (`image/jpeg`, `Image/PNG`).
    static func isImageType(_ type: String?) -> Bool {
        guard let type else { return false }
        return type.utf8.count > 6 && type.hasASCIIPrefixIgnoringCase("image/")
    }

    /// The `src` of the first `<img>` element in escaped or CDATA HTML, with HTML's character
    /// references in it decoded. The search for `<img` is `ByteScan.imgTag`; the attributes
    /// of the one tag found are read here.
    static func firstImg(in bytes: UnsafeBufferPointer<UInt8>, from start: Int = 0) -> String? {
        guard let base = bytes.baseAddress else { return nil }
        var i = start
        while i < bytes.count {
            let at = i + ByteScan.imgTag(base + i, bytes.count - i)
            guard at < bytes.count else { return nil }
            let end =
                memchr(base + at, Int32(UInt8(ascii: ">")), bytes.count - at)
                .map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) } ?? bytes.count
            if let src = attribute("src", in: UnsafeBufferPointer(rebasing: bytes[(at + 4)..<end])) { return src }
            i = at + 4
        }
        return nil
    }

    /// The longest image URL an alert may carry: a push's whole payload is 4 KB. Longer `src`
    /// values (inline `data:` images run to hundreds of KB) are passed over unread.
    static let maxURLLength = 2048

    /// The value of attribute `name` (lower case) in the inside of a start tag; nil for a
    /// value no alert can carry (a `data:` URL, or one longer than `maxURLLength`).
    private static func attribute(_ name: StaticString, in tag: UnsafeBufferPointer<UInt8>) -> String? {
        let wanted = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        var i = 0
        while i < tag.count {
            while i < tag.count, isSpace(tag[i]) || tag[i] == UInt8(ascii: "/") { i += 1 }
            let nameStart = i
            while i < tag.count, tag[i] != UInt8(ascii: "="), tag[i] > 0x20, tag[i] != UInt8(ascii: "/") { i += 1 }
            let isWanted =
                i - nameStart == wanted.count && zip(tag[nameStart..<i], wanted).allSatisfy { $0 | 0x20 == $1 }
            while i < tag.count, isSpace(tag[i]) { i += 1 }
            guard i < tag.count, tag[i] == UInt8(ascii: "=") else {
                if i == nameStart { i += 1 }
                continue
            }
            i += 1
            while i < tag.count, isSpace(tag[i]) { i += 1 }
            let value: Range<Int>
            if i < tag.count, tag[i] == UInt8(ascii: "\"") || tag[i] == UInt8(ascii: "'") {
                let quote = tag[i]
                let start = i + 1
                i = start
                while i < tag.count, tag[i] != quote { i += 1 }
                value = start..<i
                i += 1
            } else {
                let start = i
                while i < tag.count, tag[i] > 0x20 { i += 1 }
                value = start..<i
            }
            if isWanted {
                guard value.count <= maxURLLength, !tag[value].prefix(5).map({ $0 | 0x20 }).elementsEqual("data:".utf8)
                else { return nil }
                let text = decodeReferences(UnsafeBufferPointer(rebasing: tag[value]))
                return text.isEmpty ? nil : text
            }
        }
        return nil
    }

    /// An attribute value with HTML's character references decoded (`&amp;`, `&#39;`,
    /// `&#x2F;`, `&nbsp;`…) and white space at its ends removed.
    static func decodeReferences(_ value: UnsafeBufferPointer<UInt8>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.count)
        var i = 0
        while i < value.count {
            guard value[i] == UInt8(ascii: "&"),
                let semicolon = value[(i + 1)..<min(value.count, i + 12)].firstIndex(of: UInt8(ascii: ";")),
                let scalar = referencedScalar(UnsafeBufferPointer(rebasing: value[(i + 1)..<semicolon]))
            else {
                bytes.append(value[i])
                i += 1
                continue
            }
            bytes.append(contentsOf: String(Character(scalar)).utf8)
            i = semicolon + 1
        }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let start = bytes.firstIndex { !isSpace($0) } ?? bytes.count
        let end = bytes.lastIndex { !isSpace($0) }.map { $0 + 1 } ?? start
        return String(decoding: bytes[start..<max(start, end)], as: UTF8.self)
    }

    /// The character `&name;` stands for: a named HTML entity or a decimal or hex reference.
    private static func referencedScalar(_ name: UnsafeBufferPointer<UInt8>) -> Unicode.Scalar? {
        guard name.first == UInt8(ascii: "#") else { return HTMLEntities.codePoint(name).flatMap(Unicode.Scalar.init) }
        let hex = name.count > 1 && name[1] | 0x20 == UInt8(ascii: "x")
        let digits = String(decoding: name.dropFirst(hex ? 2 : 1), as: UTF8.self)
        return UInt32(digits, radix: hex ? 16 : 10).flatMap(Unicode.Scalar.init)
    }
}
