import Foundation

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

    /// The plain text: markup removed, entities decoded, white space collapsed.
    var text: String { Self.plainText(markup, kind: kind) }

    static func plainText(_ bytes: [UInt8], kind: TextKind) -> String {
        bytes.withUnsafeBufferPointer { plainText($0, kind: kind) }
    }

    static func plainText(_ bytes: UnsafeBufferPointer<UInt8>, kind: TextKind) -> String {
        switch kind {
        case .plain, .xhtml:
            return FeedDocumentBuilder.collapse(bytes)
        case .html:
            return HTMLText.plainText(bytes)
        case .maybeHTML:
            return FeedDocumentBuilder.looksLikeHTML(bytes) ? HTMLText.plainText(bytes) : FeedDocumentBuilder.collapse(bytes)
        case .base64:
            let encoded = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
            let decoded = Data(base64Encoded: encoded).map { [UInt8]($0) } ?? Array(bytes)
            return decoded.withUnsafeBufferPointer { HTMLText.plainText($0) }
        }
    }
}
