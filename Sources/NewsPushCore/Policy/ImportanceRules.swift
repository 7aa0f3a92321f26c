import Foundation
import NewsPushModel

/// How important an alert is: the first `importance_rules` entry that matches the item (its
/// title against the rule's regular expression, its feed by name or URL), else its category's
/// `importance`.
public struct ImportanceRules: Sendable {
    private let rules: [(rule: ImportanceRule, title: NSRegularExpression?)]

    /// The rules of `importance_rules`, first match wins.
    public init(_ rules: [ImportanceRule]) {
        self.rules = rules.map { ($0, $0.title.flatMap { try? NSRegularExpression(pattern: $0) }) }
    }

    /// The importance of an item: the first matching rule's, else `fallback` (the category's).
    public func importance(title: String?, feedName: String?, feedURL: String?, default fallback: Importance)
        -> Importance
    {
        for (rule, pattern) in rules {
            if let feed = rule.feed, feed != feedName && feed != feedURL { continue }
            if let pattern {
                let text = title ?? ""
                guard pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil else {
                    continue
                }
            }
            return rule.importance
        }
        return fallback
    }
}
