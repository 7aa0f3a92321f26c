import Foundation
import NewsPushModel

/// Files items under one of the six categories from the evidence, strongest first: the feed's
/// `category:` (a section feed), then the item's own categories and the sections of its link
/// (through a table of synonyms in several languages), then the text model over title and
/// summary (bag of words and the distilled encoder, `TextClassifier`). A weaker signal never overrides a stronger one.
public struct ItemClassifier: Sendable {
    /// The text models, when they could be loaded.
    public var text: TextClassifier?

    /// A classifier with these text models (none: only feed and section evidence).
    public init(text: TextClassifier? = nil) {
        self.text = text
    }

    /// A classifier with the bag-of-words model alone.
    public init(textModel: TextModel?) {
        self.text = textModel.map { TextClassifier(textModel: $0) }
    }

    /// Section words (item categories, URL path segments) and the category each means.
    static let synonyms: [String: NewsCategory] = {
        var table: [String: NewsCategory] = [:]
        let lists: [(NewsCategory, [String])] = [
            (
                .world,
                [
                    "world", "worldnews", "international", "internacional", "internazionale", "welt", "ausland",
                    "monde", "mundo",
                    "esteri", "europe", "asia", "africa", "middleeast", "middle-east", "americas", "global", "foreign",
                ]
            ),
            (
                .politics,
                [
                    "politics", "politik", "politique", "politica", "política", "elections", "election", "government",
                    "parliament", "congress", "whitehouse", "uk-politics", "us-politics", "inland",
                ]
            ),
            (
                .business,
                [
                    "business", "economy", "economia", "economía", "wirtschaft", "économie", "economie", "finance",
                    "finanzen",
                    "markets", "money", "companies", "industry", "retail", "stocks",
                ]
            ),
            (
                .technology,
                [
                    "technology", "tech", "technik", "technologie", "tecnologia", "tecnología", "digital", "internet",
                    "gadgets", "computing", "cybersecurity", "ai", "software",
                ]
            ),
            (
                .science,
                [
                    "science", "sciences", "wissenschaft", "wissen", "ciencia", "scienza", "sciences", "space",
                    "environment",
                    "climate", "health", "research",
                ]
            ),
            (
                .sports,
                [
                    "sport", "sports", "football", "soccer", "fussball", "fußball", "futbol", "fútbol", "deportes",
                    "calcio",
                    "tennis", "cricket", "rugby", "nba", "nfl", "mlb", "nhl", "golf", "formula1", "f1", "olympics",
                    "cycling", "athletics",
                ]
            ),
        ]
        for (category, words) in lists { for word in words { table[word] = category } }
        return table
    }()

    /// The category the item's own terms and link sections name, when they agree on one.
    static func sectionEvidence(_ item: some ClassifiableItem) -> NewsCategory? {
        var votes: [NewsCategory: Int] = [:]
        for term in item.categories {
            let key = term.lowercased().trimmingCharacters(in: .whitespacesAndNewlines)
            if let category = synonyms[key] ?? synonyms[key.replacingOccurrences(of: " ", with: "-")] {
                votes[category, default: 0] += 2
            }
        }
        if let link = item.link, let path = URLComponents(string: link)?.path {
            for segment in path.lowercased().split(separator: "/").prefix(3) {
                if let category = synonyms[String(segment)] { votes[category, default: 0] += 1 }
            }
        }
        let ranked = votes.sorted { $0.value > $1.value }
        guard let top = ranked.first, ranked.dropFirst().first?.value != top.value else { return nil }
        return top.key
    }

    /// `withEncoder: false` leaves the sentence encoder out (items that will not be pushed).
    public func classify(_ item: some ClassifiableItem, feedCategory: NewsCategory?, withEncoder: Bool = true)
        -> Classification
    {
        classify([(item, feedCategory)], withEncoder: [withEncoder])[0]
    }

    /// `classify` for several items: the text model's work for those without evidence is done
    /// at once (the sentence encoder is faster on several texts together). `evidence`: each
    /// item's `evidence`, when the caller has it already.
    public func classify<Item: ClassifiableItem>(
        _ items: [(item: Item, feedCategory: NewsCategory?)], evidence: [Classification?]? = nil,
        withEncoder: [Bool]
    ) -> [Classification] {
        var results = evidence ?? items.map { Self.evidence($0.item, feedCategory: $0.feedCategory) }
        guard let text else { return results.map { $0 ?? .unclassified } }
        for encoded in [false, true] {
            let asked = items.indices.filter {
                results[$0] == nil && withEncoder[$0] == encoded && Self.hasText(items[$0].item)
            }
            let answers = text.classify(
                asked.map { (items[$0].item.title ?? "", items[$0].item.summary) }, withEncoder: encoded)
            for (index, answer) in zip(asked, answers) {
                results[index] = Classification(category: answer.category, confidence: answer.confidence)
            }
        }
        return results.map { $0 ?? .unclassified }
    }

    /// The feed's category, else the item's sections; nil when neither says.
    public static func evidence(_ item: some ClassifiableItem, feedCategory: NewsCategory?) -> Classification? {
        if let feedCategory { return Classification(category: feedCategory, confidence: 1.0) }
        if let section = sectionEvidence(item) { return Classification(category: section, confidence: 0.9) }
        return nil
    }

    private static func hasText(_ item: some ClassifiableItem) -> Bool {
        item.title?.isEmpty == false || item.summary?.isEmpty == false
    }

}

/// What the classifier reads of an item: its headline and summary as plain text, its own
/// category terms, and its link (whose first path sections may name a section). A feed
/// parser's item is one (`FeedItem`, in the run's stages).
public protocol ClassifiableItem {
    /// The headline.
    var title: String? { get }
    /// The summary.
    var summary: String? { get }
    /// The item's category terms, as the feed wrote them.
    var categories: [String] { get }
    /// The item's link.
    var link: String? { get }
}
