import FeedParsing
import Foundation
import NewsPushCore
import NotificationHubs

/// Markup whose interpolated strings are escaped: feed text (titles, summaries, links) can only
/// ever become text on the page. Raw markup goes in only as `HTML` itself.
struct HTML: Sendable, ExpressibleByStringInterpolation {
    private(set) var text: String

    init(stringLiteral value: String) { text = value }

    init(stringInterpolation: Interpolation) { text = stringInterpolation.text }

    struct Interpolation: StringInterpolationProtocol {
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity * 2) }

        mutating func appendLiteral(_ literal: String) { text += literal }
        /// Text: escaped. Labelled, so a `String` cannot go into markup without saying which
        /// it is: `\(text: title)` for text, an `HTML` value for markup (a `String` holding
        /// markup does not compile, and markup shown as escaped text cannot be written).
        mutating func appendInterpolation(text value: String) { text += HTML.escape(value) }
        mutating func appendInterpolation(_ value: Int) { text += String(value) }
        /// Markup made elsewhere of escaped parts.
        mutating func appendInterpolation(_ value: HTML) { text += value.text }
        mutating func appendInterpolation(_ values: [HTML]) { for value in values { text += value.text } }
        /// A value put into a desk URL, as a path segment or a query value: percent-encoded
        /// (only RFC 3986's unreserved characters stay), then escaped, so a story key with `&`,
        /// `#`, `+`, `%` or `/` names the same story when the link is followed.
        mutating func appendInterpolation(url value: String) { text += HTML.escape(HTML.percentEncoded(value)) }
        /// A link target: only an http(s) URL, else nothing to follow.
        mutating func appendInterpolation(href: String?) {
            guard let href, FeedURL.isHTTP(href) else { return text += "#" }
            text += HTML.escape(href)
        }
    }

    /// `value` with every byte but RFC 3986's unreserved characters as `%XX`.
    static func percentEncoded(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// Text as markup: escaped.
    static func text(_ value: String?) -> HTML { HTML(stringLiteral: escape(value ?? "")) }

    /// `&`, `<`, `>`, `"` and `'` as character references (safe in text and in quoted attributes).
    static func escape(_ value: String) -> String { MarkupText.escaped(value) }
}
