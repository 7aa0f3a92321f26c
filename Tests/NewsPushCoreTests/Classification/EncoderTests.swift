import Foundation
import NewsPushModel
import Testing

@testable import NewsClassifier
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

/// The distilled encoder (README "The classifier"): the Swift tokenizer and table against the
/// offline tool's reference (tools/classifier/distil.py wrote Fixtures/classifier), determinism,
/// and the fallback to the bag-of-words model without the encoder's files.
@Suite("Distilled encoder")
struct EncoderTests {
    struct Reference: Decodable {
        struct Sample: Decodable {
            var text: String
            var tokens: [String]
            var vector: [Float]
        }
        var dimensions: Int
        var samples: [Sample]
    }

    let table: TokenTable
    let reference: Reference

    /// Loaded once for the suite (a debug build takes a while to read 8 MB of table).
    static let bundledTable = Result { try TokenTable.bundled() }

    init() throws {
        table = try Self.bundledTable.get()
        reference = try JSONDecoder().decode(
            Reference.self, from: try Fixtures.data("classifier/encoder-reference.json"))
    }

    @Test func tokensMatchTheOfflineTool() {
        #expect(reference.samples.count >= 6)
        for sample in reference.samples {
            #expect(
                table.tokenizer.tokens(sample.text, vocabulary: table.vocabulary) == sample.tokens, "\(sample.text)")
        }
    }

    @Test func knownWordPieceSplits() {
        func tokens(_ text: String) -> [String] { table.tokenizer.tokens(text, vocabulary: table.vocabulary) }
        #expect(tokens("Café RÉSUMÉ") == ["cafe", "resume"], "accents stripped, lower case")
        #expect(tokens("U.S.-led talks") == ["u", ".", "s", ".", "-", "led", "talks"], "punctuation split off")
        #expect(tokens("tokenization") == ["token", "##ization"])
        #expect(tokens(String(repeating: "x", count: 101)) == ["[UNK]"], "over 100 characters")
        #expect(tokens("") == [])
    }

    @Test func vectorsMatchTheOfflineTool() {
        #expect(table.dimensions == reference.dimensions)
        for sample in reference.samples {
            let vector = table.vector(sample.text)
            let dot = zip(vector, sample.vector).reduce(Float(0)) { $0 + $1.0 * $1.1 }
            let norms =
                vector.reduce(Float(0)) { $0 + $1 * $1 }.squareRoot()
                * sample.vector.reduce(Float(0)) { $0 + $1 * $1 }.squareRoot()
            #expect(norms > 0 && dot / norms >= 0.999, "\(sample.text): cosine \(dot / norms)")
        }
    }

    @Test func theSameTextGivesTheSameVectorAndTrainingIsDeterministic() throws {
        #expect(table.vector("Markets fall as rates rise") == table.vector("Markets fall as rates rise"))
        let vectors = [
            "Markets fall as rates rise", "Striker scores twice", "Parliament votes on the budget",
            "New chip for phones",
        ].map(table.unitVector)
        let first = EncoderHead.train(vectors, labels: [2, 5, 1, 3], epochs: 20).serialized()
        let second = EncoderHead.train(vectors, labels: [2, 5, 1, 3], epochs: 20).serialized()
        #expect(first == second)
        #expect(try EncoderHead(serialized: first).serialized() == first)
    }

    @Test func withoutTheEncoderFilesTheBagOfWordsModelAloneClassifiesWithAWarning() throws {
        let textModel = try TextModel.bundled()
        for (tableData, headData) in [
            (nil, nil), (Data("not a table".utf8), Data()),
            (
                try Data(
                    contentsOf: #require(
                        Bundle.module.url(
                            forResource: "Fixtures/classifier/"
                                + "encoder-reference", withExtension: "json"))),
                nil
            ),
        ] as [(Data?, Data?)] {
            let (classifier, warning) = TextClassifier.load(textModel: textModel, table: tableData, head: headData)
            let hasNoEncoder = classifier.encoder == nil
            #expect(hasNoEncoder)
            #expect(warning?.contains("bag-of-words model alone") == true)
            let alone = textModel.classify(title: "Central bank raises rates", summary: nil)
            #expect(classifier.classify(title: "Central bank raises rates", summary: nil).category == alone.category)
        }
    }

    /// Training with the encoder, and the split measurements, on a small made-up set.
    @Test func trainingWithTheEncoderAndItsMeasurements() {
        let texts: [(NewsCategory, [String])] = [
            (
                .world,
                [
                    "Earthquake strikes coastal towns abroad", "Foreign ministers meet over border dispute",
                    "Refugees cross the frontier after floods",
                ]
            ),
            (
                .politics,
                [
                    "Parliament votes on the budget bill", "Senator resigns after election defeat",
                    "Prime minister faces party revolt",
                ]
            ),
            (
                .business,
                [
                    "Shares fall as bank profits drop", "Retailer cuts jobs after weak sales",
                    "Oil prices rise on supply fears",
                ]
            ),
            (
                .technology,
                [
                    "New smartphone chip speeds up apps", "Software update fixes security flaw",
                    "Startup launches cloud computing service",
                ]
            ),
            (
                .science,
                [
                    "Astronomers find water on distant planet", "Researchers map the human genome",
                    "Fossil reveals new dinosaur species",
                ]
            ),
            (
                .sports,
                [
                    "Striker scores twice in cup final", "Champion wins the tennis open",
                    "Team clinches league title in overtime",
                ]
            ),
        ]
        var examples: [ClassifierTraining.Example] = []
        for (category, titles) in texts {
            for (i, title) in titles.enumerated() {
                examples.append(
                    .init(title: title, summary: "", category: category, source: i == 0 ? "desk-a" : "desk-b"))
            }
        }
        let classifier = ClassifierTraining.trainCombined(examples, encoder: table)
        #expect(classifier.encoder != nil)
        let right = examples.filter { classifier.classify(title: $0.title, summary: nil).category == $0.category }.count
        #expect(right >= 15, "\(right) of 18 training items")
        let evaluations = ClassifierTraining.measurements(examples, encoder: table)
        #expect(evaluations.map(\.name) == ["random 10% split", "held-out source desk-a", "held-out source desk-b"])
        #expect(evaluations.map(\.count) == [1, 6, 12])
        #expect(evaluations.allSatisfy { $0.bands.reduce(0) { $0 + $1.items } == $0.count })
    }
}
