import Foundation

/// A category for an item and how sure of it newspush is (0…1).
public struct Classification: Sendable, Equatable {
    public var category: NewsCategory?
    public var confidence: Double

    /// `category` with `confidence`.
    public init(category: NewsCategory?, confidence: Double) {
        self.category = category
        self.confidence = confidence
    }

    /// No category, no confidence.
    public static let unclassified = Classification(category: nil, confidence: 0)
}
