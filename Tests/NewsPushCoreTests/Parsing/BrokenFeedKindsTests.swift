import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

/// Kinds of broken feed found in feed readers' issue trackers and in real feeds judged against
/// feedparser, each reproduced by a fixture of our own (Fixtures/feeds/broken; the README lists
/// the kinds).
@Suite("Broken feeds of every known kind")
struct BrokenFeedKindsTests {
    func parse(_ name: String, url: String? = nil) throws -> ParsedFeed {
        try FeedParser.parse(try Fixtures.data("feeds/broken/\(name)"), url: url)
    }

    func titles(_ name: String) throws -> [String?] {
        try parse(name).items.map(\.title)
    }

    // MARK: Double-encoded UTF-8

    @Test func doubleEncodedUTF8IsRepairedInEveryLanguage() throws {
        let feed = try parse("double-encoded.xml")
        #expect(feed.title == "Désk")
        #expect(
            feed.items.map(\.title) == [
                "El gobierno ordenó la evacuación de la costa",
                "Été brûlant : l'État déclenche l'alerte canicule",
                "Über 200 Städte melden Überschwemmungen",
                "La città di Perugia sceglie il nuovo sindaco, è ufficiale",
                "São Paulo anuncia rodízio de água até março",
                "Путин провёл совещание с правительством",
                "Council tax rises by £120 for most households",
                "Minister says “no deal” is “off the table” – for now",
            ])
        #expect(feed.items.allSatisfy { $0.summary?.hasPrefix("Résumé: ") == true })
        #expect(try titles("double-encoded-entities.xml") == ["Government’s plan"])
    }

    @Test func rightTextIsNeverRepaired() throws {
        #expect(
            try titles("right-text.xml") == [
                "São Paulo decide hoje", "JOÃO SILVA VENCE EM SÃO PAULO", "Ã is the letter in the word Ãnguelo",
                "CAFÉ” the sign said", "Café ordenÃ³ — 東京", "東京で地震", "Plain ASCII headline",
            ])
        #expect(
            try titles("latin1-document.xml") == [
                "El Niño dejó £3 millones en daños, según el informe", "Ça coûte cher à Genève",
            ])
    }

    /// The rule itself, on single fields: each condition has a counter-example.
    @Test(arguments: [
        ("ordenÃ³", "ordenó"), ("Â£5m", "£5m"), ("Itâ€™s", "It’s"), ("â€œYesâ€\u{9D}", "“Yes”"),
        ("ÐŸÑƒÑ‚Ð¸Ð½", "Путин"),
        ("São Paulo", "São Paulo"),  // ã then o: not UTF-8
        ("Ãlvaro", "Ãlvaro"),  // Ã then l: not UTF-8
        ("CAFÉ”", "CAFÉ”"),  // would decode to U+0254, an IPA letter
        ("Café ordenÃ³ 東京", "Café ordenÃ³ 東京"),  // 東 has no single byte: a mixed field is left alone
        ("naïve", "naïve"), ("", ""), ("plain", "plain"),
    ])
    func theRepairRule(input: String, expected: String) {
        #expect(Mojibake.repaired(input) == expected)
    }

    // MARK: Namespaces

    @Test(arguments: ["default-ns-harvard.xml", "default-ns-userland.xml", "default-ns-custom.xml"])
    func rssInADefaultNamespaceIsReadAsRSS(name: String) throws {
        let feed = try parse(name)
        #expect(feed.format == .rss20)
        #expect(feed.link == "https://news.example.org/")
        #expect(feed.items.map(\.title) == ["First story", "Second story"])
        #expect(feed.items.map(\.link) == ["https://news.example.org/1", "https://news.example.org/2"])
        #expect(feed.items.first?.author == "Ana", "dc: keeps its meaning")
    }

    @Test func atomAsTheDefaultNamespaceOfAnRSSDocument() throws {
        let feed = try parse("default-ns-atom-on-rss.xml")
        #expect(feed.items.map(\.title) == ["First story"])
        #expect(
            feed.link == "https://news.example.org/",
            "the self link (empty element) does not replace the channel's link")
    }

    @Test func rss10AndAtomInNamespacesOfTheirOwn() throws {
        let rdf = try parse("default-ns-rdf-noslash.xml")
        #expect(rdf.title == "Desk")
        #expect(rdf.items.map(\.title) == ["First story"])
        let atom = try parse("default-ns-atom-feed.xml")
        #expect(atom.items.map(\.link) == ["https://news.example.org/1"])
    }

    /// Element names in capitals or mixed case (`<ITEM>`, `<pubdate>`): feedparser reads them,
    /// newspush read none of them and reported an empty feed.
    @Test func elementNamesAreMatchedWithoutRegardToCase() throws {
        let feed = try parse("element-case.xml")
        #expect(feed.title == "Upper Desk")
        #expect(feed.link == "https://news.example.org/")
        #expect(feed.items.map(\.title) == ["Upper-case story", "Mixed-case story"])
        #expect(feed.items.map(\.link) == ["https://news.example.org/upper", "https://news.example.org/mixed"])
        #expect(
            feed.items.map(\.published) == [
                Date(timeIntervalSince1970: 1_795_428_000), Date(timeIntervalSince1970: 1_795_431_600),
            ])
        #expect(feed.items.last?.summary == "Summary in a capitalised element")
    }

    /// `<link href="…"/>` in an RSS item (Atom's form without Atom's namespace): feedparser
    /// reads the href; newspush read no link.
    @Test func anRSSLinkWrittenWithAnHrefIsTheItemsLink() throws {
        let items = try FeedParser.parse(
            try Fixtures.data("feeds/broken/rss-link-href.xml"), url: "https://news.example.org/feed.xml"
        ).items
        #expect(
            items.map(\.link) == [
                "https://news.example.org/2026/11/href-story", nil, "https://news.example.org/text-story",
            ])
    }

    /// Attribute names in other cases (`ISPERMALINK`, `isPermalink`, `URL`): feedparser reads
    /// them; newspush took a guid marked "not a permalink" for the link and lost the image.
    @Test func attributeNamesAreMatchedWithoutRegardToCase() throws {
        let items = try parse("attribute-case.xml").items
        #expect(items.map(\.link) == ["https://news.example.org/the-link", nil, "https://news.example.org/pic"])
        #expect(items[1].guidIsPermaLink == false)
        #expect(items[2].enclosures == ["https://img.example.org/p.jpg"])
        #expect(items[2].image == "https://img.example.org/p.jpg")
    }

    // MARK: Never silently nothing

    @Test func itemsThatCannotBeReadAreAnError() throws {
        let foreign = try parse("items-in-foreign-namespace.xml")
        #expect(foreign.items.isEmpty)
        #expect(foreign.unusable?.description.contains("1 <item> or <entry> elements") == true)
        let bare = try parse("items-without-title-or-link.xml")
        #expect(bare.unusable == .noReadableItems("none of its 2 items has a title or a link"))
        #expect(try parse("empty-channel.xml").unusable == nil, "a feed with no items at all is not an error")
        let read = FeedReading.read(
            FetchedFeed(
                url: "https://news.example.org/feed", status: .ok,
                body: try Fixtures.data("feeds/broken/items-in-foreign-namespace.xml"),
                finalURL: "https://news.example.org/feed"),
            base: "https://news.example.org/feed")
        #expect(read.status == .error)
        #expect(read.error?.hasPrefix("https://news.example.org/feed: no usable items") == true)
    }

    // MARK: Links

    @Test func relativeLinksStayRelativeWithoutAnHTTPBase() throws {
        let data = try Fixtures.data("feeds/broken/relative-links.xml")
        for base in [nil, "file:///srv/feeds/relative-links.xml"] {
            let feed = try #require(
                FeedReading.read(
                    FetchedFeed(
                        url: "relative-links.xml", status: .ok, body: data, finalURL: base ?? "relative-links.xml"),
                    base: base
                ).feed)
            #expect(
                feed.items.map(\.link) == [
                    "/2026/11/relative-story", "https://other.example.net/section/story-7", "javascript:alert(1)",
                ])
            #expect(feed.link == "/")
        }
        let served = try #require(
            FeedReading.read(
                FetchedFeed(
                    url: "https://news.example.org/feed", status: .ok, body: data,
                    finalURL: "https://news.example.org/feed"),
                base: "https://news.example.org/feed"
            ).feed)
        #expect(served.items.first?.link == "https://news.example.org/2026/11/relative-story")
    }

    // MARK: Markup and escaping

    @Test func cdataMarkersWrittenAsTextOrNestedAreUnwrapped() throws {
        let nested = try parse("nested-cdata.xml")
        #expect(nested.items.map(\.title) == ["Nested sections", "After it"])
        #expect(nested.items.first?.summary == "Outer inner words")
        let escaped = try parse("escaped-cdata.xml")
        #expect(escaped.items.first?.title == "Open letter to the Commission")
        #expect(escaped.items.first?.summary == "Signed by 40 groups")
        #expect(try titles("escaped-cdata-atom.xml") == ["Lettre ouverte à la Commission"])
    }

    @Test func entitiesInAttributesSmartQuotesAndBOMs() throws {
        let attributes = try parse("entities-in-attributes.xml").items[0]
        #expect(attributes.link == "https://news.example.org/pic?id=1&src=rss")
        #expect(attributes.image == "https://img.example.org/p.jpg?w=800&h=600")
        #expect(
            attributes.enclosures.contains("https://img.example.org/e.jpg?a=1&copy=2"),
            "a bare & before a name is not a reference")
        #expect(try titles("cp1252-in-utf8.xml") == ["“Quoted” headline – with café"])
        #expect(
            try titles("bom-and-latin1-declaration.xml") == ["Déjà vu in Zürich"], "the BOM wins over the declaration")
    }

    @Test func titlesWithMarkupAndDoubleEscapes() throws {
        let markup = try parse("titles-with-markup.xml").items
        #expect(markup[0].title == "Live: talks resume")
        #expect(markup[1].title == "Linked headline")
        #expect(markup[2].title == nil, "an image is not a headline")
        let escaped = try parse("double-escaped.xml")
        #expect(escaped.title == "Desk > World")
        #expect(escaped.items.map(\.title) == ["Q&A: what the deal means", "Revenge's end"])
        // Atom text is text: the parse says what the feed wrote; the alert decodes (AlertTextTests).
        #expect(try titles("double-escaped-atom.xml") == ["AT&amp;T and T&#8209;Mobile merge"])
    }
}
