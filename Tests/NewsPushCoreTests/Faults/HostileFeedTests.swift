import Foundation
import Testing
@testable import NewsPushCore

/// Feeds built to make the parser work for minutes fail alone, quickly, with a named error.
@Suite("Hostile feeds are bounded")
struct HostileFeedTests {
    func feed(itemAttributes count: Int) -> Data {
        var tag = "<item"
        tag.reserveCapacity(count * 8)
        for i in 0..<count { tag += " a\(i)=\"1\"" }
        return Data("<rss version=\"2.0\"><channel><title>T</title>\(tag)><title>x</title></item></channel></rss>".utf8)
    }

    @Test func anAttributeFloodIsRefusedBeforeLibxml2SeesIt() {
        // 200,000 attributes took libxml2 2.9 31 s (its duplicate check is pairwise).
        let started = Date()
        #expect(throws: FeedParseError.hostile("an element at byte 44 has more than 256 attributes")) {
            _ = try FeedParser.parse(feed(itemAttributes: 200_000), url: nil)
        }
        #expect(Date().timeIntervalSince(started) < 2)
        #expect(throws: FeedParseError.self) { _ = try FeedParser.parse(feed(itemAttributes: 257), url: nil) }
        #expect(throws: Never.self) { _ = try FeedParser.parse(feed(itemAttributes: 200), url: nil) }
    }

    @Test func equalsSignsOutsideTagsDoNotCount() throws {
        let many = String(repeating: "a=b ", count: 2000)
        let document = """
            <rss version="2.0"><channel><title>T</title><!-- \(many) --><item><title>\(many)</title>
            <description><![CDATA[<p \(many)>x</p>]]></description><link>https://a.example/x?\(String(repeating: "k=v&amp;", count: 400))</link>
            </item></channel></rss>
            """
        #expect(try FeedParser.parse(Data(document.utf8), url: nil).items.count == 1)
    }

    @Test func aParseOverItsBudgetIsStoppedAndNamed() throws {
        var document = "<rss version=\"2.0\"><channel><title>Big</title>"
        for i in 0..<20_000 { document += "<item><title>Story \(i)</title><link>https://a.example/\(i)</link><description>Text \(i)</description></item>" }
        document += "</channel></rss>"
        let data = Data(document.utf8)
        #expect(try FeedParser.parse(data, url: nil).items.count == 20_000)
        let started = Date()
        #expect(throws: FeedParseError.tooSlow(seconds: 0.001)) { _ = try FeedParser.parse(data, url: nil, budget: 0.001) }
        #expect(Date().timeIntervalSince(started) < 1)
    }
}
