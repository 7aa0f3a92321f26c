import Foundation
import NewsPushModel

/// The sentence encoder all-MiniLM-L6-v2 itself (README "The classifier"): a text's WordPiece
/// tokens through six BERT layers (384 dimensions, 12 attention heads), mean-pooled. The
/// weights come from tools/classifier/export_encoder.py as eight-bit codes with a scale per row
/// (`encoder.bin`, 23 MB); the products run on OpenBLAS when the system has it (`BLAS`).
/// Written here because no Swift package runs a BERT encoder on Linux without Python or a
/// large runtime; it is one forward pass, checked against the offline tool's vectors.
public struct TransformerEncoder: Sendable {
    /// The width of its vectors (384).
    public let hidden: Int
    /// The most tokens a text gets ([CLS] and [SEP] included).
    public let maxTokens: Int
    let heads: Int
    let intermediate: Int
    let vocabularyCount: Int
    let wordScales: [Float]
    let wordCodes: [Int8]
    let positions: [Float]
    let tokenType: [Float]
    let embeddingNorm: Norm
    let layers: [Layer]

    struct Dense: Sendable {
        let weights: [Float]  // outputs × inputs
        let bias: [Float]
        var outputs: Int { bias.count }
    }

    struct Norm: Sendable {
        let weight: [Float]
        let bias: [Float]
    }

    struct Layer: Sendable {
        let query, key, value, output: Dense
        let attentionNorm: Norm
        let up, down: Dense
        let outputNorm: Norm
    }

    // MARK: Reading encoder.bin

    /// "NPENC1\0\0", six UInt32 (vocabulary, hidden, layers, heads, intermediate, max tokens),
    /// then in order: word embeddings (eight-bit), positions, token type 0, the embeddings'
    /// norm, and per layer query, key, value, attention output (eight-bit, bias), the attention
    /// norm, the feed-forward up and down (eight-bit, bias) and the output norm. An eight-bit
    /// matrix is its Float32 scales (one per row) and then its codes; the rest is Float32.
    public init(serialized data: Data) throws(TextModel.ModelError) {
        guard data.count >= 32, data.prefix(6) == Data("NPENC1".utf8) else { throw .notAModel }
        var reader = Reader(data: data, offset: 8)
        let header = (0..<6).map { _ in reader.uint32() }
        let (vocabulary, hidden, layerCount, heads, intermediate, maxTokens) = (
            header[0], header[1], header[2], header[3], header[4], header[5]
        )
        guard hidden > 0, heads > 0, hidden % heads == 0, layerCount > 0, layerCount < 64, maxTokens > 2 else {
            throw .notAModel
        }
        let matrices =
            vocabulary * (hidden + 4) + layerCount
            * (4 * (hidden * hidden + 4 * hidden) + 2 * (hidden * intermediate) + 4 * (intermediate + hidden))
        let vectors =
            4
            * (maxTokens * hidden + 3 * hidden + layerCount
                * (4 * hidden + 2 * hidden + intermediate + hidden + 2 * hidden))
        guard data.count == 32 + matrices + vectors else { throw .wrongSize(data.count, 32 + matrices + vectors) }
        (self.hidden, self.heads, self.intermediate, self.maxTokens, self.vocabularyCount) = (
            hidden, heads, intermediate, maxTokens, vocabulary
        )
        wordScales = reader.floats(vocabulary)
        wordCodes = reader.codes(vocabulary * hidden)
        positions = reader.floats(maxTokens * hidden)
        tokenType = reader.floats(hidden)
        embeddingNorm = Norm(weight: reader.floats(hidden), bias: reader.floats(hidden))
        func dense(_ outputs: Int, _ inputs: Int) -> Dense {
            let weights = reader.matrix(outputs, inputs)
            return Dense(weights: weights, bias: reader.floats(outputs))
        }
        layers = (0..<layerCount).map { _ in
            let (q, k, v, o) = (
                dense(hidden, hidden), dense(hidden, hidden), dense(hidden, hidden), dense(hidden, hidden)
            )
            let attentionNorm = Norm(weight: reader.floats(hidden), bias: reader.floats(hidden))
            let up = dense(intermediate, hidden), down = dense(hidden, intermediate)
            return Layer(
                query: q, key: k, value: v, output: o, attentionNorm: attentionNorm, up: up, down: down,
                outputNorm: Norm(weight: reader.floats(hidden), bias: reader.floats(hidden)))
        }
    }

    /// The encoder shipped with newspush.
    public static func bundled() throws(TextModel.ModelError) -> TransformerEncoder {
        guard let data = bundledResource("encoder") else { throw .missingEncoder }
        return try TransformerEncoder(serialized: data)
    }

    private struct Reader {
        let data: Data
        var offset: Int

        mutating func uint32() -> Int {
            defer { offset += 4 }
            return Int(
                UInt32(littleEndian: data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) })
            )
        }

        mutating func floats(_ count: Int) -> [Float] {
            defer { offset += 4 * count }
            return data.withUnsafeBytes { raw in
                [Float](unsafeUninitializedCapacity: count) { out, initialized in
                    for i in 0..<count {
                        out[i] = Float(
                            bitPattern: UInt32(
                                littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4 * i, as: UInt32.self)))
                    }
                    initialized = count
                }
            }
        }

        mutating func codes(_ count: Int) -> [Int8] {
            defer { offset += count }
            return data.withUnsafeBytes {
                Array(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + count]).bindMemory(to: Int8.self))
            }
        }

        /// An eight-bit matrix, made Float32 once at load.
        mutating func matrix(_ rows: Int, _ columns: Int) -> [Float] {
            let scales = floats(rows)
            let codes = codes(rows * columns)
            return [Float](unsafeUninitializedCapacity: rows * columns) { out, initialized in
                codes.withUnsafeBufferPointer { codes in
                    for r in 0..<rows {
                        let scale = scales[r], row = r * columns
                        for c in row..<(row + columns) { out[c] = scale * Float(codes[c]) }
                    }
                }
                initialized = rows * columns
            }
        }
    }

    // MARK: The forward pass

    /// The mean-pooled vector of a token sequence (`[CLS] … [SEP]`, at most `maxTokens`).
    public func vector(ids: [Int32]) -> [Float] {
        vectors(ids: [ids])[0]
    }

    /// `vector(ids:)` for several sequences at once: their tokens go through each layer's
    /// products as one matrix (larger products are several times cheaper per row), and only
    /// attention is computed text by text.
    public func vectors(ids batch: [[Int32]]) -> [[Float]] {
        let h = hidden
        let lengths = batch.map { min($0.count, maxTokens) }
        var starts = [0]
        for length in lengths { starts.append(starts[starts.count - 1] + length) }
        let rows = starts[starts.count - 1]
        guard rows > 0 else { return batch.map { _ in [Float](repeating: 0, count: h) } }
        var x = [Float](repeating: 0, count: rows * h)
        for (text, ids) in batch.enumerated() {
            for (position, id) in ids.prefix(lengths[text]).enumerated() {
                let token = Int(id) < vocabularyCount ? Int(id) : 0, row = starts[text] + position
                for c in 0..<h {
                    x[row * h + c] =
                        wordScales[token] * Float(wordCodes[token * h + c]) + positions[position * h + c] + tokenType[c]
                }
            }
        }
        normalize(&x, rows: rows, embeddingNorm)
        let spans = lengths.indices.map { (start: starts[$0], count: lengths[$0]) }
        for layer in layers { apply(layer, to: &x, rows: rows, texts: spans) }
        return spans.map { span in
            var pooled = [Float](repeating: 0, count: h)
            for row in span.start..<(span.start + span.count) { for c in 0..<h { pooled[c] += x[row * h + c] } }
            return span.count > 0 ? pooled.map { $0 / Float(span.count) } : pooled
        }
    }

    private func apply(_ layer: Layer, to x: inout [Float], rows: Int, texts: [(start: Int, count: Int)]) {
        let h = hidden, size = hidden / heads
        let q = project(x, rows: rows, layer.query), k = project(x, rows: rows, layer.key),
            v = project(x, rows: rows, layer.value)
        var context = [Float](repeating: 0, count: rows * h)
        let longest = texts.map(\.count).max() ?? 0
        var scores = [Float](repeating: 0, count: longest * longest)
        for text in texts where text.count > 0 {
            let t = text.count, first = text.start * h
            for head in 0..<heads {
                let offset = first + head * size
                q.withUnsafeBufferPointer { q in
                    k.withUnsafeBufferPointer { k in
                        scores.withUnsafeMutableBufferPointer { s in
                            BLAS.multiply(
                                m: t, n: t, k: size, alpha: 1 / Float(size).squareRoot(), q, aOffset: offset, lda: h,
                                k, bOffset: offset, ldb: h, transposedB: true, into: s, ldc: t)
                        }
                    }
                }
                softmaxRows(&scores, rows: t, columns: t)
                scores.withUnsafeBufferPointer { s in
                    v.withUnsafeBufferPointer { v in
                        context.withUnsafeMutableBufferPointer { c in
                            BLAS.multiply(
                                m: t, n: size, k: t, s, lda: t, v, bOffset: offset, ldb: h, transposedB: false,
                                into: c, cOffset: offset, ldc: h)
                        }
                    }
                }
            }
        }
        var attended = project(context, rows: rows, layer.output, adding: x)
        normalize(&attended, rows: rows, layer.attentionNorm)
        var up = project(attended, rows: rows, layer.up)
        up.withUnsafeMutableBufferPointer { Self.gelu($0) }
        var out = project(up, rows: rows, layer.down, adding: attended)
        normalize(&out, rows: rows, layer.outputNorm)
        x = out
    }

    /// `x[t × inputs] · Wᵀ + b`, plus `residual` (of the result's shape) when given: the bias
    /// and the residual are laid down first and the product is added onto them (beta 1), so
    /// no second pass over the result.
    private func project(_ x: [Float], rows t: Int, _ dense: Dense, adding residual: [Float]? = nil) -> [Float] {
        let inputs = x.count / t, outputs = dense.outputs
        var y: [Float] = []
        y.reserveCapacity(t * outputs)
        for _ in 0..<t { y.append(contentsOf: dense.bias) }
        if let residual {
            y.withUnsafeMutableBufferPointer { y in
                residual.withUnsafeBufferPointer { r in for i in 0..<y.count { y[i] += r[i] } }
            }
        }
        x.withUnsafeBufferPointer { x in
            dense.weights.withUnsafeBufferPointer { w in
                y.withUnsafeMutableBufferPointer { y in
                    BLAS.multiply(
                        m: t, n: outputs, k: inputs, x, lda: inputs, w, ldb: inputs, transposedB: true, beta: 1,
                        into: y, ldc: outputs)
                }
            }
        }
        return y
    }

    /// Layer normalisation of each row, in place.
    private func normalize(_ x: inout [Float], rows: Int, _ norm: Norm) {
        let h = norm.weight.count
        x.withUnsafeMutableBufferPointer { x in
            norm.weight.withUnsafeBufferPointer { weight in
                norm.bias.withUnsafeBufferPointer { bias in
                    for r in 0..<rows {
                        let base = r * h
                        var mean: Float = 0
                        for c in 0..<h { mean += x[base + c] }
                        mean /= Float(h)
                        var variance: Float = 0
                        for c in 0..<h {
                            let d = x[base + c] - mean
                            variance += d * d
                        }
                        let scale = 1 / (variance / Float(h) + 1e-12).squareRoot()
                        for c in 0..<h { x[base + c] = (x[base + c] - mean) * scale * weight[c] + bias[c] }
                    }
                }
            }
        }
    }

    /// Softmax of each of the first `rows` rows of `columns` (the rest of `s` is scratch), the
    /// exponentials eight at a time (`exp8`: every argument is at most 0 here).
    private func softmaxRows(_ s: inout [Float], rows: Int, columns n: Int) {
        typealias V = SIMD8<Float>
        s.withUnsafeMutableBufferPointer { s in
            guard let start = s.baseAddress else { return }
            for r in 0..<rows {
                let row = start + r * n
                var top = -Float.infinity
                for c in 0..<n { top = max(top, row[c]) }
                var total: Float = 0
                var c = 0
                while c + 8 <= n {
                    let e = Self.exp8(UnsafeRawPointer(row + c).loadUnaligned(as: V.self) - V(repeating: top))
                    UnsafeMutableRawPointer(row + c).storeBytes(of: e, as: V.self)
                    total += e.sum()
                    c += 8
                }
                while c < n {
                    row[c] = exp(row[c] - top)
                    total += row[c]
                    c += 1
                }
                let inverse = 1 / total
                for c in 0..<n { row[c] *= inverse }
            }
        }
    }

    /// BERT's GELU, `x · Φ(x)`, in place, eight values at a time: the error function by
    /// Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7; what the offline tool's
    /// reference uses too) with its exponential by range reduction and a degree-6 polynomial.
    /// (libm's `erff` one value at a time was an eighth of the encoder's time.)
    static func gelu(_ x: UnsafeMutableBufferPointer<Float>) {
        typealias V = SIMD8<Float>
        var i = 0
        guard let base = x.baseAddress else { return }
        while i + 8 <= x.count {
            let v = UnsafeRawPointer(base + i).loadUnaligned(as: V.self)
            let result: V = 0.5 * v * (1 + erf8(v * V(repeating: 1 / Float(2).squareRoot())))
            UnsafeMutableRawPointer(base + i).storeBytes(of: result, as: V.self)
            i += 8
        }
        while i < x.count {
            x[i] = 0.5 * x[i] * (1 + erf(x[i] / Float(2).squareRoot()))
            i += 1
        }
    }

    @inline(__always)
    private static func erf8(_ v: SIMD8<Float>) -> SIMD8<Float> {
        typealias V = SIMD8<Float>
        let a: V = v.replacing(with: -v, where: v .< 0)
        let t: V = 1 / (1 + V(repeating: 0.3275911) * a)
        var poly: V = V(repeating: 1.061405429) * t - V(repeating: 1.453152027)
        poly = poly * t + V(repeating: 1.421413741)
        poly = poly * t - V(repeating: 0.284496736)
        poly = (poly * t + V(repeating: 0.254829592)) * t
        let y: V = 1 - poly * exp8(-(a * a))
        return y.replacing(with: -y, where: v .< 0)
    }

    /// e^x for x ≤ 0 (to 1e-7 relative; below −87, the smallest normal number).
    @inline(__always)
    private static func exp8(_ x: SIMD8<Float>) -> SIMD8<Float> {
        typealias V = SIMD8<Float>
        let clamped: V = x.replacing(with: -87, where: x .< -87)
        // Rounding and the power of two by the float trick: adding 1.5 · 2^23 leaves an
        // integer in the low mantissa bits (Swift's per-lane SIMD conversions were most of the
        // cost otherwise).
        let magic = V(repeating: 12_582_912)
        let k: V = (clamped * V(repeating: 1.442695041) + magic) - magic
        let r: V = clamped - k * V(repeating: 0.693145751953125) - k * V(repeating: 1.428606765330187e-6)
        var p: V = V(repeating: 1.0 / 720) * r + V(repeating: 1.0 / 120)
        p = p * r + V(repeating: 1.0 / 24)
        p = p * r + V(repeating: 1.0 / 6)
        p = p * r + V(repeating: 0.5)
        p = p * r + 1
        p = p * r + 1
        let exponent = unsafeBitCast(k + magic + V(repeating: 127), to: SIMD8<UInt32>.self) &<< 23
        return p * unsafeBitCast(exponent, to: SIMD8<Float>.self)
    }
}

/// The full encoder with the tokenizer of the token table (the same WordPiece vocabulary).
public struct SentenceEncoder: Sendable {
    /// The transformer.
    public let encoder: TransformerEncoder
    let tokenizer: WordPieceTokenizer
    let cls: Int32
    let sep: Int32

    /// The encoder with the table's tokenizer (their vocabularies must agree).
    public init(encoder: TransformerEncoder, table: TokenTable) throws(TextModel.ModelError) {
        guard table.vocabulary.count == encoder.vocabularyCount, let cls = table.vocabulary.firstIndex(of: "[CLS]"),
            let sep = table.vocabulary.firstIndex(of: "[SEP]")
        else { throw .notAModel }
        self.encoder = encoder
        self.tokenizer = table.tokenizer
        (self.cls, self.sep) = (Int32(cls), Int32(sep))
    }

    /// What does the encoder's matrix products ("oneDNN", "OpenBLAS" or the portable loops).
    public static var backend: String { BLAS.backend }

    /// The portable loops even where a library is installed (the benchmark compares).
    public static func usePortableLoops() { BLAS.allowLibrary = false }

    /// OpenBLAS even where oneDNN is installed (the benchmark compares).
    public static func passOverOneDNN() { BLAS.allowOneDNN = false }

    /// `[CLS]`, the text's first `maxTokens − 2` tokens, `[SEP]`.
    public func ids(_ text: String) -> [Int32] {
        [cls] + tokenizer.ids(text).prefix(encoder.maxTokens - 2) + [sep]
    }

    /// The text's pooled vector scaled to unit length, what a head reads.
    public func unitVector(_ text: String) -> [Float] {
        unitVectors([text])[0]
    }

    /// `unitVector` of each text, sixteen texts to a batch, the batches spread over the cores
    /// (at most one batch per core at a time).
    public func unitVectors(_ texts: [String]) -> [[Float]] {
        let batches = stride(from: 0, to: texts.count, by: 16).map { $0..<min($0 + 16, texts.count) }
        var results = [[[Float]]](repeating: [], count: batches.count)
        results.withUnsafeMutableBufferPointer { out in
            let slots = UncheckedSendable(out)
            DispatchQueue.concurrentPerform(iterations: batches.count) { i in
                slots.value[i] = encoder.vectors(ids: texts[batches[i]].map(ids)).map(unitLength)
            }
        }
        return results.flatMap { $0 }
    }
}

/// A value handed to `concurrentPerform`'s iterations. Unchecked because it is a buffer of
/// slots: each iteration writes only its own, and the caller reads them after all have ended.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
