import Foundation
import NewsPushModel

/// The sentence encoder all-MiniLM-L6-v2 distilled to a table (README "The classifier"): every
/// WordPiece token was run through the encoder once, offline (tools/classifier/distil.py),
/// reduced to 256 dimensions and given a weight by its frequency, so a text's vector is the
/// weighted mean of its tokens' rows: a lookup and a sum, no network and no Python. Rows are
/// kept as eight-bit codes with one scale each (8 MB).
public struct TokenTable: Sendable {
    /// The WordPiece vocabulary, in id order.
    public let vocabulary: [String]
    /// The tokenizer of that vocabulary.
    public let tokenizer: WordPieceTokenizer
    /// The width of its vectors.
    public let dimensions: Int
    let weights: [Float]
    let scales: [Float]
    let codes: [Int8]

    // "NPTT1\0\0\0", count and dimensions (UInt32), the vocabulary as UTF-8 lines (length first,
    // padded to four bytes), then per token a weight and a scale (Float32), then the codes.
    /// The table as `distil.py` writes it.
    public init(serialized data: Data) throws(TextModel.ModelError) {
        guard data.count >= 20, data.prefix(5) == Data("NPTT1".utf8) else { throw .notAModel }
        func uint32(_ offset: Int) -> Int {
            Int(
                UInt32(littleEndian: data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) })
            )
        }
        let count = uint32(8), dimensions = uint32(12), blobLength = uint32(16)
        let vocabularyEnd = 20 + blobLength, floatsStart = vocabularyEnd + (4 - blobLength % 4) % 4
        let expected = floatsStart + count * 8 + count * dimensions
        guard data.count == expected else { throw .wrongSize(data.count, expected) }
        vocabulary = String(decoding: data[20..<vocabularyEnd], as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false
        ).map(String.init)
        guard vocabulary.count == count else { throw .notAModel }
        self.dimensions = dimensions
        (weights, scales, codes) = data.withUnsafeBytes { raw in
            let floats = { (start: Int) in
                (0..<count).map {
                    Float(
                        bitPattern: UInt32(
                            littleEndian: raw.loadUnaligned(fromByteOffset: start + 4 * $0, as: UInt32.self)))
                }
            }
            let codeStart = floatsStart + count * 8
            let codes = Array(
                UnsafeRawBufferPointer(rebasing: raw[codeStart..<codeStart + count * dimensions]).bindMemory(
                    to: Int8.self))
            return (floats(floatsStart), floats(floatsStart + count * 4), codes)
        }
        tokenizer = WordPieceTokenizer(vocabulary: vocabulary)
    }

    /// The table shipped with newspush.
    public static func bundled() throws(TextModel.ModelError) -> TokenTable {
        guard let data = bundledResource("token-table") else { throw .missingTable }
        return try TokenTable(serialized: data)
    }

    /// The weighted mean of the rows of `text`'s tokens (zero when it has none).
    public func vector(_ text: String) -> [Float] {
        var sum = [Float](repeating: 0, count: dimensions)
        var total: Float = 0
        let d = dimensions
        codes.withUnsafeBufferPointer { codes in
            sum.withUnsafeMutableBufferPointer { sum in
                for id in tokenizer.ids(text) {
                    let row = Int(id), w = weights[row]
                    guard w > 0 else { continue }
                    let factor = w * scales[row]
                    for k in 0..<d { sum[k] += factor * Float(codes[row * d + k]) }
                    total += w
                }
            }
        }
        return total > 0 ? sum.map { $0 / total } : sum
    }

    /// `vector` scaled to unit length, what the head reads.
    public func unitVector(_ text: String) -> [Float] {
        unitLength(vector(text))
    }
}

/// A linear layer over the table's unit vectors (multinomial logistic regression, classes
/// weighed by `N / (6 · N_class)`), and the two weights with which its scores and the
/// bag-of-words model's are added; both weights are fitted on held-out items, so they also
/// calibrate the confidence (a temperature per model).
public struct EncoderHead: Sendable {
    /// The width of the vectors it reads.
    public let dimensions: Int
    let weights: [Float]  // classes × dimensions
    let bias: [Float]
    /// The weight of the bag-of-words scores in the sum.
    public var textWeight: Float
    /// The weight of this head's scores in the sum.
    public var encoderWeight: Float
    static let classCount = NewsCategory.count

    /// The six classes' scores of a unit vector.
    public func scores(_ unit: [Float]) -> [Float] {
        (0..<Self.classCount).map { c in
            var s = bias[c]
            for k in 0..<dimensions { s += weights[c * dimensions + k] * unit[k] }
            return s
        }
    }

    /// Trains the layer: full-batch gradient descent with AdaGrad and L2 regularisation.
    public static func train(
        _ vectors: [[Float]], labels: [Int], epochs: Int = 300, rate: Float = 0.5, l2: Float = 1e-4
    ) -> EncoderHead {
        let n = vectors.count, d = vectors.first?.count ?? 0, c = classCount
        var counts = [Float](repeating: 0, count: c)
        for label in labels { counts[label] += 1 }
        let classWeight = counts.map { $0 > 0 ? Float(n) / (Float(c) * $0) : 0 }
        var w = [Float](repeating: 0, count: c * d), b = [Float](repeating: 0, count: c)
        var gw2 = [Float](repeating: 1e-8, count: c * d), gb2 = [Float](repeating: 1e-8, count: c)
        for _ in 0..<epochs {
            var gw = [Float](repeating: 0, count: c * d), gb = [Float](repeating: 0, count: c)
            for (x, label) in zip(vectors, labels) {
                var s = b
                for j in 0..<c { for k in 0..<d { s[j] += w[j * d + k] * x[k] } }
                let top = s.max() ?? 0
                let e = s.map { exp($0 - top) }, total = e.reduce(0, +)
                let cw = classWeight[label]
                for j in 0..<c {
                    let g = cw * (e[j] / total - (j == label ? 1 : 0))
                    gb[j] += g
                    for k in 0..<d { gw[j * d + k] += g * x[k] }
                }
            }
            for i in 0..<(c * d) {
                let g = gw[i] / Float(n) + l2 * w[i]
                gw2[i] += g * g
                w[i] -= rate * g / gw2[i].squareRoot()
            }
            for j in 0..<c {
                let g = gb[j] / Float(n)
                gb2[j] += g * g
                b[j] -= rate * g / gb2[j].squareRoot()
            }
        }
        return EncoderHead(dimensions: d, weights: w, bias: b, textWeight: 1, encoderWeight: 1)
    }
}

// (Reading and writing in an extension, so the struct keeps its memberwise initializer.)
extension EncoderHead {
    // "NPEH1\0\0\0", dimensions (UInt32), weights, bias, textWeight, encoderWeight (Float32).
    /// The head as a file (`NPEH1`).
    public func serialized() -> Data {
        var data = Data("NPEH1\0\0\0".utf8)
        withUnsafeBytes(of: UInt32(dimensions).littleEndian) { data.append(contentsOf: $0) }
        for value in weights + bias + [textWeight, encoderWeight] {
            withUnsafeBytes(of: value.bitPattern.littleEndian) { data.append(contentsOf: $0) }
        }
        return data
    }

    /// A head as `serialized` writes it.
    public init(serialized data: Data) throws(TextModel.ModelError) {
        guard data.count >= 12, data.prefix(5) == Data("NPEH1".utf8) else { throw .notAModel }
        let floats: [Float] = data.withUnsafeBytes { raw in
            (0..<(raw.count - 12) / 4).map {
                Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12 + 4 * $0, as: UInt32.self)))
            }
        }
        let d = Int(UInt32(littleEndian: data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self) }))
        let c = Self.classCount
        guard floats.count == c * d + c + 2 else { throw .wrongSize(data.count, 12 + 4 * (c * d + c + 2)) }
        self.init(
            dimensions: d, weights: Array(floats[0..<(c * d)]), bias: Array(floats[(c * d)..<(c * d + c)]),
            textWeight: floats[c * d + c], encoderWeight: floats[c * d + c + 1])
    }
}

/// What turns a text into a unit vector for a head: the full sentence encoder
/// (`SentenceEncoder`) or its distilled table (`TokenTable`).
public protocol TextEncoder: Sendable {
    func unitVector(_ text: String) -> [Float]
    /// `unitVector` of each text (the full encoder does several at once, faster).
    func unitVectors(_ texts: [String]) -> [[Float]]
}

extension TextEncoder {
    /// `unitVector` of each text.
    public func unitVectors(_ texts: [String]) -> [[Float]] { texts.map(unitVector) }
}

/// `v` scaled to length one (a zero vector stays zero).
func unitLength(_ v: [Float]) -> [Float] {
    let norm = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
    return norm > 0 ? v.map { $0 / norm } : v
}

extension TokenTable: TextEncoder {}
extension SentenceEncoder: TextEncoder {}

/// The text model the classifier uses: the bag-of-words model, with a sentence encoder beside it
/// (the scores of the two are added with the head's fitted weights): the full encoder when its
/// files are there, else the distilled table, else the bag-of-words model alone.
public struct TextClassifier: Sendable {
    /// The bag-of-words model.
    public let textModel: TextModel
    /// The sentence encoder and its head, when they could be loaded.
    public let encoder: (encoder: any TextEncoder, head: EncoderHead)?

    /// The classifier of these models.
    public init(textModel: TextModel, encoder: (encoder: any TextEncoder, head: EncoderHead)? = nil) {
        self.textModel = textModel
        self.encoder = encoder
    }

    /// `withEncoder: false` is the bag-of-words model alone (items that will not be pushed:
    /// the encoder is not worth its time there).
    public func classify(title: String, summary: String?, withEncoder: Bool = true) -> (
        category: NewsCategory, confidence: Double
    ) {
        classify([(title, summary)], withEncoder: withEncoder)[0]
    }

    /// `classify` for several texts, the encoder's work done for all of them at once.
    public func classify(_ texts: [(title: String, summary: String?)], withEncoder: Bool = true) -> [(
        category: NewsCategory, confidence: Double
    )] {
        let bagOfWords = texts.map { textModel.classify(title: $0.title, summary: $0.summary) }
        guard withEncoder, let (encoder, head) = encoder else { return bagOfWords.map { ($0.category, $0.confidence) } }
        let vectors = encoder.unitVectors(texts.map { $0.title + " " + ($0.summary ?? "") })
        return zip(bagOfWords, vectors).map { text, vector in
            let encoded = head.scores(vector)
            return Self.decide(
                (0..<EncoderHead.classCount).map {
                    head.textWeight * Float(text.scores[$0]) + head.encoderWeight * encoded[$0]
                })
        }
    }

    static func decide(_ scores: [Float]) -> (category: NewsCategory, confidence: Double) {
        let best = scores.indices.max { scores[$0] < scores[$1] } ?? 0
        let total = scores.reduce(Float(0)) { $0 + exp($1 - scores[best]) }
        return (NewsCategory.allCases[best], Double(1 / total))
    }

    /// Which sentence encoder `bundled` loads.
    public enum EncoderChoice: Sendable {
        /// The full encoder (23 MB of weights), else the distilled table.
        case full
        /// The distilled table (8 MB).
        case table
        /// None: the bag-of-words model alone (a run with nothing for the encoder to do).
        case none
    }

    /// The shipped models; when an encoder's files are missing or damaged, the next one down
    /// and the reason in `warning`.
    public static func bundled(_ choice: EncoderChoice = .full) throws -> (classifier: TextClassifier, warning: String?)
    {
        let textModel = try TextModel.bundled()
        switch choice {
        case .none:
            return (TextClassifier(textModel: textModel), nil)
        case .table:
            return load(
                textModel: textModel, table: bundledResource("token-table"), head: bundledResource("encoder-head"))
        case .full:
            return load(
                textModel: textModel, table: bundledResource("token-table"), head: bundledResource("encoder-head"),
                encoder: bundledResource("encoder"), encoderHead: bundledResource("transformer-head"))
        }
    }

    /// The classifier with the full encoder when its weights, head and the table (its
    /// vocabulary) are there and readable; else the distilled table, else the bag of words,
    /// and why.
    public static func load(textModel: TextModel, table: Data?, head: Data?, encoder: Data?, encoderHead: Data?) -> (
        classifier: TextClassifier, warning: String?
    ) {
        do {
            guard let table, let encoder, let encoderHead else { throw TextModel.ModelError.missingEncoder }
            let head = try EncoderHead(serialized: encoderHead)  // (the small file first)
            let sentenceEncoder = try SentenceEncoder(
                encoder: TransformerEncoder(serialized: encoder), table: TokenTable(serialized: table))
            return (TextClassifier(textModel: textModel, encoder: (sentenceEncoder, head)), nil)
        } catch {
            let (fallback, warning) = load(textModel: textModel, table: table, head: head)
            return (
                fallback,
                "the sentence encoder is not usable (\(error)); " + (warning ?? "classifying with the distilled table")
            )
        }
    }

    /// The classifier from the distilled table's files when both are there and readable, else
    /// the bag-of-words model alone and why.
    public static func load(textModel: TextModel, table: Data?, head: Data?) -> (
        classifier: TextClassifier, warning: String?
    ) {
        do {
            guard let table, let head else { throw TextModel.ModelError.missingTable }
            return (
                TextClassifier(
                    textModel: textModel,
                    encoder: (try TokenTable(serialized: table), try EncoderHead(serialized: head))), nil
            )
        } catch {
            return (
                TextClassifier(textModel: textModel),
                "the distilled encoder is not usable (\(error)); classifying with the bag-of-words model alone"
            )
        }
    }
}

/// A `.bin` resource of this module, or nil when it is missing or unreadable.
func bundledResource(_ name: String) -> Data? {
    Bundle.module.url(forResource: name, withExtension: "bin").flatMap { try? Data(contentsOf: $0) }
}
