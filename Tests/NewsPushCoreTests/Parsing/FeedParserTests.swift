import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsClassifier
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

@Suite("Feed parsing")
struct FeedParserTests {
    func parse(_ xml: String, url: String? = "https://example.org/feed.xml", contentType: String? = nil) throws
        -> ParsedFeed
    {
        try FeedParser.parse(Data(xml.utf8), url: url, contentType: contentType)
    }

    /// Author fields in the forms feeds write them, split into name and address.
    @Test func authorsAreSplitIntoNameAndAddress() {
        let cases: [(String, String?, String?)] = [
            ("Jane Doe", "Jane Doe", nil), ("jane@example.com (Jane Doe)", "Jane Doe", "jane@example.com"),
            ("Jane Doe <jane@example.com>", "Jane Doe", "jane@example.com"),
            ("  jane@example.com ", nil, "jane@example.com"),
            ("\u{A0}Jane Doe (Staff)\u{A0}", "Jane Doe (Staff)", nil), ("(jane@example.com)", nil, "jane@example.com"),
        ]
        for (text, name, email) in cases {
            let split = FeedAuthor.split(text)
            #expect(split.0 == name && split.1 == email, "\(text) → \(split)")
        }
    }

    /// The encoding named in the XML declaration, in either quote, with spaces around '='.
    @Test func declaredEncodingIsReadFromTheDeclaration() {
        for (document, expected) in [
            ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><rss/>", "ISO-8859-1"),
            ("<?xml version='1.0' encoding = 'windows-1252' ?><rss/>", "windows-1252"),
            ("<?xml version=\"1.0\"?><rss encoding=\"x\"/>", nil), ("<rss/>", nil),
            ("\n\n<?xml encoding=\"utf-8\"?>", "utf-8"), ("<?xml encoding=\"\"?>", nil),
        ] as [(String, String?)] {
            #expect(
                Array(document.utf8).withUnsafeBufferPointer { FeedBytes.declaredEncoding($0) } == expected,
                "\(document)")
        }
    }

    @Test func rss2Basics() throws {
        let feed = try parse(
            """
            <?xml version="1.0"?>
            <rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
              <title>Desk</title><link>https://example.org/</link>
              <item>
                <title>  First   story </title>
                <link>/news/1</link>
                <guid isPermaLink="false">id-1</guid>
                <description><![CDATA[<p>Some <b>bold</b> text</p><p>Second&nbsp;para</p>]]></description>
                <pubDate>Sun, 22 Nov 2026 06:00:00 GMT</pubDate>
                <dc:creator>Reporter</dc:creator>
                <category>Europe</category><category>Rail</category>
                <enclosure url="https://cdn.example.org/a.jpg" type="image/jpeg" length="1"/>
              </item>
              <item><guid>https://example.org/news/2</guid><title>Second</title></item>
            </channel></rss>
            """)
        #expect(feed.format == .rss20)
        #expect(feed.title == "Desk")
        #expect(feed.link == "https://example.org/")
        #expect(feed.items.count == 2)
        let first = feed.items[0]
        #expect(first.title == "First story")
        #expect(first.link == "https://example.org/news/1")
        #expect(first.id == "id-1")
        #expect(first.summary == "Some bold text Second\u{A0}para")
        #expect(first.published.map(FeedDates.format) == "2026-11-22T06:00:00Z")
        #expect(first.author == "Reporter")
        #expect(first.categories == ["Europe", "Rail"])
        #expect(first.enclosures == ["https://cdn.example.org/a.jpg"])
        // A permalink guid stands in for a missing link.
        #expect(feed.items[1].link == "https://example.org/news/2")
    }

    /// An Atom entry's link: the first alternate of an HTML type, else the first alternate.
    @Test func atomEntryLinkIsTheFirstHTMLAlternate() throws {
        func link(_ links: String) throws -> String? {
            try parse(
                """
                <feed xmlns="http://www.w3.org/2005/Atom"><title>A</title><entry><title>T</title>
                <id>urn:1</id>\(links)</entry></feed>
                """
            ).items.first?.link
        }
        #expect(
            try link(
                """
                <link rel="self" type="text/html" href="https://a.example/self"/>
                <link type="application/pdf" href="https://a.example/x.pdf"/>
                <link rel="alternate" type="application/xhtml+xml" href="https://a.example/page"/>
                """) == "https://a.example/page")
        #expect(
            try link(
                #"<link rel="alternate" type="application/pdf" href="https://a.example/x.pdf"/>"#
                    + #"<link rel="self" href="https://a.example/s"/>"#
            )
                == "https://a.example/x.pdf")
        #expect(try link(#"<link rel="self" href="https://a.example/s"/>"#) == nil)
    }

    @Test func atomWithXmlBaseAndTextTypes() throws {
        let feed = try parse(
            """
            <feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://example.net/blog/">
              <title type="text">A &lt;b&gt; c</title>
              <link rel="self" href="feed.atom"/><link href="./"/>
              <entry xml:base="posts/">
                <title type="html">&lt;em&gt;Escaped&lt;/em&gt; &amp;amp; markup</title>
                <link rel="enclosure" href="a.mp3"/>
                <link rel="alternate" type="application/json" href="1.json"/>
                <link rel="alternate" type="text/html" href="1.html"/>
                <id>tag:example.net,2026:1</id>
                <updated>2026-11-22T06:00:00+01:00</updated>
                <author><name>Ann</name><email>ann@example.net</email></author>
                <category term="science"/>
                <content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>One</p><p>Two</p></div></content>
              </entry>
            </feed>
            """)
        #expect(feed.format == .atom10)
        #expect(feed.title == "A <b> c")
        #expect(feed.link == "https://example.net/blog/")
        let entry = try #require(feed.items.first)
        #expect(entry.title == "Escaped & markup")
        #expect(entry.link == "https://example.net/blog/posts/1.html")
        #expect(entry.enclosures == ["https://example.net/blog/posts/a.mp3"])
        #expect(entry.id == "tag:example.net,2026:1")
        #expect(entry.updated.map(FeedDates.format) == "2026-11-22T05:00:00Z")
        #expect(entry.published == nil)
        #expect(entry.author == "Ann")
        #expect(entry.categories == ["science"])
        #expect(entry.summary == "One Two")
    }

    @Test func rss1AndRss09x() throws {
        let rdf = try parse(
            """
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
                     xmlns:dc="http://purl.org/dc/elements/1.1/">
              <channel rdf:about="https://example.org/"><title>RDF desk</title><link>https://example.org/</link>
              </channel>
              <item rdf:about="https://example.org/r/1"><title>R1</title><link>https://example.org/r/1</link>
                <dc:date>2026-11-22T06:00:00Z</dc:date><dc:subject>Politics</dc:subject></item>
            </rdf:RDF>
            """)
        #expect(rdf.format == .rss10)
        #expect(rdf.title == "RDF desk")
        #expect(rdf.items.first?.id == "https://example.org/r/1")
        #expect(rdf.items.first?.published.map(FeedDates.format) == "2026-11-22T06:00:00Z")
        #expect(rdf.items.first?.categories == ["Politics"])
        let old = try parse(
            "<rss version=\"0.91\"><channel><title>Old</title><item><title>T</title><link>http://e.org/1</link></"
                + "item></channel></rss>"
        )
        #expect(old.format == .rss09x)
        #expect(old.items.count == 1)
    }

    @Test func htmlEntitiesAndBareAmpersandsSurvive() throws {
        let feed = try parse(
            """
            <rss version="2.0"><channel><title>Caf&eacute; &amp; Bar</title>
            <item><title>AT&T buys caf&eacute;&nbsp;chain &doesnotexist; &#8217;s</title>
            <link>https://example.org/a?width=140&quality=85</link></item></channel></rss>
            """)
        #expect(feed.title == "Café & Bar")
        let item = try #require(feed.items.first)
        #expect(item.title == "AT&T buys café\u{A0}chain &doesnotexist; \u{2019}s")
        #expect(item.link == "https://example.org/a?width=140&quality=85")
        #expect(feed.problems.isEmpty)
    }

    @Test func notWellFormedKeepsWhatCanBeRecovered() throws {
        let feed = try parse(
            """
            <rss version="2.0"><channel><title>Broken</title>
            <item><title>One &amp; only</title><link>https://example.org/1</link></item>
            <item><title>Two <b>unclosed</title><link>https://example.org/2</link></item>
            <item><title>Three &amp; more</title><link>https://example.org/3</link></item>
            </channel></rss>
            """)
        #expect(!feed.problems.isEmpty)
        #expect(feed.items.first?.title == "One & only")
        #expect(feed.items.contains { $0.link == "https://example.org/1" })
    }

    @Test func truncatedDocumentKeepsCompleteItemsOnly() throws {
        let feed = try parse(
            """
            <rss version="2.0"><channel><title>Cut</title>
            <item><title>Complete</title><link>https://example.org/1</link></item>
            <item><title>Half a tit
            """)
        #expect(feed.items.map(\.title) == ["Complete"])
        #expect(feed.problems.contains { $0.contains("ends inside an item") })
    }

    @Test func htmlPageIsNotAFeed() {
        #expect(throws: FeedParseError.notAFeed("an HTML page, not a feed")) {
            try parse("<!DOCTYPE html><html><head><title>Home</title></head><body>hi</body></html>")
        }
    }

    @Test func emptyBodyIsReported() {
        #expect(throws: FeedParseError.empty) { try parse("") }
        #expect(throws: FeedParseError.empty) { try parse("  \n ") }
    }

    @Test func junkBeforeTheDeclarationIsSkipped() throws {
        let feed = try parse(
            "\n\n  <?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>T</title></channel></rss>")
        #expect(feed.title == "T")
        #expect(feed.problems.isEmpty)
    }

    @Test func externalEntitiesStayInert() throws {
        let feed = try parse(
            """
            <?xml version="1.0"?>
            <!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
            <rss version="2.0"><channel><title>x&xxe;y</title></channel></rss>
            """)
        #expect(feed.title?.contains("root:") != true)
    }

    @Test func latin1LabelWithCP1252BytesDecodesCurlyQuotes() throws {
        let feed = try FeedParser.parse(try Fixtures.data("feeds/cp1252-labelled-latin1.xml"), url: nil)
        #expect(feed.title == "Café News")
        #expect(feed.items.first?.title == "\u{201C}Quoted\u{201D} headline \u{2013} with dash")
    }

    @Test func httpCharsetOverridesTheDeclaration() throws {
        let body = Data(
            ("<?xml version=\"1.0\" encoding=\"utf-8\"?><rss "
                + "version=\"2.0\"><channel><title>Caf\u{E9}</title></channel></rss>").utf8)
        // Declared UTF-8 and served as UTF-8: read as such.
        #expect(try FeedParser.parse(body, url: nil, contentType: "application/rss+xml; charset=utf-8").title == "Café")
        var latin1 = Data("<?xml version=\"1.0\" encoding=\"utf-8\"?><rss version=\"2.0\"><channel><title>Caf".utf8)
        latin1.append(0xE9)
        latin1.append(contentsOf: Data("</title></channel></rss>".utf8))
        #expect(try FeedParser.parse(latin1, url: nil, contentType: "text/xml; charset=ISO-8859-1").title == "Café")
    }

    @Test func utf16WithBOM() throws {
        let xml =
            "<?xml version=\"1.0\" encoding=\"utf-16\"?><rss "
            + "version=\"2.0\"><channel><title>Ünïcode</title></channel></rss>"
        var data = Data([0xFF, 0xFE])
        data.append(xml.data(using: .utf16LittleEndian)!)
        #expect(try FeedParser.parse(data, url: nil).title == "Ünïcode")
    }

    /// The pre-pass's UTF-8 check agrees with the standard library's on edge cases and on
    /// random byte strings built from UTF-8 pieces, broken ones included.
    @Test func utf8CheckAgreesWithTheStandardLibrary() {
        let cases: [[UInt8]] = [
            [], [0x41], [0xC2, 0xA0], [0xC1, 0xBF], [0xE0, 0x9F, 0x80], [0xE0, 0xA0, 0x80], [0xED, 0xA0, 0x80],
            [0xED, 0x9F, 0xBF], [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
            [0xF5, 0x80, 0x80, 0x80], [0xE2, 0x80], [0x80], Array("naïve café — ok ✓ 😀".utf8),
        ]
        for bytes in cases {
            #expect(FeedBytes.isValidUTF8(bytes) == (String(validating: bytes, as: UTF8.self) != nil), "\(bytes)")
        }
        var generator = ClassifierTraining.SplitMix(seed: 42)
        let pieces: [[UInt8]] = [
            Array("abc ".utf8), Array("é".utf8), Array("€".utf8), Array("😀".utf8), [0x80], [0xC3], [0xE2, 0x82],
            [0xF0, 0x9F], [0xFF], [0xED, 0xB0, 0x80],
        ]
        for _ in 0..<2000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 1...12, using: &generator) {
                bytes += pieces[Int.random(in: 0..<pieces.count, using: &generator)]
            }
            #expect(FeedBytes.isValidUTF8(bytes) == (String(validating: bytes, as: UTF8.self) != nil), "\(bytes)")
        }
    }

    /// Text mixing UTF-8 and Windows-1252 keeps each valid UTF-8 sequence and reads every other
    /// byte as Windows-1252, exactly as a sequence-by-sequence reading with the standard
    /// library's validation does.
    @Test func mixedEncodingsDecodeSequenceBySequence() {
        func reference(_ bytes: [UInt8]) -> [UInt8] {
            var out: [UInt8] = []
            var i = 0
            while i < bytes.count {
                let b = bytes[i]
                if b < 0x80 {
                    out.append(b)
                    i += 1
                    continue
                }
                if let length = (2...4).first(where: {
                    i + $0 <= bytes.count && String(validating: bytes[i..<(i + $0)], as: UTF8.self) != nil
                }) {
                    out += bytes[i..<(i + length)]
                    i += length
                    continue
                }
                let scalar = b < 0xA0 ? FeedBytes.cp1252High[Int(b) - 0x80] : UInt32(b)
                out += Array(String(Character(Unicode.Scalar(scalar)!)).utf8)
                i += 1
            }
            return out
        }
        #expect(
            String(
                decoding: FeedBytes.mixedUTF8(Array("caf".utf8) + [0xE9, 0x20, 0x93] + Array("ok\u{201D} ✓".utf8))
                    .bytes, as: UTF8.self)
                == "café “ok” ✓")
        var generator = ClassifierTraining.SplitMix(seed: 5)
        let pieces: [[UInt8]] = [
            Array("plain text, ".utf8), Array("é".utf8), Array("€".utf8), Array("😀".utf8), [0x80], [0x93], [0xE9],
            [0xC3],
            [0xE2, 0x82], [0xF0, 0x9F], [0xFF], [0xED, 0xB0, 0x80], [0xE0, 0x80, 0x80],
        ]
        for _ in 0..<2000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 1...14, using: &generator) {
                bytes += pieces[Int.random(in: 0..<pieces.count, using: &generator)]
            }
            #expect(FeedBytes.mixedUTF8(bytes).bytes == reference(bytes), "\(bytes)")
        }
    }

    /// The `<img` search finds the first `<img` tag a byte loop would, whatever the case, at
    /// every position of the vector blocks and the tail, beside near misses.
    @Test func imgTagSearchStopsWhereAByteLoopWould() {
        func byteLoop(_ b: [UInt8]) -> Int {
            b.indices.first { i in
                i + 4 < b.count && b[i] == 0x3C && b[i + 1] | 0x20 == 0x69 && b[i + 2] | 0x20 == 0x6D
                    && b[i + 3] | 0x20 == 0x67
                    && [0x20, 0x09, 0x0A, 0x0D, 0x2F].contains(b[i + 4])
            } ?? b.count
        }
        var failures: [String] = []
        var generator = SystemRandomNumberGenerator()
        let pieces = ["<img ", "<IMG/", "<Img\n", "<imgx", "<im", "<iMg\t", "<<img ", "<i", "img ", "<img"]
        for length in [0, 3, 5, 15, 16, 17, 20, 21, 35, 36, 37, 64] {
            for position in 0...length {
                for piece in pieces {
                    for filler in [UInt8(ascii: "a"), 0x3C, 0x20, 0xC3] {
                        var bytes = [UInt8](repeating: filler, count: length)
                        bytes.insert(contentsOf: Array(piece.utf8), at: position)
                        if Bool.random(using: &generator) {
                            bytes.insert(
                                contentsOf: Array(pieces.randomElement(using: &generator)!.utf8),
                                at: Int.random(in: 0...bytes.count, using: &generator))
                        }
                        let found = bytes.withUnsafeBufferPointer { ByteScan.over($0, ByteScan.imgTag) }
                        if found != byteLoop(bytes) {
                            failures.append(
                                "\(String(decoding: bytes, as: UTF8.self).debugDescription): \(found) ≠ "
                                    + "\(byteLoop(bytes))"
                            )
                        }
                    }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) mismatches, first: \(failures.prefix(3))")
    }

    /// The sixteen-byte searches stop exactly where a byte-by-byte reading would: every byte
    /// value at every position of the vector blocks and the scalar tail, among several
    /// neighbours, and random buffers.
    @Test func byteSearchesStopWhereAByteLoopWould() {
        func matters(_ b: UInt8) -> Bool { b == 0x26 || b == 0xC2 || (b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D) }
        func endsRun(_ p: [UInt8], _ i: Int, markup: Bool) -> Bool {
            let b = p[i]
            if b == 0x09 || b == 0x0A || b == 0x0D || b == 0x0C { return true }
            if markup, b == UInt8(ascii: "<") || b == UInt8(ascii: "&") { return true }
            guard b == 0x20 else { return false }
            return i + 1 == p.count || p[i + 1] <= 0x20 || (markup && p[i + 1] == UInt8(ascii: "<"))
        }
        func pastEntities(_ bytes: [UInt8], lt: Bool) -> Int {
            var i = 0
            while i < bytes.count {
                if lt, bytes[i] == 0x3C {
                    if i + 1 < bytes.count, bytes[i + 1] != UInt8(ascii: "!"), bytes[i + 1] != UInt8(ascii: "?") {
                        i += 1
                        continue
                    }
                    return i
                }
                guard matters(bytes[i]) else {
                    i += 1
                    continue
                }
                guard bytes[i] == 0x26 else { return i }
                if let entity = ["&lt;", "&gt;", "&amp;", "&quot;", "&apos;"].first(where: {
                    bytes[i...].starts(with: $0.utf8)
                }) {
                    i += entity.utf8.count
                    continue
                }
                // A character reference kept as written: decimal or lower-case hex digits, ';',
                // a character XML allows outside 128–159.
                var j = i + 1
                guard j < bytes.count, bytes[j] == UInt8(ascii: "#") else { return i }
                j += 1
                let hex = j < bytes.count && bytes[j] == UInt8(ascii: "x")
                if hex { j += 1 }
                let digits = bytes[j...].prefix {
                    hex
                        ? ($0 >= 0x30 && $0 <= 0x39) || (($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x66)
                        : $0 >= 0x30 && $0 <= 0x39
                }.prefix(8)
                guard !digits.isEmpty, j + digits.count < bytes.count, bytes[j + digits.count] == UInt8(ascii: ";"),
                    let value = UInt32(String(decoding: digits, as: UTF8.self), radix: hex ? 16 : 10),
                    FeedBytes.xmlAllowed(value), !(0x80...0x9F).contains(value)
                else { return i }
                i = j + digits.count + 1
            }
            return bytes.count
        }
        func firstInvalidUTF8(_ bytes: [UInt8]) -> Int {
            var i = 0
            while i < bytes.count {
                if bytes[i] < 0x80 {
                    i += 1
                    continue
                }
                guard
                    let length = (2...4).first(where: {
                        i + $0 <= bytes.count && String(validating: bytes[i..<(i + $0)], as: UTF8.self) != nil
                    })
                else { return i }
                i += length
            }
            return bytes.count
        }
        // Mismatches are collected rather than expected one by one: there are 500,000 buffers.
        var failures: [String] = []
        func check(_ bytes: [UInt8], _ note: @autoclosure () -> String) {
            bytes.withUnsafeBufferPointer { p in
                if ByteScan.over(p, ByteScan.attention) != (bytes.firstIndex(where: matters) ?? bytes.count) {
                    failures.append("attention \(note())")
                }
                if ByteScan.over(p, ByteScan.nonASCII) != (bytes.firstIndex { $0 >= 0x80 } ?? bytes.count) {
                    failures.append("non-ASCII \(note())")
                }
                if ByteScan.over(p, ByteScan.repair) != (bytes.firstIndex { matters($0) || $0 == 0x3C } ?? bytes.count)
                {
                    failures.append("repair \(note())")
                }
                if ByteScan.over(p, ByteScan.attentionPastEntities) != pastEntities(bytes, lt: false) {
                    failures.append("past entities \(note())")
                }
                if ByteScan.over(p, ByteScan.repairPastEntities) != pastEntities(bytes, lt: true) {
                    failures.append("repair past entities \(note())")
                }
                if ByteScan.over(p, ByteScan.utf8Invalid) != firstInvalidUTF8(bytes) {
                    failures.append("UTF-8 \(note())")
                }
                if ByteScan.over(p, ByteScan.tag)
                    != (bytes.firstIndex { $0 == 0x22 || $0 == 0x27 || $0 == 0x3C || $0 == 0x3E } ?? bytes.count)
                {
                    failures.append("tag \(note())")
                }
                for markup in [false, true] {
                    let found = ByteScan.over(p) { ByteScan.textRun($0, $1, markup: markup) }
                    let expected = bytes.indices.first { endsRun(bytes, $0, markup: markup) } ?? bytes.count
                    if found != expected { failures.append("text run (markup \(markup)) \(note())") }
                }
            }
        }
        let neighbours: [UInt8] = [
            0x61, 0x00, 0x09, 0x0A, 0x1F, 0x20, 0x21, 0x25, 0x3B, 0x3C, 0x7F, 0x80, 0xA0, 0xC1, 0xC3, 0xFF,
        ]
        for length in [1, 15, 16, 17, 33, 40] {
            for value in 0...255 {
                for position in 0..<length {
                    for neighbour in neighbours {
                        var bytes = [UInt8](repeating: neighbour, count: length)
                        bytes[position] = UInt8(value)
                        check(bytes, "byte \(value) at \(position) of \(length) among \(neighbour)")
                    }
                }
            }
        }
        var generator = ClassifierTraining.SplitMix(seed: 7)
        let alphabet: [[UInt8]] = [
            [0x61], [0x62], [0x20], [0x20], [0x20], [0x3C], [0x3E], [0x22], [0x27], [0x26], [0x09], [0x0A], [0x0C],
            [0x0D],
            [0x01], [0xC2], [0x85], [0xE2], Array("&lt;".utf8), Array("&amp;".utf8), Array("&quot;".utf8),
            Array("&apos".utf8),
            Array("&gt".utf8), Array("é".utf8), Array("€".utf8), Array("😀".utf8), [0xED, 0xA0, 0x80], [0xF4, 0x90],
            [0xE0, 0x80],
            Array("&#8217;".utf8), Array("&#x2014;".utf8), Array("&#X41;".utf8), Array("&#150;".utf8),
            Array("&#1;".utf8),
            Array("&#".utf8), Array("&#123456789;".utf8), Array("&#xD800;".utf8), Array("&#65".utf8), Array("<!".utf8),
            Array("<?".utf8),
        ]
        for _ in 0..<5_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &generator)).flatMap { _ in
                alphabet[Int.random(in: 0..<alphabet.count, using: &generator)]
            }
            check(bytes, "\(bytes)")
        }
        #expect(failures.isEmpty, "\(failures.count) mismatches, first: \(failures.prefix(5))")
    }
}

extension FeedParserTests {
    // RSS <ttl> (minutes the channel may be cached): the watcher fetches no sooner.
    @Test func anRSSChannelsTTLIsRead() throws {
        let rss = { (ttl: String) in
            "<rss version=\"2.0\"><channel><title>T</title><ttl>\(ttl)</ttl><item><title>A</title></item></channel></rss>"
        }
        #expect(try parse(rss("15")).ttl == 15)
        #expect(try parse(rss(" 60\n")).ttl == 60)
        #expect(try parse(rss("soon")).ttl == nil)
        #expect(try parse(rss("0")).ttl == nil)
    }
}
