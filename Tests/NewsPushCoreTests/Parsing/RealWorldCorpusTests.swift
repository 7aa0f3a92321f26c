import Foundation
import Testing
@testable import NewsPushCore

/// The 140 real feeds of ../shared/corpus/realworld against feedparser's reading of them
/// (feedparser-ref.json). Skipped when the corpus is absent; its texts are never copied here.
@Suite("Real-world feeds compared with feedparser")
struct RealWorldCorpusTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared/corpus/realworld")

    struct Reference: Decodable {
        struct Item: Decodable { var title: String?; var link: String? }
        var items: [Item]
    }

    /// Markup removed, entities decoded, white space collapsed: feedparser keeps HTML in titles,
    /// newspush gives plain text (SPEC §3).
    static func plain(_ text: String?) -> String {
        guard let text else { return "" }
        let noTags = text.replacingOccurrences(of: "<[^>]+>", with: "", options: .regularExpression)
        return FeedDocumentBuilder.collapse(FeedDocumentBuilder.looksLikeHTML(noTags) ? HTMLText.text(fromHTML: noTags) : noTags)
    }

    @Test func everyFeedParsesAndAgreesWithFeedparser() throws {
        guard let data = FileManager.default.contents(atPath: Self.folder.appendingPathComponent("feedparser-ref.json").path) else {
            return   // corpus not present
        }
        let reference = try JSONDecoder().decode([String: Reference].self, from: data)
        var sameCount = 0, titles = 0, sameTitles = 0, sameLinks = 0
        var failures: [String] = []
        for (file, expected) in reference.sorted(by: { $0.key < $1.key }) {
            let bytes = try Data(contentsOf: Self.folder.appendingPathComponent(file))
            let feed: ParsedFeed
            do { feed = try FeedParser.parse(bytes, url: nil) } catch {
                failures.append("\(file): \(error)")
                continue
            }
            if feed.items.count == expected.items.count { sameCount += 1 } else { failures.append("\(file): \(feed.items.count) items, feedparser \(expected.items.count)") }
            for (ours, theirs) in zip(feed.items, expected.items) {
                titles += 1
                if Self.plain(ours.title) == Self.plain(theirs.title) { sameTitles += 1 }
                if (ours.link ?? "") == (theirs.link ?? "") { sameLinks += 1 }
            }
        }
        print("real-world corpus: \(reference.count) feeds, \(sameCount) with feedparser's item count, titles \(sameTitles)/\(titles), links \(sameLinks)/\(titles); differences: \(failures)")
        #expect(failures.count <= 1, "\(failures)")
        #expect(Double(sameTitles) / Double(titles) >= 0.995)
        #expect(Double(sameLinks) / Double(titles) >= 0.99)
    }
}
