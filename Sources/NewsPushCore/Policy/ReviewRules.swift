import Foundation
import NewsPushModel

/// `review.rules` applied: which selected pushes wait for an editor, and by which rule.
public struct ReviewRules: Sendable {
    private let rules: [(rule: ReviewRule, title: NSRegularExpression?)]

    /// The rules of `review.rules`, first match wins.
    public init(_ rules: [ReviewRule]) {
        self.rules = rules.map { ($0, $0.title.flatMap { try? NSRegularExpression(pattern: $0) }) }
    }

    /// The rule that holds a push for an editor; nil when it is sent (no rule matches, or the
    /// first match is `auto`).
    public func holdingRule(category: NewsCategory, title: String, feedName: String?, feedURL: String?)
        -> ReviewRule?
    {
        for (rule, pattern) in rules {
            if let wanted = rule.category, wanted != category { continue }
            if let feed = rule.feed, feed != feedName && feed != feedURL { continue }
            if let pattern,
                pattern.firstMatch(in: title, range: NSRange(title.startIndex..., in: title)) == nil
            {
                continue
            }
            return rule.mode == .review ? rule : nil
        }
        return nil
    }
}
