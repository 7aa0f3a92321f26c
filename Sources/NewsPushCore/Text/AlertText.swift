import FeedParsing
import Foundation
import NewsPushModel

/// The text a lock screen shows: Unicode NFC, control characters removed, white space collapsed,
/// at most 30 combining marks on a letter, and at most `limit` characters (grapheme clusters,
/// what a reader counts) and `4 × limit` UTF-8 bytes, cut after a whole word and ended with "…"
/// when it is longer.
public enum AlertText {
    /// The most characters of a text property other than the message (`title`, `source`): a
    /// headline is far shorter; a 9,000-word title is a mistake, never a push.
    public static let propertyLimit = 256

    /// The most UTF-8 bytes of a text of `limit` characters: four per character (every script's
    /// letters and most emoji fit; a text of 3,000 combining marks on one letter does not).
    public static func byteLimit(characters limit: Int) -> Int { 4 * limit }

    /// `text` in at most `limit` characters and `byteLimit(limit)` bytes, cut at a word boundary
    /// with `…`.
    public static func fit(_ text: String, limit: Int) -> String {
        let clean = normalized(text)
        let bytes = byteLimit(characters: limit)
        guard clean.count > limit || clean.utf8.count > bytes else { return clean }
        // Room for the ellipsis (3 bytes); never inside a grapheme cluster (Character is one).
        var room = clean.prefix(max(1, limit - 1))
        var used = 0
        if let over = room.indices.first(where: { index in
            used += room[index].utf8.count
            return used > bytes - 3
        }) {
            room = room[..<over]
        }
        var cut = room.endIndex
        if let space = room.lastIndex(where: { $0 == " " }),
            clean.distance(from: clean.startIndex, to: space) >= room.count / 2
        {
            cut = space
        }
        var head = String(clean[..<cut])
        while let last = head.last, last == " " || ",;:–—-".contains(last) { head.removeLast() }
        return head + "…"
    }

    /// The most combining marks kept in a row: Unicode's stream-safe limit (UAX #15: no real
    /// text needs more than 30 non-starters in a row). Piles beyond it only make a text heavy.
    static let maxNonStarters = 30

    /// NFC, no control characters (C0, DEL, C1) and no bidirectional embeddings, overrides or
    /// isolates (U+202A–U+202E, U+2066–U+2069: they reorder what a reader sees), at most 30
    /// combining marks in a row, every run of white space one space, trimmed.
    public static func normalized(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        var nonStarters = 0
        for scalar in text.precomposedStringWithCanonicalMapping.unicodeScalars {
            if scalar.properties.isWhitespace {
                pendingSpace = !out.isEmpty
                nonStarters = 0
                continue
            }
            if scalar.properties.generalCategory == .control || isBidiControl(scalar) { continue }
            if scalar.properties.canonicalCombiningClass == .notReordered {
                nonStarters = 0
            } else {
                nonStarters += 1
                if nonStarters > maxNonStarters { continue }
            }
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
    /// Whether `text` says nothing once cleaned: no readable character (`isReadable`) is left.
    /// The one definition of blank that every path shares: the run's headline, `publish`, the
    /// desk, an approval's edit and the config's message templates.
    public static func isBlank(_ text: String) -> Bool {
        !normalized(text).unicodeScalars.contains(where: isReadable)
    }

    /// Whether a character shows something on a lock screen, from its Unicode properties: a
    /// letter, a digit or a symbol (emoji count), that is not white space and not a default
    /// ignorable code point (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the Khmer
    /// inherent vowels, variation selectors, tag characters, zero-width and format characters:
    /// fonts draw them as nothing). Marks count only with a letter they sit on, punctuation
    /// alone says nothing. U+2800 BRAILLE PATTERN BLANK is the one symbol whose glyph is empty
    /// by definition (its dots are all unset), and no property says so: it is named here.
    public static func isReadable(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        guard !properties.isWhitespace, !properties.isDefaultIgnorableCodePoint, scalar.value != 0x2800 else {
            return false
        }
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .decimalNumber, .letterNumber, .otherNumber, .mathSymbol, .currencySymbol, .otherSymbol:
            return true
        default:
            return false
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
    /// rounds: `&amp;amp;` is two); when nothing readable remains (`AlertText.isReadable`), the
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

    /// Something readable somewhere (`AlertText.isReadable`: the same judgement as publish's).
    static func isReadable(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: AlertText.isReadable)
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
