import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

/// Where an alert's image comes from: the largest media image, an image enclosure, or the first
/// `<img>` of the HTML; https only.
@Suite("Item images")
struct FeedImageTests {
    func image(_ itemXML: String, base: String? = "https://news.example.org/feed.xml", namespaces: String = "") throws
        -> String?
    {
        let document = """
            <rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"
                xmlns:content="http://purl.org/rss/1.0/modules/content/" \(namespaces)>
            <channel><title>Desk</title><item><title>Story</title>
            <link>https://news.example.org/1</link>\(itemXML)</item></channel></rss>
            """
        return try FeedParser.parse(Data(document.utf8), url: base).items.first?.image
    }

    @Test func theLargestMediaImageWins() throws {
        #expect(
            try image(
                """
                <media:content url="https://img.example.org/small.jpg" medium="image" width="140" height="80"/>
                <media:content url="https://img.example.org/video.mp4" medium="video" width="1920" height="1080"/>
                <media:content url="https://img.example.org/large.jpg" type="image/jpeg" width="1024" height="576"/>
                <media:thumbnail url="https://img.example.org/thumb.jpg" width="300" height="200"/>
                """) == "https://img.example.org/large.jpg")
        // Inside media:group too, and a thumbnail alone.
        #expect(
            try image(
                """
                <media:group><media:content url="https://img.example.org/a.png" width="600" height="400"/></media:group>
                """) == "https://img.example.org/a.png")
        #expect(
            try image(#"<media:thumbnail url="https://img.example.org/t.jpg"/>"#) == "https://img.example.org/t.jpg")
    }

    @Test func anImageEnclosureCounts() throws {
        #expect(
            try image(#"<enclosure url="https://img.example.org/e.jpg" type="image/jpeg" length="1000"/>"#)
                == "https://img.example.org/e.jpg")
        #expect(try image(#"<enclosure url="https://cdn.example.org/e.mp3" type="audio/mpeg" length="1000"/>"#) == nil)
        let atom = """
            <feed xmlns="http://www.w3.org/2005/Atom"><title>A</title><entry><title>T</title><id>urn:1</id>
            <link href="https://news.example.org/1"/>
            <link rel="enclosure" type="image/png" href="https://img.example.org/atom.png"/></entry></feed>
            """
        #expect(
            try FeedParser.parse(Data(atom.utf8), url: nil).items.first?.image == "https://img.example.org/atom.png")
    }

    @Test func otherwiseTheFirstImgOfTheHTML() throws {
        #expect(
            try image(
                """
                <description>&lt;p&gt;Text&lt;/p&gt;\
                &lt;IMG alt="x" SRC="https://img.example.org/d.jpg?w=1&amp;amp;h=2"&gt;\
                &lt;img src="https://img.example.org/second.jpg"&gt;</description>
                """) == "https://img.example.org/d.jpg?w=1&h=2")
        #expect(
            try image(#"<content:encoded><![CDATA[<figure><img src='/pics/c.jpg'></figure>]]></content:encoded>"#)
                == "https://news.example.org/pics/c.jpg", "relative, resolved against the feed's https URL")
        let xhtml = """
            <feed xmlns="http://www.w3.org/2005/Atom"><title>A</title><entry><title>T</title><id>urn:1</id>
            <link href="https://n.example/1"/>
            <content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>Hi</p>
            <img src="https://img.example.org/x.jpg"/></div></content></entry></feed>
            """
        #expect(try FeedParser.parse(Data(xhtml.utf8), url: nil).items.first?.image == "https://img.example.org/x.jpg")
        // Media beats the HTML's image.
        #expect(
            try image(
                """
                <description>&lt;img src="https://img.example.org/html.jpg"&gt;</description>
                <media:thumbnail url="https://img.example.org/media.jpg"/>
                """) == "https://img.example.org/media.jpg")
    }

    @Test func onlyAbsoluteHTTPSImages() throws {
        #expect(try image(#"<media:thumbnail url="http://img.example.org/plain.jpg"/>"#) == nil)
        #expect(try image(#"<description>&lt;img src="data:image/png;base64,AAAA"&gt;</description>"#) == nil)
        #expect(
            try image(#"<description>&lt;img src="/rel.jpg"&gt;</description>"#, base: nil) == nil,
            "relative with no base")
        // An http media image does not hide an https enclosure.
        #expect(
            try image(
                """
                <media:thumbnail url="http://img.example.org/plain.jpg"/>
                <enclosure url="https://img.example.org/e.jpg" type="image/jpeg"/>
                """) == "https://img.example.org/e.jpg")
    }

    /// Schemes and media types in any case; a control character is not a letter in another case.
    @Test func schemeAndTypeInAnyCase() throws {
        #expect(
            try image(#"<enclosure url="HTTPS://img.example.org/U.jpg" type="Image/JPEG"/>"#)
                == "HTTPS://img.example.org/U.jpg")
        #expect(try image(#"<enclosure url="HTTPS://img.example.org/U.jpg" type="video/mp4"/>"#) == nil)
        #expect(!ImageSource.isPushable("https\u{1A}//img.example.org/x.jpg"))
        #expect(!ImageSource.isImageType("image\u{0F}png"))
        #expect(ImageSource.isImageType("IMAGE/png"))
    }
}
