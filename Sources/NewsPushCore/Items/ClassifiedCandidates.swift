import FeedParsing
import Foundation
import NewsClassifier
import NewsPushModel

/// A parsed item is what the classifier reads.
extension FeedItem: ClassifiableItem {}

extension Candidate {
    /// Only a new item outside a baseline may be pushed: the sentence encoder runs for no other.
    public var wantsEncoder: Bool { isNew && !inBaselineFeed }
}

extension ItemClassifier {
    /// The classify stage: every candidate with its category and confidence (`evidence`: each
    /// one's `ItemClassifier.evidence`, when already known).
    public func classified(_ candidates: [Candidate], evidence: [Classification?]? = nil) -> [Candidate] {
        let classifications = classify(
            candidates.map { ($0.item, $0.sectionCategory) }, evidence: evidence,
            withEncoder: candidates.map(\.wantsEncoder))
        return zip(candidates, classifications).map { candidate, classification in
            var candidate = candidate
            candidate.classification = classification
            return candidate
        }
    }
}
