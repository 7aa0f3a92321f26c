import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsClassifier
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

@Suite("Classification")
struct ClassifierTests {
    let model: TextModel

    init() throws {
        model = try TextModel.bundled()
    }

    @Test func theCategoryCountTheLoopsAreUnrolledForIsTheNumberOfCategories() {
        #expect(NewsCategory.count == NewsCategory.allCases.count)
        #expect(NewsCategory.allCases.map(\.index) == Array(0..<NewsCategory.count))
    }

    @Test func theBundledModelLoadsAndClassifiesPlainNews() {
        let classifier = ItemClassifier(textModel: model)
        let cases: [(String, NewsCategory)] = [
            ("Striker scores twice as United win the cup final in extra time", .sports),
            ("Central bank raises interest rates as inflation hits record high", .business),
            ("Senate Republicans and Democrats clash over the budget vote", .politics),
            ("Smartphone maker unveils new chip and software update for app developers", .technology),
        ]
        for (title, expected) in cases {
            let result = classifier.classify(FeedItem(title: title), feedCategory: nil)
            #expect(result.category == expected, "\(title)")
            #expect(result.confidence > 0 && result.confidence <= 1)
        }
    }

    @Test func strongerEvidenceWins() {
        let classifier = ItemClassifier(textModel: model)
        let sporty = FeedItem(
            title: "Striker scores twice as United win the cup final",
            link: "https://news.example.org/business/2026/story",
            categories: ["Wirtschaft"])
        // The section feed beats everything.
        #expect(
            classifier.classify(sporty, feedCategory: .politics) == Classification(category: .politics, confidence: 1))
        // The item's own section terms beat the text.
        #expect(classifier.classify(sporty, feedCategory: nil) == Classification(category: .business, confidence: 0.9))
        // Without sections, the text decides.
        #expect(classifier.classify(FeedItem(title: sporty.title), feedCategory: nil).category == .sports)
    }

    @Test(
        arguments: [
            (["Fußball"], nil, NewsCategory.sports), (["Politique"], nil, .politics), (["tech"], nil, .technology),
            ([], "https://example.org/world/europe/story-1", .world),
            ([], "https://example.org/sport/football/x", .sports),
            (["science"], "https://example.org/science/space", .science),
        ] as [([String], String?, NewsCategory)])
    func sectionSynonyms(categories: [String], link: String?, expected: NewsCategory) {
        #expect(ItemClassifier.sectionEvidence(FeedItem(title: "x", link: link, categories: categories)) == expected)
    }

    @Test func conflictingSectionsAreNoEvidence() {
        #expect(
            ItemClassifier.sectionEvidence(FeedItem(title: "x", link: "https://e.org/sport/", categories: ["business"]))
                == .business)
        #expect(ItemClassifier.sectionEvidence(FeedItem(title: "x", categories: ["business", "sport"])) == nil)
    }

    @Test(arguments: [TextModel.Kind.naiveBayes, .logistic])
    func modelRoundTripAndDeterminism(kind: TextModel.Kind) throws {
        let examples: [(title: String, summary: String, category: NewsCategory)] = [
            ("goal match league striker", "", .sports), ("shares market profit bank", "", .business),
            ("election minister vote party", "", .politics), ("striker scores late goal", "cup final", .sports),
        ]
        func train() -> TextModel {
            kind == .naiveBayes
                ? TextModel.trainNaiveBayes(examples, buckets: 1 << 10)
                : TextModel.trainLogistic(examples, buckets: 1 << 10)
        }
        let small = train()
        #expect(small.kind == kind)
        // Training is deterministic: the same examples give the same file, byte for byte.
        #expect(train().serialized() == small.serialized())
        let restored = try TextModel(serialized: small.serialized())
        #expect(restored.kind == kind)
        // Weights are stored as eight-bit codes: one round trip settles them.
        #expect(try TextModel(serialized: restored.serialized()).serialized() == restored.serialized())
        for text in ["late goal wins the league", "bank profit rises", "party wins the vote"] {
            let a = small.classify(text), b = restored.classify(text)
            #expect(a.category == b.category)
            #expect(zip(a.scores, b.scores).allSatisfy { abs($0 - $1) <= 0.01 * max(1, abs($0)) })
        }
        #expect(small.classify("late goal wins the league").category == .sports)
        #expect(throws: TextModel.ModelError.self) { try TextModel(serialized: Data("garbage".utf8)) }
        #expect(throws: TextModel.ModelError.self) { try TextModel(serialized: small.serialized().prefix(100)) }
    }

    @Test func titleWordsAndSummaryWordsAreDistinctFeatures() {
        let inTitle = TextModel.features(title: "Goal", summary: nil, buckets: 1 << 16)
        let inSummary = TextModel.features(title: "", summary: "Goal", buckets: 1 << 16)
        #expect(inTitle.count == 2 && inSummary.count == 1)
        #expect(inTitle.contains(inSummary[0]))
        // Case, curly punctuation and Latin-1 capitals do not make new words.
        #expect(
            TextModel.features(title: "", summary: "ÉLECTION’s “Vote”", buckets: 1 << 16)
                == TextModel.features(title: "", summary: "élection s vote", buckets: 1 << 16))
    }

    @Test func belowMinConfidenceIsUnclassified() {
        var settings = PolicySettings()
        settings.minConfidence = 0.8
        let now = Date()
        var item = FeedItem(title: "Some headline with words enough")
        item.published = now
        func candidate(_ confidence: Double) -> Candidate {
            var candidate = Candidate(
                key: "k\(confidence)", linkKey: nil, feedName: "F", feedURL: "u", item: item, firstSeen: now)
            candidate.classification = Classification(category: .world, confidence: confidence)
            return candidate
        }
        var c2 = candidate(0.9)
        c2.item.title = "A completely different second story"
        let decisions = PushPolicy(settings: settings).decide([candidate(0.5), c2], matches: [.new, .new], now: now)
        #expect(decisions == [.unclassified, .wouldPush])
    }
}

/// `classify --input` classifies in chunks, the encoder on several items at once: every answer
/// is the one the item gets alone, in the input's order, errors in place.
@Suite("Batched classify")
struct BatchedClassifyTests {
    static let titles = [
        "Central bank raises interest rates again", "Striker scores twice as United win the cup final",
        "Parliament passes the budget after a long night", "New phone chip doubles battery life",
        "Astronomers find water on a distant planet", "Ceasefire holds along the border",
    ]

    @Test func aBatchAnswersAsOneAtATimeInOrderWithErrorsInPlace() throws {
        let session = try ClassifySession()
        // Over several chunks (of 16 here; 512 in use), with lines that are not items among them.
        var lines: [String] = []
        for index in 0..<40 {
            if index % 13 == 5 {
                lines.append(index % 2 == 0 ? "{not json" : "")
            } else {
                let title = Self.titles[index % Self.titles.count] + " (\(index))"
                lines.append(#"{"title": "\#(title)", "summary": "Report number \#(index)"}"#)
            }
        }
        let batch = session.classify(
            lines: Data(lines.joined(separator: "\n").utf8), source: "items.jsonl", chunkSize: 16)
        #expect(batch.count == lines.count)
        for (number, line) in lines.enumerated() {
            let alone = session.classify(lines: Data(line.utf8), source: "items.jsonl")
            switch (batch[number], alone.first) {
            case (.classified(let together), .classified(let single)?):
                #expect(together.category == single.category, "line \(number + 1)")
                #expect(abs(together.confidence - single.confidence) < 1e-4, "line \(number + 1)")
            case (.notAnItem(let message, let at), _):
                #expect(at == number + 1 && message.hasPrefix("items.jsonl:\(number + 1): "), "\(message)")
                #expect(index(of: line) == nil, "line \(number + 1) is an item: \(message)")
            default:
                Issue.record("line \(number + 1): \(batch[number]) against \(String(describing: alone.first))")
            }
        }
    }

    /// The line's title when it is an item.
    func index(of line: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["title"] as? String
    }
}
