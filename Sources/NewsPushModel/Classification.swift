import Foundation

/// A category for an item and how sure of it newspush is (0…1).
public struct Classification: Sendable, Equatable {
    /// The category, or nil when there is no evidence for any.
    public var category: NewsCategory?
    /// How sure: 0 to 1.
    public var confidence: Double

    /// `category` with `confidence`.
    public init(category: NewsCategory?, confidence: Double) {
        self.category = category
        self.confidence = confidence
    }

    /// No category, no confidence.
    public static let unclassified = Classification(category: nil, confidence: 0)
}
