import Foundation

/// A multinomial Naive Bayes model over words and word pairs of title + summary, with uniform
/// class priors (the training set's class sizes say nothing about tomorrow's news). Features are
/// hashed into a fixed table, so the model file holds no training text. Written here because no
/// Swift package on this platform offers a text classifier that trains and loads offline.
public struct TextModel: Sendable {
    /// log P(feature bucket | class), class-major.
    let logLikelihood: [Float]
    public let buckets: Int
    public static let classes = NewsCategory.allCases

    static let magic: [UInt8] = Array("NPNB1".utf8)

    /// Trains from labelled texts. `alpha` is the additive smoothing.
    public static func train(_ examples: [(text: String, category: NewsCategory)], buckets: Int = 1 << 17, alpha: Float = 0.1) -> TextModel {
        var counts = [Float](repeating: 0, count: classes.count * buckets)
        var totals = [Float](repeating: 0, count: classes.count)
        for (text, category) in examples {
            let c = classes.firstIndex(of: category)!
            for feature in features(text, buckets: buckets) {
                counts[c * buckets + feature] += 1
                totals[c] += 1
            }
        }
        var table = [Float](repeating: 0, count: counts.count)
        for c in classes.indices {
            let denominator = log(totals[c] + alpha * Float(buckets))
            for b in 0..<buckets { table[c * buckets + b] = log(counts[c * buckets + b] + alpha) - denominator }
        }
        return TextModel(logLikelihood: table, buckets: buckets)
    }

    /// The category scores (log-probabilities up to a constant) and a softmax confidence.
    public func classify(_ text: String) -> (category: NewsCategory, confidence: Double, scores: [Double]) {
        var scores = [Double](repeating: 0, count: Self.classes.count)
        for feature in Self.features(text, buckets: buckets) {
            for c in scores.indices { scores[c] += Double(logLikelihood[c * buckets + feature]) }
        }
        let best = scores.indices.max { scores[$0] < scores[$1] }!
        // NB log-odds are overconfident; damping them gives confidences that mean something
        // when compared with min_confidence.
        let damped = scores.map { ($0 - scores[best]) / Self.temperature }
        let sum = damped.reduce(0) { $0 + exp($1) }
        return (Self.classes[best], 1 / sum, scores)
    }

    static let temperature = 8.0

    /// Lower-cased words (letters and digits) and adjacent word pairs, hashed (FNV-1a).
    static func features(_ text: String, buckets: Int) -> [Int] {
        var words: [UInt64] = []
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var inWord = false
        for scalar in text.lowercased().unicodeScalars {
            if scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                var value = scalar.value
                while value > 0 {
                    hash = (hash ^ UInt64(value & 0xFF)) &* 0x100_0000_01b3
                    value >>= 8
                }
                inWord = true
            } else if inWord {
                words.append(hash)
                hash = 0xcbf2_9ce4_8422_2325
                inWord = false
            }
        }
        if inWord { words.append(hash) }
        var out = words.map { Int($0 % UInt64(buckets)) }
        for i in words.indices.dropLast() {
            out.append(Int(((words[i] &* 31) ^ (words[i + 1] &* 0x9E37_79B9_7F4A_7C15)) % UInt64(buckets)))
        }
        return out
    }

    // MARK: File format: "NPNB1", UInt32 buckets, then classes × buckets Float32, little-endian.

    public func serialized() -> Data {
        var data = Data(Self.magic)
        var count = UInt32(buckets).littleEndian
        withUnsafeBytes(of: &count) { data.append(contentsOf: $0) }
        logLikelihood.withUnsafeBufferPointer { data.append(UnsafeBufferPointer(start: UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: UInt8.self), count: $0.count * 4)) }
        return data
    }

    public init(serialized data: Data) throws {
        guard data.count > 9, Array(data.prefix(5)) == Self.magic else { throw ModelError.notAModel }
        let buckets = Int(data.subdata(in: 5..<9).withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }.littleEndian)
        let expected = 9 + Self.classes.count * buckets * 4
        guard buckets > 0, data.count == expected else { throw ModelError.wrongSize(data.count, expected) }
        var table = [Float](repeating: 0, count: Self.classes.count * buckets)
        _ = table.withUnsafeMutableBytes { data.copyBytes(to: $0, from: 9..<expected) }
        self.init(logLikelihood: table, buckets: buckets)
    }

    init(logLikelihood: [Float], buckets: Int) {
        self.logLikelihood = logLikelihood
        self.buckets = buckets
    }

    public enum ModelError: Error, CustomStringConvertible {
        case notAModel
        case wrongSize(Int, Int)
        case missing

        public var description: String {
            switch self {
            case .notAModel: return "not a newspush text model"
            case .wrongSize(let got, let expected): return "model file has \(got) bytes, expected \(expected)"
            case .missing: return "the built-in text model is missing from the bundle"
            }
        }
    }

    /// The model shipped with newspush.
    public static func bundled() throws -> TextModel {
        guard let url = Bundle.module.url(forResource: "text-model", withExtension: "bin"),
              let data = try? Data(contentsOf: url) else { throw ModelError.missing }
        return try TextModel(serialized: data)
    }
}
