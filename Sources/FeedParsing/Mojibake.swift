import Foundation
import NewsPushModel

/// Text that was UTF-8, read as Windows-1252 or Latin-1 by a publisher's system and encoded
/// again ("ordenó" arriving as "ordenÃ³", "’" as "â€™", "£" as "Â£"), repaired one field at a
/// time. No library undoes this (feedparser does it in Python), so the rule is written here:
///
/// A field is decoded once more when
/// 1. it has a character U+00C2–U+00F4 (what a UTF-8 lead byte becomes when read as Latin-1:
///    without one there is nothing to repair, and the test costs a byte search);
/// 2. every character maps to one byte in Windows-1252 or Latin-1 (ASCII, U+0080–U+00FF, and
///    Windows-1252's 27 characters at 0x80–0x9F such as € ‚ ™ “ ”);
/// 3. those bytes are well-formed UTF-8; and
/// 4. what they decode to is plausible text: no C1 control characters and nothing from the
///    IPA and spacing-modifier blocks (U+0250–U+02FF), which is what right text made of two
///    such characters decodes to ("CAFÉ”" would become "CAFɔ").
///
/// Counter-examples it leaves alone: "São Paulo" (ã then o: not UTF-8), "Ã" in a name, text
/// from real Latin-1 documents (accented letters are followed by ASCII, never by the 0x80–0xBF
/// a UTF-8 continuation needs), a field that mixes right characters outside Windows-1252 with
/// mojibake (rule 2: it is not certain what to decode), "CAFÉ”" (rule 4).
enum Mojibake {
    /// `text` decoded once more when it is double-encoded UTF-8 by the rule above, else as it is.
    static func repaired(_ text: String) -> String {
        guard mayBeDoubleEncoded(text), readsAsUTF8Once(text) else { return text }
        let bytes = text.unicodeScalars.compactMap(singleByte)
        guard let decoded = String(validating: bytes, as: UTF8.self), decoded.unicodeScalars.allSatisfy(isPlausible)
        else { return text }
        return decoded
    }

    /// Rules 2 and 3 without building anything: every character has a single byte, and the
    /// bytes follow UTF-8's lead and continuation pattern. Right text (an accented letter
    /// followed by a space or a letter) is given up on at its first such character.
    private static func readsAsUTF8Once(_ text: String) -> Bool {
        var continuations = 0
        for scalar in text.unicodeScalars {
            guard let byte = singleByte(scalar) else { return false }
            if continuations > 0 {
                guard byte & 0xC0 == 0x80 else { return false }
                continuations -= 1
            } else if byte >= 0x80 {
                switch byte {
                case 0xC2...0xDF: continuations = 1
                case 0xE0...0xEF: continuations = 2
                case 0xF0...0xF4: continuations = 3
                default: return false
                }
            }
        }
        return continuations == 0
    }

    /// Rule 1: a character U+00C2–U+00F4, which UTF-8 writes as C3 82 … C3 B4 (a byte search:
    /// this runs on every field of every item).
    private static func mayBeDoubleEncoded(_ text: String) -> Bool {
        // (Read in place: native strings are contiguous; a bridged one is searched as a copy.)
        text.utf8.withContiguousStorageIfAvailable { bytes in contains(bytes) } ?? contains(Array(text.utf8))
    }

    private static func contains(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { contains($0) }
    }

    /// A C3 byte followed by 82…B4.
    private static func contains(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        var i = 0
        while i < bytes.count, let found = memchr(base + i, 0xC3, bytes.count - i) {
            let at = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if at + 1 < bytes.count, bytes[at + 1] >= 0x82, bytes[at + 1] <= 0xB4 { return true }
            i = at + 1
        }
        return false
    }

    /// Rule 2: the byte Windows-1252 (or, for its five unassigned positions, Latin-1) writes
    /// `scalar` as.
    private static func singleByte(_ scalar: Unicode.Scalar) -> UInt8? {
        let value = scalar.value
        if value < 0x100 { return UInt8(value) }
        return windows1252[value]
    }

    /// Windows-1252's characters at 0x80–0x9F, by code point.
    private static let windows1252: [UInt32: UInt8] = {
        var table: [UInt32: UInt8] = [:]
        for (offset, value) in FeedBytes.cp1252High.enumerated() where value != 0xFFFD {
            table[value] = UInt8(0x80 + offset)
        }
        return table
    }()

    /// Rule 4.
    private static func isPlausible(_ scalar: Unicode.Scalar) -> Bool {
        !(0x80...0x9F).contains(scalar.value) && !(0x250...0x2FF).contains(scalar.value)
    }
}
