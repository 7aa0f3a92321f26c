import Foundation
import NewsPushModel

/// A linear text classifier over hashed features of title and summary: lower-cased words, word
/// pairs and title words (marked apart, so a word in the headline counts differently from the
/// same word in the standfirst). Two trainers share it, chosen by measurement
/// (`ClassifierTraining.Method`): multinomial Naive Bayes with uniform class priors, and
/// multinomial logistic regression with class-balanced weights. Features are hashed into a fixed
/// table, so the model file holds no training text. Written here because no Swift package on this
/// platform trains and loads a text classifier offline.
public struct TextModel: Sendable {
    /// How the model was trained.
    public enum Kind: UInt8, Sendable, CustomStringConvertible {
        case naiveBayes = 0
        case logistic = 1

        /// The method's name.
        public var description: String { self == .naiveBayes ? "naive Bayes" : "logistic regression" }
    }

    /// How the model was trained.
    public let kind: Kind
    /// How many hashed feature buckets it has.
    public let buckets: Int
    /// Eight-bit codes of the six class weights of each bucket (two lanes unused); a weight is
    /// `offsets[class] + steps[class] × code`. Kept as codes in memory: 4 MB that the random
    /// reads of scoring find in cache far more often than 16 MB of floats would be.
    let codes: [SIMD8<UInt8>]
    let offsets: SIMD8<Float>
    let steps: SIMD8<Float>
    let bias: SIMD8<Float>
    /// Logistic regression: eight-bit codes of each bucket's inverse document frequency
    /// (`idfLow + idfStep × code`); empty for naive Bayes.
    let idfCodes: [UInt8]
    let idfLow: Float
    let idfStep: Float
    /// The classes in score order.
    public static let classes = NewsCategory.allCases
    static let classCount = NewsCategory.count

    // MARK: Scoring

    /// The category, a confidence in 0…1 and the per-class scores.
    public func classify(title: String, summary: String?) -> (
        category: NewsCategory, confidence: Double, scores: [Double]
    ) {
        // Σ weight = offset × Σ x + step × Σ code × x, so the codes are summed and the scale
        // applied once.
        var codeSum = SIMD8<Float>()
        var xSum: Float = 0
        var norm: Float = 0
        // The buckets are gathered first and summed in a tight loop, so the processor can have
        // many of the (random, mostly uncached) table reads in flight at once.
        var features: [Int] = []
        features.reserveCapacity(256)
        Self.forEachFeature(title: title, summary: summary, buckets: buckets) { features.append($0) }
        codes.withUnsafeBufferPointer { codes in
            if kind == .logistic {
                // Logistic regression: features weighted by their idf, on a unit-length vector
                // (as it was trained).
                let low = idfLow, step = idfStep
                idfCodes.withUnsafeBufferPointer { idf in
                    for f in features {
                        let x = low + step * Float(idf[f])
                        codeSum += SIMD8<Float>(codes[f]) * x
                        xSum += x
                        norm += x * x
                    }
                }
            } else {
                // Naive Bayes sums log-likelihoods per occurrence.
                for f in features { codeSum += SIMD8<Float>(codes[f]) }
                xSum = Float(features.count)
            }
        }
        var scores = offsets * xSum + steps * codeSum
        if kind == .logistic, norm > 0 { scores *= 1 / norm.squareRoot() }
        scores += bias
        var best = 0
        for c in 1..<Self.classCount where scores[c] > scores[best] { best = c }
        // Softmax. NB log-odds are overconfident; damping them gives confidences that mean
        // something when compared with min_confidence. Logistic scores are log-odds already.
        let temperature: Float = kind == .naiveBayes ? 8 : 1
        var total: Float = 0
        for c in 0..<Self.classCount { total += exp((scores[c] - scores[best]) / temperature) }
        return (Self.classes[best], Double(1 / total), (0..<Self.classCount).map { Double(scores[$0]) })
    }

    /// The category of a text, its confidence and every class's score.
    public func classify(_ text: String) -> (category: NewsCategory, confidence: Double, scores: [Double]) {
        classify(title: text, summary: nil)
    }

    // MARK: Features

    static func features(title: String, summary: String?, buckets: Int) -> [Int] {
        var list: [Int] = []
        forEachFeature(title: title, summary: summary, buckets: buckets) { list.append($0) }
        return list
    }

    private static let seed: UInt64 = 0xcbf2_9ce4_8422_2325
    private static let titleMark: UInt64 = 0x51_7CC1_B727_220A

    /// Calls `body` with the bucket of every feature: each word, each adjacent word pair, and
    /// each title word once more as a title word. Words are runs of letters and digits,
    /// lower-cased (ASCII and Latin-1 letters; other scripts kept as they are); general
    /// punctuation (U+2000–U+206F: curly quotes, dashes) and U+0080–U+00BF separate words.
    /// Read from the UTF-8 bytes: this runs on every new item.
    static func forEachFeature(title: String, summary: String?, buckets: Int, _ body: (Int) -> Void) {
        let modulus = UInt64(buckets)
        // Bucket counts are powers of two in practice: a mask then gives the same bucket as the
        // remainder without a division per feature.
        let mask: UInt64? = buckets.nonzeroBitCount == 1 ? modulus - 1 : nil
        func bucket(_ hash: UInt64) -> Int { Int(mask.map { hash & $0 } ?? hash % modulus) }
        var previous: UInt64 = 0
        var hasPrevious = false
        func emit(_ word: UInt64, inTitle: Bool) {
            body(bucket(word))
            if inTitle { body(bucket((word ^ titleMark) &* 0x9E37_79B9_7F4A_7C15)) }
            if hasPrevious { body(bucket((previous &* 31) ^ (word &* 0x9E37_79B9_7F4A_7C15))) }
            previous = word
            hasPrevious = true
        }
        forEachWordHash(title) { emit($0, inTitle: true) }
        hasPrevious = false
        if let summary { forEachWordHash(summary) { emit($0, inTitle: false) } }
    }

    /// The hash of each word of `text`, in order: runs of ASCII letters and digits and of
    /// non-ASCII letters, lower-cased (Latin-1 capitals too); punctuation, general punctuation
    /// (U+2000–U+207F) and Latin-1 symbols (U+0080–U+00BF) separate words.
    @inline(__always)
    private static func forEachWordHash(_ text: String, _ word: (UInt64) -> Void) {
        var hash = seed
        var inWord = false
        var skip = 0
        var text = text
        text.withUTF8 { bytes in
            var i = 0
            while i < bytes.count {
                var b = bytes[i]
                var isWordByte: Bool
                if skip > 0 {
                    skip -= 1
                    isWordByte = false
                } else if b < 0x80 {
                    if b >= 0x41 && b <= 0x5A { b |= 0x20 }
                    isWordByte = (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
                } else if b == 0xE2, i + 1 < bytes.count, bytes[i + 1] == 0x80 || bytes[i + 1] == 0x81 {
                    skip = 2  // U+2000–U+207F: a separator of three bytes
                    isWordByte = false
                } else if b == 0xC2 {
                    // U+0080–U+00BF: no-break space, «, », ¡… separate words.
                    skip = 1
                    isWordByte = false
                } else if b == 0xC3, i + 1 < bytes.count, bytes[i + 1] >= 0x80, bytes[i + 1] <= 0x9E,
                    bytes[i + 1] != 0x97
                {
                    // Latin-1 capitals (À–Þ, not ×): lower-case the second byte.
                    hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3
                    hash = (hash ^ UInt64(bytes[i + 1] | 0x20)) &* 0x100_0000_01b3
                    inWord = true
                    i += 2
                    continue
                } else {
                    isWordByte = true
                }
                if isWordByte {
                    hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3
                    inWord = true
                } else if inWord {
                    word(hash)
                    hash = seed
                    inWord = false
                }
                i += 1
            }
        }
        if inWord { word(hash) }
    }

    // MARK: Training

    /// Multinomial Naive Bayes with uniform priors; `alpha` is the additive smoothing.
    public static func trainNaiveBayes(
        _ examples: [(title: String, summary: String, category: NewsCategory)],
        buckets: Int = 1 << 19, alpha: Float = 0.1
    ) -> TextModel {
        var counts = [Float](repeating: 0, count: classCount * buckets)
        var totals = [Float](repeating: 0, count: classCount)
        for example in examples {
            let c = example.category.index
            for feature in features(title: example.title, summary: example.summary, buckets: buckets) {
                counts[feature * classCount + c] += 1
                totals[c] += 1
            }
        }
        var table = [Float](repeating: 0, count: counts.count)
        for c in 0..<classCount {
            let denominator = log(totals[c] + alpha * Float(buckets))
            for b in 0..<buckets { table[b * classCount + c] = log(counts[b * classCount + c] + alpha) - denominator }
        }
        return TextModel(
            kind: .naiveBayes, buckets: buckets, flat: table, bias: [Float](repeating: 0, count: classCount), idf: [])
    }

    /// Multinomial logistic regression on unit-length idf-weighted feature vectors, trained by
    /// AdaGrad with L2 regularisation; each class weighs `N / (6 · N_class)` in the loss, so
    /// thin classes (Technology, Science) count as much as big ones. Deterministic: a fixed
    /// shuffle seed.
    public static func trainLogistic(
        _ examples: [(title: String, summary: String, category: NewsCategory)],
        buckets: Int = 1 << 19, epochs: Int = 12, learningRate: Float = 0.2,
        l2: Float = 1e-6, balanced: Bool = true
    ) -> TextModel {
        let featureLists = examples.map { features(title: $0.title, summary: $0.summary, buckets: buckets) }
        // Smoothed inverse document frequency, as commonly used with tf-idf.
        var documentFrequency = [Float](repeating: 0, count: buckets)
        for list in featureLists { for f in Set(list) { documentFrequency[f] += 1 } }
        let n = Float(examples.count)
        let idf = documentFrequency.map { log((1 + n) / (1 + $0)) + 1 }
        let labels = examples.map { $0.category.index }
        var classSizes = [Float](repeating: 0, count: classCount)
        for label in labels { classSizes[label] += 1 }
        let classWeights = classSizes.map { balanced && $0 > 0 ? Float(examples.count) / (Float(classCount) * $0) : 1 }
        var weights = [Float](repeating: 0, count: buckets * classCount)
        var squared = [Float](repeating: 1e-8, count: buckets * classCount)
        var bias = [Float](repeating: 0, count: classCount)
        var biasSquared = [Float](repeating: 1e-8, count: classCount)
        var order = Array(examples.indices)
        var generator = ClassifierTraining.SplitMix(seed: 7)
        var scores = [Float](repeating: 0, count: classCount)
        for _ in 0..<epochs {
            order.shuffle(using: &generator)
            for index in order {
                let list = featureLists[index]
                guard !list.isEmpty else { continue }
                var norm: Float = 0
                for f in list { norm += idf[f] * idf[f] }
                let scale = 1 / norm.squareRoot()
                for c in 0..<classCount { scores[c] = bias[c] }
                for f in list { for c in 0..<classCount { scores[c] += weights[f * classCount + c] * idf[f] * scale } }
                let top = scores.max() ?? 0
                var sum: Float = 0
                for c in 0..<classCount {
                    scores[c] = exp(scores[c] - top)
                    sum += scores[c]
                }
                let weight = classWeights[labels[index]]
                for c in 0..<classCount {
                    // Gradient of the weighted cross-entropy for class c.
                    let g = weight * (scores[c] / sum - (c == labels[index] ? 1 : 0))
                    biasSquared[c] += g * g
                    bias[c] -= learningRate * g / biasSquared[c].squareRoot()
                    for f in list {
                        let k = f * classCount + c
                        let gradient = g * idf[f] * scale + l2 * weights[k]
                        squared[k] += gradient * gradient
                        weights[k] -= learningRate * gradient / squared[k].squareRoot()
                    }
                }
            }
        }
        return TextModel(kind: .logistic, buckets: buckets, flat: weights, bias: bias, idf: idf)
    }

    // MARK: File format
    // "NPTM3", kind (UInt8), buckets (UInt32); per class a bias, an offset and a step (Float32);
    // buckets × 6 weights as UInt8 (weight = offset + step × byte); for logistic regression then
    // the idf offset and step (Float32) and buckets idf values as UInt8; little-endian. Eight-bit
    // weights keep the file small, the load fast and scoring in cache; the model in memory is the
    // stored one, so the measurements are of what ships.

    static let magic: [UInt8] = Array("NPTM3".utf8)

    /// The model as a file.
    public func serialized() -> Data {
        var data = Data(Self.magic)
        data.append(kind.rawValue)
        func append(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        func append(_ value: Float) { append(value.bitPattern) }
        append(UInt32(buckets))
        for c in 0..<Self.classCount {
            append(bias[c])
            append(offsets[c])
            append(steps[c])
        }
        var bytes = [UInt8](repeating: 0, count: buckets * Self.classCount)
        for (b, vector) in codes.enumerated() {
            for c in 0..<Self.classCount { bytes[b * Self.classCount + c] = vector[c] }
        }
        data.append(contentsOf: bytes)
        if kind == .logistic {
            append(idfLow)
            append(idfStep)
            data.append(contentsOf: idfCodes)
        }
        return data
    }

    /// Eight-bit codes for `values` spread over their range: (codes, offset, step).
    private static func quantize(_ values: [Float]) -> ([UInt8], Float, Float) {
        let low = values.min() ?? 0, high = values.max() ?? 0
        let step = high > low ? (high - low) / 255 : 1
        return (values.map { UInt8(max(0, min(255, (($0 - low) / step).rounded()))) }, low, step)
    }

    /// A model as `serialized` writes it.
    public init(serialized data: Data) throws {
        let header = Self.magic.count + 1 + 4 + Self.classCount * 12
        guard data.count > header, data.prefix(Self.magic.count).elementsEqual(Self.magic) else {
            throw ModelError.notAModel
        }
        guard let kind = Kind(rawValue: data[data.startIndex + Self.magic.count]) else { throw ModelError.notAModel }
        let buckets = data.withUnsafeBytes {
            Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: Self.magic.count + 1, as: UInt32.self)))
        }
        let expected = header + buckets * Self.classCount + (kind == .logistic ? 8 + buckets : 0)
        guard buckets > 0, data.count == expected else { throw ModelError.wrongSize(data.count, expected) }
        self = data.withUnsafeBytes { raw -> TextModel in
            func uint32(_ offset: Int) -> UInt32 {
                UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            }
            func float(_ offset: Int) -> Float { Float(bitPattern: uint32(offset)) }
            var bias = SIMD8<Float>(), offsets = SIMD8<Float>(), steps = SIMD8<Float>()
            for c in 0..<Self.classCount {
                let base = Self.magic.count + 5 + c * 12
                bias[c] = float(base)
                offsets[c] = float(base + 4)
                steps[c] = float(base + 8)
            }
            let codes = [SIMD8<UInt8>](unsafeUninitializedCapacity: buckets) { buffer, initialized in
                var position = header
                for b in 0..<buckets {
                    var vector = SIMD8<UInt8>()
                    for c in 0..<Self.classCount { vector[c] = raw[position + c] }
                    buffer[b] = vector
                    position += Self.classCount
                }
                initialized = buckets
            }
            var idfCodes: [UInt8] = [], idfLow: Float = 0, idfStep: Float = 0
            if kind == .logistic {
                let base = header + buckets * Self.classCount
                idfLow = float(base)
                idfStep = float(base + 4)
                idfCodes = Array(raw[(base + 8)..<(base + 8 + buckets)])
            }
            return TextModel(
                kind: kind, buckets: buckets, codes: codes, offsets: offsets, steps: steps, bias: bias,
                idfCodes: idfCodes, idfLow: idfLow, idfStep: idfStep)
        }
    }

    init(
        kind: Kind, buckets: Int, codes: [SIMD8<UInt8>], offsets: SIMD8<Float>, steps: SIMD8<Float>, bias: SIMD8<Float>,
        idfCodes: [UInt8], idfLow: Float, idfStep: Float
    ) {
        self.kind = kind
        self.buckets = buckets
        self.codes = codes
        self.offsets = offsets
        self.steps = steps
        self.bias = bias
        self.idfCodes = idfCodes
        self.idfLow = idfLow
        self.idfStep = idfStep
    }

    /// From training's flat arrays (`flat[bucket * 6 + class]`), quantized per class.
    init(kind: Kind, buckets: Int, flat: [Float], bias: [Float], idf: [Float]) {
        var codes = [SIMD8<UInt8>](repeating: SIMD8(), count: buckets)
        var offsets = SIMD8<Float>(), steps = SIMD8<Float>(), biasVector = SIMD8<Float>()
        for c in 0..<Self.classCount {
            let (classCodes, low, step) = Self.quantize((0..<buckets).map { flat[$0 * Self.classCount + c] })
            for b in 0..<buckets { codes[b][c] = classCodes[b] }
            offsets[c] = low
            steps[c] = step
            biasVector[c] = bias[c]
        }
        let (idfCodes, idfLow, idfStep) = idf.isEmpty ? ([], 0, 0) : Self.quantize(idf)
        self.init(
            kind: kind, buckets: buckets, codes: codes, offsets: offsets, steps: steps, bias: biasVector,
            idfCodes: idfCodes, idfLow: idfLow, idfStep: idfStep)
    }

    /// Why a model file cannot be used.
    public enum ModelError: Error, Equatable, CustomStringConvertible {
        case notAModel
        case wrongSize(Int, Int)
        case missing
        case missingTable
        case missingEncoder

        /// What is wrong with the file.
        public var description: String {
            switch self {
            case .notAModel: return "not a newspush text model"
            case .wrongSize(let got, let expected): return "model file has \(got) bytes, expected \(expected)"
            case .missing: return "the built-in text model is missing from the bundle"
            case .missingTable:
                return "the encoder's table or head is missing (tools/classifier/build-model.sh makes them)"
            case .missingEncoder:
                return "the sentence encoder's weights or head are missing (tools/classifier/build-model.sh makes them)"
            }
        }
    }

    /// The model shipped with newspush.
    public static func bundled() throws -> TextModel {
        guard let url = Bundle.module.url(forResource: "text-model", withExtension: "bin"),
            let data = try? Data(contentsOf: url)
        else { throw ModelError.missing }
        return try TextModel(serialized: data)
    }
}
