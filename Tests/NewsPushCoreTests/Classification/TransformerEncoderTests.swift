import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsClassifier
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

/// The full encoder (README "The classifier"): the Swift forward pass against the vectors the
/// offline tool computed from the same eight-bit weights (tools/classifier/export_encoder.py
/// wrote Fixtures/classifier/transformer-reference.json), OpenBLAS against the portable loops,
/// and determinism.
@Suite("Full sentence encoder", .serialized)
struct TransformerEncoderTests {
    struct Reference: Decodable {
        struct Sample: Decodable {
            var text: String
            var ids: [Int32]
            var vector: [Float]
        }
        var maxTokens: Int
        var samples: [Sample]
    }

    /// Loaded once for the suite (a debug build takes a while to read 23 MB of weights).
    static let bundled = Result {
        try SentenceEncoder(encoder: TransformerEncoder.bundled(), table: TokenTable.bundled())
    }

    static func cosine(_ a: [Float], _ b: [Float]) -> Float {
        let dot = zip(a, b).reduce(Float(0)) { $0 + $1.0 * $1.1 }
        let norms = a.reduce(Float(0)) { $0 + $1 * $1 }.squareRoot() * b.reduce(Float(0)) { $0 + $1 * $1 }.squareRoot()
        return norms > 0 ? dot / norms : 0
    }

    let reference: Reference
    init() throws {
        reference = try JSONDecoder().decode(
            Reference.self, from: try Fixtures.data("classifier/transformer-reference.json"))
    }

    @Test func tokenIdsMatchTheOfflineTool() throws {
        let encoder = try Self.bundled.get()
        #expect(reference.maxTokens == encoder.encoder.maxTokens)
        #expect(reference.samples.count >= 5)
        for sample in reference.samples { #expect(encoder.ids(sample.text) == sample.ids, "\(sample.text.prefix(40))") }
        #expect(reference.samples.contains { $0.ids.count == reference.maxTokens }, "one sample is cut at the limit")
    }

    @Test func vectorsMatchTheOfflineTool() throws {
        let encoder = try Self.bundled.get()
        for sample in reference.samples {
            let cosine = Self.cosine(encoder.encoder.vector(ids: sample.ids), sample.vector)
            #expect(cosine >= 0.999, "\(sample.text.prefix(40)): cosine \(cosine)")
        }
    }

    /// Texts encoded together (a run's items) get the vectors they get alone.
    @Test func aBatchGivesEachTextItsOwnVector() throws {
        let encoder = try Self.bundled.get()
        let texts = [
            "Striker scores twice", "", "Parliament votes on the budget as markets fall sharply on Wednesday", "Chip",
        ]
        let together = encoder.unitVectors(texts)
        #expect(together.count == texts.count)
        for (text, vector) in zip(texts, together) {
            #expect(Self.cosine(vector, encoder.unitVector(text)) >= 0.99999, "\(text)")
        }
    }

    // oneDNN, OpenBLAS and the portable loops give the same vectors up to rounding (whichever of
    // the libraries the machine has; the portable loops always).
    @Test func theLibrariesAndThePortableLoopsAgree() throws {
        let encoder = try Self.bundled.get()
        let ids = encoder.ids("Parliament votes on the budget as markets fall")
        let first = encoder.encoder.vector(ids: ids)
        #expect(encoder.encoder.vector(ids: ids) == first, "deterministic on \(BLAS.backend)")
        BLAS.allowOneDNN = false
        let openBLAS = (BLAS.backend, encoder.encoder.vector(ids: ids))
        BLAS.allowOneDNN = true
        BLAS.allowLibrary = false
        defer { BLAS.allowLibrary = true }
        let portable = encoder.encoder.vector(ids: ids)
        #expect(Self.cosine(first, portable) >= 0.99999)
        #expect(Self.cosine(openBLAS.1, portable) >= 0.99999, "\(openBLAS.0)")
    }

    /// The bundled classifier loads the full encoder by default, the table when asked (the
    /// fallback), and neither for `.none`; each files a clear sports headline as Sports.
    @Test(arguments: [TextClassifier.EncoderChoice.full, .table, .none])
    func theBundledClassifierUsesTheEncoderAskedFor(_ choice: TextClassifier.EncoderChoice) throws {
        let (classifier, warning) = try TextClassifier.bundled(choice)
        #expect(warning == nil)
        // (A failed #expect on the encoder itself would print all of it.)
        let encoder = classifier.encoder?.encoder
        let kind =
            encoder is SentenceEncoder ? "full" : encoder is TokenTable ? "table" : encoder == nil ? "none" : "other"
        #expect(kind == "\(choice)")
        let result = classifier.classify(title: "Striker scores twice as United win the cup final", summary: nil)
        #expect(result.category == .sports)
        #expect(result.confidence > 0.5 && result.confidence <= 1)
    }

    /// Without the full encoder's weights or head (or with damaged ones) the distilled table
    /// stands in, with a warning that says why; without both, the bag of words.
    @Test func withoutTheFullEncoderTheTableStandsInWithAWarning() throws {
        let textModel = try TextModel.bundled()
        let table = try #require(bundledResource("token-table")), head = try #require(bundledResource("encoder-head"))
        let weights = try #require(bundledResource("encoder"))
        for (encoder, encoderHead) in [
            (nil, head), (weights.prefix(1000), head), (weights, nil), (weights, Data("NPEH1".utf8)),
        ] as [(Data?, Data?)] {
            let (classifier, warning) = TextClassifier.load(
                textModel: textModel, table: table, head: head, encoder: encoder, encoderHead: encoderHead)
            // (A failed #expect would print the whole encoder.)
            let usesTokenTable = classifier.encoder?.encoder is TokenTable
            #expect(usesTokenTable)
            #expect(warning?.hasPrefix("the sentence encoder is not usable") == true, "\(warning ?? "")")
        }
        let (alone, warning) = TextClassifier.load(
            textModel: textModel, table: nil, head: nil, encoder: weights, encoderHead: head)
        let hasNoEncoder = alone.encoder == nil
        #expect(hasNoEncoder)
        #expect(warning?.contains("bag-of-words model alone") == true)
    }

    /// The eight-lane GELU against libm's error function, over the range the layers produce
    /// and beyond (down to where e^(−x²/2) underflows), and on a length that is not a
    /// multiple of eight.
    @Test func theVectorGELUAgreesWithLibm() {
        var values = stride(from: Float(-20), through: 20, by: 0.0137).map { $0 }
        values.append(contentsOf: [0, -0, 1e-8, -1e-8, 300, -300])
        var computed = values
        computed.withUnsafeMutableBufferPointer { TransformerEncoder.gelu($0) }
        let worst =
            zip(values, computed).map { x, y in abs(y - 0.5 * x * (1 + erf(x / Float(2).squareRoot()))) }.max() ?? 0
        #expect(worst < 2e-6, "largest difference \(worst)")
        #expect(values.count % 8 != 0)
    }

    @Test func aDamagedFileIsRefusedByName() {
        #expect(throws: TextModel.ModelError.notAModel) {
            _ = try TransformerEncoder(serialized: Data("NPENC0".utf8) + Data(count: 40))
        }
        #expect(throws: TextModel.ModelError.self) {
            _ = try TransformerEncoder(serialized: try Fixtures.data("classifier/transformer-reference.json"))
        }
    }
}

/// The encoder runs only for new items outside a baseline whose feed and link give no
/// category; the run loads it only when there is such an item.
@Suite("When the sentence encoder runs")
struct EncoderUseTests {
    /// Counts the texts it is asked about.
    final class Spy: TextEncoder, @unchecked Sendable {
        var texts: [String] = []
        func unitVector(_ text: String) -> [Float] {
            texts.append(text)
            return [Float](repeating: 0, count: 4)
        }
    }

    @Test func onlyNewUndecidedItemsOutsideABaselineAreEncoded() throws {
        let spy = Spy()
        let head = EncoderHead(
            dimensions: 4, weights: [Float](repeating: 0, count: 24), bias: [Float](repeating: 0, count: 6),
            textWeight: 1, encoderWeight: 1)
        let classifier = ItemClassifier(text: TextClassifier(textModel: try TextModel.bundled(), encoder: (spy, head)))
        let now = Date()
        func candidate(
            _ title: String, link: String = "https://n.example/a/1", section: NewsCategory? = nil, seen: Bool = false,
            baseline: Bool = false
        ) -> Candidate {
            Candidate(
                key: title, linkKey: nil, feedName: "F", feedURL: "https://n.example/rss", sectionCategory: section,
                item: FeedItem(title: title, link: link),
                previous: seen
                    ? StoryRecord(
                        key: title, feed: "F", title: title, link: nil, category: nil,
                        firstSeen: now, lastSeen: now, published: nil, status: .seen) : nil,
                firstSeen: now, inBaselineFeed: baseline)
        }
        let candidates = [
            candidate("New and undecided"),
            candidate("Seen before", seen: true),
            candidate("In a baseline", baseline: true),
            candidate("From a section feed", section: .sports),
            candidate("With a section in its link", link: "https://n.example/business/1"),
        ]
        let classified = classifier.classified(candidates)
        #expect(spy.texts == ["New and undecided "])
        #expect(classified.allSatisfy { $0.classification.category != nil })
        let evidence = candidates.map { ItemClassifier.evidence($0.item, feedCategory: $0.sectionCategory) }
        #expect(RunSession.wantsTextEncoder(candidates, evidence: evidence))
        #expect(!RunSession.wantsTextEncoder(Array(candidates.dropFirst()), evidence: Array(evidence.dropFirst())))
    }
}
