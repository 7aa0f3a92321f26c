import Foundation

/// `application/x-www-form-urlencoded` forms and URL queries, as the desk (and any front end
/// of newspush) reads them from the network.
public enum FormFields {
    /// The fields of a URL-encoded form or query (`+` is a space), the first of each name.
    /// Written by hand (the WHATWG form decoding, without allocations of its own) because
    /// Foundation's `URLComponents` traps on a query with a raw space, `%zz`, `<` or `{`: one
    /// such request killed the desk. Any bytes decode: a bad escape stays as written, bytes
    /// that are not UTF-8 become U+FFFD.
    public static func parse(_ encoded: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in encoded.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            let name = decoded(pair[..<equals])
            guard fields[name] == nil else { continue }
            fields[name] = equals == pair.endIndex ? "" : decoded(pair[pair.index(after: equals)...])
        }
        return fields
    }

    /// One name or value of a form: `+` a space, `%XX` its byte, anything else itself.
    public static func decoded(_ bytes: Substring.UTF8View.SubSequence) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), index != bytes.endIndex, let high = hexValue(bytes[index]),
                bytes.index(after: index) != bytes.endIndex, let low = hexValue(bytes[bytes.index(after: index)])
            {
                out.append(high << 4 | low)
                index = bytes.index(index, offsetBy: 2)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
