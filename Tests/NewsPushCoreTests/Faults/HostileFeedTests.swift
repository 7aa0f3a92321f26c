import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

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
        let cpu = threadCPUSeconds {
            #expect(throws: FeedParseError.hostile("an element at byte 44 has more than 256 attributes")) {
                _ = try FeedParser.parse(feed(itemAttributes: 200_000), url: nil)
            }
        }
        #expect(cpu < 8, "bounded well below the 31 s of the flood")
        #expect(throws: FeedParseError.self) { _ = try FeedParser.parse(feed(itemAttributes: 257), url: nil) }
        #expect(throws: Never.self) { _ = try FeedParser.parse(feed(itemAttributes: 200), url: nil) }
    }

    @Test func equalsSignsOutsideTagsDoNotCount() throws {
        let many = String(repeating: "a=b ", count: 2000)
        let document = """
            <rss version="2.0"><channel><title>T</title><!-- \(many) --><item><title>\(many)</title>
            <description><![CDATA[<p \(many)>x</p>]]></description>
            <link>https://a.example/x?\(String(repeating: "k=v&amp;", count: 400))</link>
            </item></channel></rss>
            """
        #expect(try FeedParser.parse(Data(document.utf8), url: nil).items.count == 1)
    }

    /// Only quoted values after a '=' count as attributes (every attribute libxml2 accepts has
    /// one): a tag of bare '=' is no flood, one of `a='1'` and `b = "2"` is.
    @Test func anAttributeIsAQuotedValueAfterAnEqualsSign() {
        let bare = "<e " + String(repeating: "= ", count: 400) + ">"
        let quoted =
            "<e " + (0..<300).map { $0 % 2 == 0 ? "a\($0)='1'" : "b\($0) = \"2\"" }.joined(separator: " ") + ">"
        for (document, flood) in [
            (bare, false), (quoted, true), ("<x/>" + quoted, true), ("<!-- " + quoted + " -->", false),
        ] {
            let bytes = Array(document.utf8)
            for exact in [false, true] {
                let found = bytes.withUnsafeBufferPointer { ByteScan.attributeFlood($0, limit: 256, exact: exact) }
                #expect((found < bytes.count) == flood, "\(document.prefix(40)) exact: \(exact)")
            }
        }
    }

    /// The fast pre-pass (jumping from '<' to the last '<' within reach) answers what the
    /// tag-by-tag rule answers, on documents mixing tags near the limit, quoted '<', '>' and
    /// '=', sections and text full of '='.
    @Test func theFastPrePassAgreesWithTheTagByTagRule() {
        var generator = SystemRandomNumberGenerator()
        func tag(_ attributes: Int) -> String {
            var out = "<e"
            for i in 0..<attributes {
                // A '<' in a value ends the tag for libxml2 (and for both rules): rare, or no tag would be long.
                let value =
                    Int.random(in: 0..<150, using: &generator) == 0
                    ? "x<y" : ["1", "a=b", ">", "", "k=v&amp;j=w"].randomElement(using: &generator)!
                out += Bool.random(using: &generator) ? " a\(i)=\"\(value)\"" : " a\(i)='\(value)'"
            }
            return out + (Bool.random(using: &generator) ? ">" : "/>")
        }
        let limit = 64
        var disagreements: [String] = []
        var floods = 0
        for _ in 0..<4000 {
            var document = ""
            for _ in 0..<Int.random(in: 1...12, using: &generator) {
                switch Int.random(in: 0..<6, using: &generator) {
                case 0:
                    document += tag(
                        Bool.random(using: &generator)
                            ? Int.random(in: 0...8, using: &generator)
                            : Int.random(in: (limit - 4)...(limit + 4), using: &generator))
                case 1:
                    document +=
                        "<!-- \(String(repeating: "a=b ", count: Int.random(in: 0...80, using: &generator))) -->"
                case 2: document += "<![CDATA[\(tag(limit + 3))]]>"
                case 3: document += String(repeating: "x=y ", count: Int.random(in: 0...80, using: &generator))
                case 4: document += "</e>"
                default:
                    document += "<?pi \(String(repeating: "a=1 ", count: Int.random(in: 0...70, using: &generator)))?>"
                }
            }
            let bytes = Array(document.utf8)
            let (fast, exact) = bytes.withUnsafeBufferPointer {
                (
                    ByteScan.attributeFlood($0, limit: limit, exact: false),
                    ByteScan.attributeFlood($0, limit: limit, exact: true)
                )
            }
            if fast != exact { disagreements.append("\(document.debugDescription): \(fast) ≠ \(exact)") }
            if exact < bytes.count { floods += 1 }
        }
        // Both answers occur often, so agreement says something.
        #expect(floods > 400 && floods < 3600, "\(floods) floods of 4000")
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, first: \(disagreements.prefix(2))")
    }

    @Test func aParseOverItsBudgetIsStoppedAndNamed() throws {
        var document = "<rss version=\"2.0\"><channel><title>Big</title>"
        for i in 0..<20_000 {
            document +=
                "<item><title>Story \(i)</title><link>https://a.example/\(i)</link><description>Text "
                + "\(i)</description></item>"
        }
        document += "</channel></rss>"
        let data = Data(document.utf8)
        #expect(try FeedParser.parse(data, url: nil).items.count == 20_000)
        let cpu = threadCPUSeconds {
            #expect(throws: FeedParseError.tooSlow(seconds: 0.001)) {
                _ = try FeedParser.parse(data, url: nil, budget: 0.001)
            }
        }
        #expect(cpu < 5)
    }
}
