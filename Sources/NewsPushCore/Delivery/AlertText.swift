import Foundation

/// The text a lock screen shows: Unicode NFC, control characters removed, white space collapsed,
/// and at most `limit` characters (grapheme clusters, what a reader counts), cut after a whole
/// word and ended with "…" when it is longer.
public enum AlertText {
    public static func fit(_ text: String, limit: Int) -> String {
        let clean = normalized(text)
        guard clean.count > limit else { return clean }
        // Room for the ellipsis; never inside a grapheme cluster (Character is one).
        let room = clean.prefix(max(1, limit - 1))
        var cut = room.endIndex
        if let space = room.lastIndex(where: { $0 == " " }), clean.distance(from: clean.startIndex, to: space) >= limit / 2 {
            cut = space
        }
        var head = String(clean[..<cut])
        while let last = head.last, last == " " || ",;:–—-".contains(last) { head.removeLast() }
        return head + "…"
    }

    /// NFC, no control characters (C0, DEL, C1), every run of white space one space, trimmed.
    public static func normalized(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in text.precomposedStringWithCanonicalMapping.unicodeScalars {
            if scalar.properties.isWhitespace {
                pendingSpace = !out.isEmpty
                continue
            }
            if scalar.properties.generalCategory == .control { continue }
            if pendingSpace { out.append(" "); pendingSpace = false }
            out.append(scalar)
        }
        return String(out)
    }
}
