import FeedParsing
import Foundation
import NewsClassifier
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

    /// How many lines are classified together: the sentence encoder works on them at once
    /// (batches of 16 on every core), while memory stays bounded for any input size.
    public static let chunkSize = 512

    /// One answer per line of `data` (JSON Lines items), in order (see `classify(reading:)`),
    /// `chunkSize` lines classified together.
    public func classify(lines data: Data, source: String, chunkSize: Int = chunkSize) -> [ClassifiedLine] {
        var answers: [ClassifiedLine] = []
        var reader = JSONLinesChunks(source: source, chunkSize: chunkSize)
        for chunk in reader.add(data) + reader.finish() { answers += classify(chunk) }
        return answers
    }

    /// One answer per line of `input` (JSON Lines items), in order, handed to `answer` a chunk
    /// at a time as soon as it is classified: a line that is not an item gets an error in its
    /// place, so the answers still line up with the questions. `source` names the input in
    /// those errors.
    public func classify(reading input: FileHandle, source: String, answer: ([ClassifiedLine]) -> Void)
        throws(SessionError)
    {
        var reader = JSONLinesChunks(source: source, chunkSize: Self.chunkSize)
        while true {
            let block: Data
            do { block = try input.read(upToCount: 1 << 16) ?? Data() } catch {
                throw .unreadable(path: source, reason: "\(error)")
            }
            if block.isEmpty { break }
            for chunk in reader.add(block) { answer(classify(chunk)) }
        }
        for chunk in reader.finish() { answer(classify(chunk)) }
    }

    /// The answers for one chunk of read lines, the items among them classified together.
    private func classify(_ chunk: [JSONLinesChunks.Line]) -> [ClassifiedLine] {
        let items = chunk.compactMap { line -> (item: FeedItem, feedCategory: NewsCategory?)? in
            if case .item(let item, let feedCategory) = line { return (item, feedCategory) }
            return nil
        }
        var answers = classifier.classify(items, withEncoder: items.map { _ in true }).makeIterator()
        return chunk.map { line in
            switch line {
            case .item: return .classified(answers.next() ?? .unclassified)
            case .notAnItem(let message, let number): return .notAnItem(message, line: number)
            }
        }
    }
}

/// JSON Lines read in blocks and handed on in chunks of whole lines, each line already read as
/// an item or as the reason it is not one.
struct JSONLinesChunks {
    /// One read line.
    enum Line {
        case item(FeedItem, NewsCategory?)
        case notAnItem(String, line: Int)
    }

    let source: String
    let chunkSize: Int
    private var partial = Data()
    private var pending: [Line] = []
    private var number = 0

    init(source: String, chunkSize: Int) {
        self.source = source
        self.chunkSize = chunkSize
    }

    /// The chunks completed by `block`.
    mutating func add(_ block: Data) -> [[Line]] {
        partial.append(block)
        var chunks: [[Line]] = []
        while let newline = partial.firstIndex(of: 0x0A) {
            pending.append(read(partial[partial.startIndex..<newline]))
            partial.removeSubrange(partial.startIndex...newline)
            if pending.count == chunkSize {
                chunks.append(pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
        return chunks
    }

    /// The last chunk (a last line without its newline included).
    mutating func finish() -> [[Line]] {
        if !partial.isEmpty {
            pending.append(read(partial))
            partial = Data()
        }
        defer { pending = [] }
        return pending.isEmpty ? [] : [pending]
    }

    private mutating func read(_ line: Data) -> Line {
        number += 1
        guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any],
            let title = object["title"] as? String, !title.allSatisfy(\.isWhitespace)
        else {
            let what =
                line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D })
                ? "an empty line" : "not a JSON object with a title"
            return .notAnItem("\(source):\(number): \(what)", line: number)
        }
        var item = FeedItem(
            title: title, link: object["link"] as? String, summary: object["summary"] as? String,
            categories: object["categories"] as? [String] ?? [])
        item.id = nil
        return .item(item, (object["feed_category"] as? String).flatMap(NewsCategory.init(rawValue:)))
    }
}
