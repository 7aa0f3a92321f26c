import Foundation
import NewsPushModel

/// The text a lock screen shows: Unicode NFC, control characters removed, white space collapsed,
/// and at most `limit` characters (grapheme clusters, what a reader counts), cut after a whole
/// word and ended with "…" when it is longer.
public enum AlertText {
    /// `text` in at most `limit` characters, cut at a word boundary with `…`.
    public static func fit(_ text: String, limit: Int) -> String {
        let clean = normalized(text)
        guard clean.count > limit else { return clean }
        // Room for the ellipsis; never inside a grapheme cluster (Character is one).
        let room = clean.prefix(max(1, limit - 1))
        var cut = room.endIndex
        if let space = room.lastIndex(where: { $0 == " " }),
            clean.distance(from: clean.startIndex, to: space) >= limit / 2
        {
            cut = space
        }
        var head = String(clean[..<cut])
        while let last = head.last, last == " " || ",;:–—-".contains(last) { head.removeLast() }
        return head + "…"
    }

    /// NFC, no control characters (C0, DEL, C1) and no bidirectional embeddings, overrides or
    /// isolates (U+202A–U+202E, U+2066–U+2069: they reorder what a reader sees), every run of
    /// white space one space, trimmed.
    public static func normalized(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in text.precomposedStringWithCanonicalMapping.unicodeScalars {
            if scalar.properties.isWhitespace {
                pendingSpace = !out.isEmpty
                continue
            }
            if scalar.properties.generalCategory == .control || isBidiControl(scalar) { continue }
            if pendingSpace {
                out.append(" ")
                pendingSpace = false
            }
            out.append(scalar)
        }
        return String(out)
    }
}

extension AlertText {
    /// Whether `text` says nothing once cleaned: no letter, digit or symbol (emoji count) is
    /// left, only white space, control characters and punctuation.
    public static func isBlank(_ text: String) -> Bool {
        !normalized(text).unicodeScalars.contains { scalar in
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                .decimalNumber, .letterNumber, .otherNumber, .mathSymbol, .currencySymbol, .otherSymbol:
                return true
            default:
                return false
            }
        }
    }

    /// The bidirectional embeddings, overrides and isolates.
    static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }
}

/// What an item's alert says, cleaned of what no lock screen should show: references left
/// over from double escaping (`Q&amp;A` arriving as written), titles that are only markup or
/// entities, summaries that repeat the headline.
public enum AlertCopy {
    /// The headline: the title with leftover markup and references decoded (at most three
    /// rounds: `&amp;amp;` is two); when nothing readable remains (no letter or digit), the
    /// first sentence of the summary; nil when neither has text.
    public static func headline(title: String?, summary: String?) -> String? {
        if let title = title.map(decodedLeftovers), isReadable(title) { return title }
        guard let summary = summary.map(decodedLeftovers), isReadable(summary) else { return nil }
        return firstSentence(summary)
    }

    /// The summary without the headline it starts with (feeds often repeat the title as the
    /// summary's first line); empty when it says nothing more.
    public static func summary(_ summary: String?, headline: String) -> String {
        guard let summary = summary.map(decodedLeftovers), isReadable(summary) else { return "" }
        let head = comparable(headline), body = comparable(summary)
        guard !head.isEmpty else { return summary }
        if body == head { return "" }
        guard body.hasPrefix(head) else { return summary }
        // Drop as many characters of the original as the comparable prefix covers.
        // (`head.count` walks the string: counted once, or this loop is quadratic; fuzzing
        // found a 50 KB summary taking over a second.)
        var rest = Substring(summary)
        var matched = 0
        let wanted = head.count
        while matched < wanted, let first = rest.first {
            if comparableCharacter(first) != nil { matched += 1 }
            rest = rest.dropFirst()
        }
        let remainder = rest.drop { $0.isWhitespace || $0.isPunctuation || "-–—|:".contains($0) }
        return isReadable(String(remainder)) ? String(remainder) : ""
    }

    static func decodedLeftovers(_ text: String) -> String {
        var text = text
        for _ in 0..<3 where PlainText.looksLikeHTML(text) {
            text = PlainText.fromHTML(text)
        }
        return PlainText.collapse(text)
    }

    /// A letter or a digit somewhere.
    static func isReadable(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.isAlphabetic || $0.properties.numericType != nil }
    }

    private static func firstSentence(_ text: String) -> String {
        var previous: Character?
        var offset = 0
        for index in text.indices {
            let character = text[index]
            if character == " ", let previous, ".!?".contains(previous), offset >= 20 {
                return String(text[..<index])
            }
            previous = character
            offset += 1
        }
        return text
    }

    /// Letters and digits only, lower case: "Quake hits Chile." and "QUAKE HITS CHILE" compare equal.
    private static func comparable(_ text: String) -> String {
        String(text.compactMap(comparableCharacter))
    }

    private static func comparableCharacter(_ character: Character) -> Character? {
        guard character.isLetter || character.isNumber else { return nil }
        return Character(character.lowercased())
    }
}
