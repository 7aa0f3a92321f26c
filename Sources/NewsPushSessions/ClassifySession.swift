import Foundation
import NewsPushCore
import NewsPushModel

/// The answer for one input line of `classify --input`.
public enum ClassifiedLine: Sendable {
    /// The item's category (always one of the six) and confidence.
    case classified(Classification)
    /// The line is not an item: why, and its number (from 1).
    case notAnItem(String, line: Int)
}

/// `classify` as a session: a text, or JSON Lines items, through the bundled classifier.
public struct ClassifySession: Sendable {
    /// The classifier; nil when its models cannot be loaded.
    let classifier: ItemClassifier
    /// Why the classifier runs with less than its full models, if it does.
    public let warning: String?

    /// A session with the shipped models (falling back, with `warning`, when some are unusable).
    public init() throws(SessionError) {
        do {
            let (bundled, warning) = try TextClassifier.bundled()
            classifier = ItemClassifier(text: bundled)
            self.warning = warning
        } catch {
            throw .unreadable(path: "the bundled classifier", reason: "\(error)")
        }
    }

    /// The category of one text.
    public func classify(_ text: String) -> Classification {
        classifier.classify(FeedItem(title: text), feedCategory: nil)
    }

    /// One answer per line of `data` (JSON Lines items), in order: a line that is not an item
    /// gets an error in its place, so the answers still line up with the questions. `source`
    /// names the input in those errors.
    public func classify(lines data: Data, source: String) -> [ClassifiedLine] {
        var lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }  // the newline that ends the file
        return lines.enumerated().map { number, line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let title = object["title"] as? String, !title.allSatisfy(\.isWhitespace)
            else {
                let what =
                    line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D })
                    ? "an empty line" : "not a JSON object with a title"
                return .notAnItem("\(source):\(number + 1): \(what)", line: number + 1)
            }
            var item = FeedItem(
                title: title, link: object["link"] as? String, summary: object["summary"] as? String,
                categories: object["categories"] as? [String] ?? [])
            item.id = nil
            let feedCategory = (object["feed_category"] as? String).flatMap(NewsCategory.init(rawValue:))
            return .classified(classifier.classify(item, feedCategory: feedCategory))
        }
    }
}
