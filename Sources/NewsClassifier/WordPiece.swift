import Foundation
import NewsPushModel

/// BERT's uncased tokenizer, as the encoder all-MiniLM-L6-v2 was trained with: clean the text
/// (controls dropped, white space made spaces, CJK characters set apart), split on white space,
/// lower-case, strip accents (NFD without combining marks), split off punctuation, then cut each
/// word into the longest vocabulary pieces from the left (`##` marks a piece inside a word), or
/// `[UNK]`. Written here because no Swift package on this platform has it; the offline tool
/// (tools/classifier/distil.py) has the same rules, and the tests compare the two.
public struct WordPieceTokenizer: Sendable {
    private let starts: [String: Int32]
    private let continuations: [String: Int32]
    /// The id of `[UNK]`.
    public let unknown: Int32
    static let maxWordLength = 100

    /// A tokenizer of `vocabulary` (the model's vocab.txt, in order).
    public init(vocabulary: [String]) {
        var starts: [String: Int32] = [:], continuations: [String: Int32] = [:]
        for (index, token) in vocabulary.enumerated() {
            if token.hasPrefix("##") {
                continuations[String(token.dropFirst(2))] = Int32(index)
            } else {
                starts[token] = Int32(index)
            }
        }
        self.starts = starts
        self.continuations = continuations
        unknown = starts["[UNK]"] ?? 100
    }

    /// The vocabulary ids of `text`'s pieces.
    public func ids(_ text: String) -> [Int32] {
        var ids: [Int32] = []
        ids.reserveCapacity(64)
        Self.forEachWord(text) { pieces(of: $0, into: &ids) }
        return ids
    }

    /// The pieces as text (the tests compare them with the offline tool's).
    public func tokens(_ text: String, vocabulary: [String]) -> [String] {
        ids(text).map { vocabulary[Int($0)] }
    }

    /// Greedy longest match from the left over the word's UTF-8 bytes, cut only between
    /// characters. (Strings of up to 15 bytes, most candidates, are built without allocating.)
    private func pieces(of word: [UInt8], into ids: inout [Int32]) {
        var boundaries: [Int] = [0]
        for (offset, byte) in word.enumerated() where offset > 0 && byte & 0xC0 != 0x80 { boundaries.append(offset) }
        boundaries.append(word.count)
        guard boundaries.count - 1 <= Self.maxWordLength else {
            ids.append(unknown)
            return
        }
        let first = ids.count
        var start = 0
        while start < boundaries.count - 1 {
            var end = boundaries.count - 1
            var piece: Int32?
            while start < end {
                let text = word.withUnsafeBufferPointer {
                    String(
                        decoding: UnsafeBufferPointer(rebasing: $0[boundaries[start]..<boundaries[end]]), as: UTF8.self)
                }
                if let id = (start == 0 ? starts[text] : continuations[text]) {
                    piece = id
                    break
                }
                end -= 1
            }
            guard let piece else {
                ids.removeSubrange(first...)
                ids.append(unknown)
                return
            }
            ids.append(piece)
            start = end
        }
    }

    /// The basic tokenizer: calls `body` with each word and punctuation mark as UTF-8,
    /// lower-cased and without accents. ASCII words (most of English news) take a byte path;
    /// others are lower-cased and decomposed by Foundation.
    static func forEachWord(_ text: String, _ body: ([UInt8]) -> Void) {
        var current: [Unicode.Scalar] = []
        var ascii = true
        func flush() {
            guard !current.isEmpty else { return }
            emitWords(current, ascii: ascii, body)
            current.removeAll(keepingCapacity: true)
            ascii = true
        }
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if value < 0x80 {
                if value == 0x20 || value == 0x09 || value == 0x0A || value == 0x0D {
                    flush()
                } else if value >= 0x20 && value != 0x7F {
                    current.append(scalar)
                }
                // other ASCII controls are dropped
                continue
            }
            if value == 0xFFFD { continue }
            let category = scalar.properties.generalCategory
            if category == .spaceSeparator {
                flush()
            } else if category == .control || category == .format {
                continue
            } else if isCJK(value) {
                flush()
                body(Array(String(scalar).utf8))
            } else if scalar.properties.isWhitespace {
                flush()  // line and paragraph separators: white space to Python's split()
            } else {
                current.append(scalar)
                ascii = false
            }
        }
        flush()
    }

    /// One run of non-space characters as its words and punctuation marks, lower-cased and
    /// (unless ASCII) without accents.
    private static func emitWords(_ current: [Unicode.Scalar], ascii: Bool, _ body: ([UInt8]) -> Void) {
        var word: [UInt8] = []
        func emitPunctuation(_ bytes: [UInt8]) {
            if !word.isEmpty { body(word) }
            body(bytes)
            word = []
        }
        if ascii {
            for scalar in current {
                var byte = UInt8(scalar.value)
                if byte >= 0x41 && byte <= 0x5A { byte += 0x20 }
                if isPunctuation(scalar) { emitPunctuation([byte]) } else { word.append(byte) }
            }
        } else {
            let lowered = String(String.UnicodeScalarView(current)).lowercased()
                .decomposedStringWithCanonicalMapping
            for scalar in lowered.unicodeScalars where scalar.properties.generalCategory != .nonspacingMark {
                if isPunctuation(scalar) {
                    emitPunctuation(Array(String(scalar).utf8))
                } else {
                    word.append(contentsOf: String(scalar).utf8)
                }
            }
        }
        if !word.isEmpty { body(word) }
    }

    static func isPunctuation(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        if (33...47).contains(v) || (58...64).contains(v) || (91...96).contains(v) || (123...126).contains(v) {
            return true
        }
        switch scalar.properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
            .initialPunctuation, .finalPunctuation, .otherPunctuation:
            return true
        default: return false
        }
    }

    static func isCJK(_ v: UInt32) -> Bool {
        (0x4E00...0x9FFF).contains(v) || (0x3400...0x4DBF).contains(v) || (0x20000...0x2A6DF).contains(v)
            || (0x2A700...0x2B73F).contains(v) || (0x2B740...0x2B81F).contains(v) || (0x2B820...0x2CEAF).contains(v)
            || (0xF900...0xFAFF).contains(v) || (0x2F800...0x2FA1F).contains(v)
    }
}
