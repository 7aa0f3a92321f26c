/// A category for an item and how sure of it newspush is (0…1).
public struct Classification: Sendable, Equatable {
    public var category: NewsCategory?
    public var confidence: Double

    public static let unclassified = Classification(category: nil, confidence: 0)
}

/// Files items under the category of the section feed they came from (`category:` in the
/// config). Items of feeds without a category stay unclassified: newspush does not guess.
public struct SectionClassifier: Sendable {
    public init() {}

    public func classify(_ item: FeedItem, feedCategory: NewsCategory?) -> Classification {
        guard let feedCategory else { return .unclassified }
        return Classification(category: feedCategory, confidence: 1.0)
    }
}
