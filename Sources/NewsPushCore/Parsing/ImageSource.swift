import Foundation

/// The first `<img src>` of an HTML text, and which image URLs a push may carry.
enum ImageSource {
    /// Pushes point devices at https only (ATS on Apple devices refuses plain http).
    static func isPushable(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "https",
              let host = components.host, !host.isEmpty else { return false }
        return true
    }

    /// The `src` of the first `<img>` element in escaped or CDATA HTML, with HTML's character
    /// references in it decoded. Written by hand: it runs on every description while the parse
    /// runs, and a memchr walk over `<` costs a fraction of handing the text to an HTML parser,
    /// which the text conversion may not even need (the simple-HTML fast path).
    static func firstImg(in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let base = bytes.baseAddress else { return nil }
        let n = bytes.count
        var i = 0
        while i < n, let found = memchr(base + i, Int32(UInt8(ascii: "<")), n - i) {
            let at = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            i = at + 1
            guard at + 4 < n, bytes[at + 1] | 0x20 == UInt8(ascii: "i"), bytes[at + 2] | 0x20 == UInt8(ascii: "m"),
                  bytes[at + 3] | 0x20 == UInt8(ascii: "g"), [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "/")].contains(bytes[at + 4]) else { continue }
            let end = (memchr(base + at, Int32(UInt8(ascii: ">")), n - at).map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) }) ?? n
            if let src = attribute("src", in: UnsafeBufferPointer(rebasing: bytes[(at + 4)..<end])) { return src }
        }
        return nil
    }

    /// The value of attribute `name` in the inside of a start tag.
    private static func attribute(_ name: String, in tag: UnsafeBufferPointer<UInt8>) -> String? {
        let wanted = Array(name.utf8)
        var i = 0
        while i < tag.count {
            while i < tag.count, tag[i] == 0x20 || tag[i] == 0x09 || tag[i] == 0x0A || tag[i] == 0x0D || tag[i] == UInt8(ascii: "/") { i += 1 }
            let nameStart = i
            while i < tag.count, tag[i] != UInt8(ascii: "="), tag[i] > 0x20, tag[i] != UInt8(ascii: "/") { i += 1 }
            let attributeName = tag[nameStart..<i].map { $0 | 0x20 }
            while i < tag.count, tag[i] == 0x20 { i += 1 }
            guard i < tag.count, tag[i] == UInt8(ascii: "=") else {
                if i == nameStart { i += 1 }
                continue
            }
            i += 1
            while i < tag.count, tag[i] == 0x20 { i += 1 }
            var value: ArraySlice<UInt8>
            if i < tag.count, tag[i] == UInt8(ascii: "\"") || tag[i] == UInt8(ascii: "'") {
                let quote = tag[i]
                let start = i + 1
                i = start
                while i < tag.count, tag[i] != quote { i += 1 }
                value = ArraySlice(tag[start..<min(i, tag.count)])
                i += 1
            } else {
                let start = i
                while i < tag.count, tag[i] > 0x20 { i += 1 }
                value = ArraySlice(tag[start..<i])
            }
            if attributeName.elementsEqual(wanted) {
                let text = decodeReferences(String(decoding: value, as: UTF8.self)).trimmingCharacters(in: .whitespaces)
                return text.isEmpty ? nil : text
            }
        }
        return nil
    }

    /// `&amp;`, `&quot;`, `&#39;`, `&#x2F;`… in an attribute value.
    static func decodeReferences(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            let after = rest[rest.index(after: amp)...]
            guard let semicolon = after.prefix(10).firstIndex(of: ";") else { out += "&"; rest = after; continue }
            let name = after[..<semicolon]
            let named: [Substring: String] = ["amp": "&", "quot": "\"", "apos": "'", "lt": "<", "gt": ">"]
            var decoded: String?
            if let value = named[name] { decoded = value }
            else if name.hasPrefix("#x") || name.hasPrefix("#X"), let code = UInt32(name.dropFirst(2), radix: 16) { decoded = Unicode.Scalar(code).map(String.init) }
            else if name.hasPrefix("#"), let code = UInt32(name.dropFirst()) { decoded = Unicode.Scalar(code).map(String.init) }
            if let decoded {
                out += decoded
                rest = after[after.index(after: semicolon)...]
            } else {
                out += "&"
                rest = after
            }
        }
        return out + rest
    }
}
