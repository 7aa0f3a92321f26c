import Crypto
import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsPushCore

/// WebSub (W3C Recommendation) as values: discovery, the signature check, and the
/// subscription's life (verification only for what was asked, renewal, retry after a denial).
struct WebSubTests {
    @Test func theLinkHeaderIsReadBeforeTheDocumentAndRelationsMayBeListed() {
        let header = #"<https://hub.example.org/>; rel="hub", <https://news.example.org/feed.xml>; rel="self""#
        let document = [
            FeedLink(href: "https://other-hub.example.org/", rel: "hub"),
            FeedLink(href: "https://news.example.org/rss", rel: "self"),
        ]
        #expect(
            WebSubLinks.discover(linkHeader: header, documentLinks: document, fetchedURL: "https://x/")
                == WebSubLinks(hub: "https://hub.example.org/", topic: "https://news.example.org/feed.xml"))
        #expect(
            WebSubLinks.discover(linkHeader: nil, documentLinks: document, fetchedURL: "https://x/")
                == WebSubLinks(hub: "https://other-hub.example.org/", topic: "https://news.example.org/rss"))
        // Several relations in one rel, unquoted ones, and a missing self (the fetched URL).
        let listed = "<https://h.example/>;rel=\"hub self\", <https://a.example/>; rel=alternate"
        #expect(
            WebSubLinks.discover(linkHeader: listed, documentLinks: [], fetchedURL: "https://x/")
                == WebSubLinks(hub: "https://h.example/", topic: "https://h.example/"))
        #expect(
            WebSubLinks.discover(
                linkHeader: "<https://h.example/>; rel=hub", documentLinks: [], fetchedURL: "https://x/")
                == WebSubLinks(hub: "https://h.example/", topic: "https://x/"))
        #expect(
            WebSubLinks.discover(linkHeader: "<https://a/>; rel=alternate", documentLinks: [], fetchedURL: "x") == nil)
        // A hub that is not http(s) is no hub.
        #expect(
            WebSubLinks.discover(linkHeader: "<file:///etc/passwd>; rel=hub", documentLinks: [], fetchedURL: "x") == nil
        )
    }

    @Test func anAtomLinkToTheHubInAnRSSChannelIsFound() throws {
        let rss = """
            <rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>t</title>
            <atom:link rel="hub" href="https://pubsubhubbub.appspot.com/"/>
            <atom:link rel="self" href="https://news.example.org/feed/" type="application/rss+xml"/>
            <item><title>a</title><guid>a</guid></item></channel></rss>
            """
        let feed = try FeedParser.parse(Data(rss.utf8), url: "https://news.example.org/feed/?x")
        #expect(
            WebSubLinks.discover(linkHeader: nil, documentLinks: feed.links, fetchedURL: "https://news.example.org/f")
                == WebSubLinks(hub: "https://pubsubhubbub.appspot.com/", topic: "https://news.example.org/feed/"))
    }

    @Test func aSignatureIsCheckedForEachStrongMethodAndAnythingElseIsRefused() {
        let body = Data("<rss/>".utf8)
        let key = SymmetricKey(data: Data("s3cret".utf8))
        func hex(_ code: some Sequence<UInt8>) -> String { code.map { String(format: "%02x", $0) }.joined() }
        let valid = [
            "sha256=" + hex(HMAC<SHA256>.authenticationCode(for: body, using: key)),
            "sha384=" + hex(HMAC<SHA384>.authenticationCode(for: body, using: key)),
            "SHA512=" + hex(HMAC<SHA512>.authenticationCode(for: body, using: key)).uppercased(),
        ]
        for header in valid { #expect(WebSubSignature.isValid(header, body: body, secret: "s3cret"), "\(header)") }
        #expect(!WebSubSignature.isValid(valid[0], body: Data("<rss/> ".utf8), secret: "s3cret"), "another body")
        #expect(!WebSubSignature.isValid(valid[0], body: body, secret: "other"), "another secret")
        let sha1 = "sha1=" + hex(Insecure.SHA1.hash(data: body))
        for header in [nil, "", "sha256", "sha256=", "sha256=zz", sha1, "md5=00"] {
            #expect(!WebSubSignature.isValid(header, body: body, secret: "s3cret"), "\(header ?? "nil")")
        }
    }

    @Test func onlyAVerificationAskedForIsConfirmedAndTheLeaseIsRenewedBeforeItEnds() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let links = WebSubLinks(hub: "https://hub/", topic: "https://news/feed")
        let made = try #require(WebSubPolicy.observe(nil, feed: "f", links: links) ?? nil)
        #expect(WebSubPolicy.isToken(made.token) && made.secret.count == 64 && made.state == .wanted)
        func verify(
            _ s: WebSubSubscription, _ mode: String, _ topic: String, lease: Double? = 100, at seconds: Double = 0
        )
            -> WebSubSubscription?
        {
            WebSubPolicy.verify(s, mode: mode, topic: topic, leaseSeconds: lease, at: start.addingTimeInterval(seconds))
        }
        // Nothing asked yet: a verification is refused.
        #expect(verify(made, "subscribe", links.topic) == nil)
        #expect(WebSubPolicy.isDue(made, at: start))
        let asked = WebSubPolicy.asking(made, at: start)
        #expect(!WebSubPolicy.isDue(asked, at: start), "asked once, awaiting the verification")
        #expect(verify(asked, "unsubscribe", links.topic) == nil)
        #expect(verify(asked, "subscribe", "https://evil/") == nil)
        let active = try #require(verify(asked, "subscribe", links.topic))
        #expect(
            active.isActive(at: start.addingTimeInterval(99)) && !active.isActive(at: start.addingTimeInterval(101)))
        #expect(verify(active, "subscribe", links.topic) == nil, "verified once")
        // A 100-second lease is renewed half-way (a minute's margin at most half of it); a long
        // one at four fifths; a short one half-way.
        #expect(!WebSubPolicy.isDue(active, at: start.addingTimeInterval(49)))
        #expect(WebSubPolicy.nextAction(active) == start.addingTimeInterval(50))
        #expect(WebSubPolicy.renewalMargin(86400) == 86400 / 5 && WebSubPolicy.renewalMargin(4) == 2)
        #expect(WebSubPolicy.renewalMargin(600) == 120 && WebSubPolicy.renewalMargin(240) == 60)
        let renewal = WebSubPolicy.asking(active, at: start.addingTimeInterval(50))
        #expect(renewal.secret == made.secret && renewal.token == made.token, "renewed, same secret and callback")
        // The same links keep the subscription; a new hub starts another with a new secret and token.
        #expect(WebSubPolicy.observe(active, feed: "f", links: links) == nil)
        let moved = try #require(
            WebSubPolicy.observe(active, feed: "f", links: WebSubLinks(hub: "https://hub2/", topic: links.topic)) ?? nil
        )
        #expect(moved.secret != made.secret && moved.token != made.token && moved.state == .wanted)
        // A feed that names no hub any more ends it.
        #expect(WebSubPolicy.observe(active, feed: "f", links: nil).map { $0 == nil } == true)
        // Leases are capped at ten days whatever the hub grants.
        let long = try #require(verify(asked, "subscribe", links.topic, lease: 1e15))
        #expect(!long.isActive(at: start.addingTimeInterval(10 * 86400 + 1)))
    }

    @Test func aHubsLeaseIsAWholeNumberOfSecondsOrTheVerificationIsRefused() {
        for hostile in ["1e308", "inf", "nan", "-5", "100000000000000000000", " 60", "6 0", "0x10", ""] {
            #expect(WebSubPolicy.leaseSeconds(hostile) == nil, "\(hostile)")
        }
        #expect(WebSubPolicy.leaseSeconds("864000") == .some(864000))
        #expect(WebSubPolicy.leaseSeconds(nil) == .some(nil), "absent: the default")
    }

    @Test func aDenialOrAFailureIsAskedAgainAfterAWaitThatDoublesAndAnUnverifiedRequestCountsAsOne() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let links = WebSubLinks(hub: "https://hub/", topic: "https://news/feed")
        var s = try #require(WebSubPolicy.observe(nil, feed: "f", links: links) ?? nil)
        s = WebSubPolicy.asking(s, at: start)
        s = WebSubPolicy.failed(s, reason: "denied", at: start)
        #expect(!WebSubPolicy.isDue(s, at: start.addingTimeInterval(29)))
        #expect(WebSubPolicy.isDue(s, at: start.addingTimeInterval(30)))
        s = WebSubPolicy.asking(s, at: start.addingTimeInterval(30))
        s = WebSubPolicy.failed(s, reason: "503", at: start.addingTimeInterval(30))
        #expect(!WebSubPolicy.isDue(s, at: start.addingTimeInterval(89)))
        #expect(WebSubPolicy.isDue(s, at: start.addingTimeInterval(90)), "60 s after the second failure")
        // A request the hub never verifies is, after a minute, a third failure: 120 s more.
        s = WebSubPolicy.asking(s, at: start.addingTimeInterval(90))
        #expect(WebSubPolicy.isDue(s, at: start.addingTimeInterval(150)))
        s = WebSubPolicy.asking(s, at: start.addingTimeInterval(150))
        #expect(s.failures == 3 && !WebSubPolicy.isDue(s, at: start.addingTimeInterval(269)))
        #expect(WebSubPolicy.isDue(s, at: start.addingTimeInterval(270)))
        // Never more than an hour apart.
        for _ in 0..<20 { s = WebSubPolicy.failed(s, reason: "503", at: start) }
        #expect(WebSubPolicy.nextAction(s) == start.addingTimeInterval(3600))
    }

    @Test func onlyPublicAddressesArePublic() {
        for address in [
            "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
            "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12::1", "ff02::1",
            "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "2001:db8::1", "not an address", "",
        ] {
            #expect(!NetworkAddress.isPublic(address), "\(address)")
        }
        for address in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            #expect(NetworkAddress.isPublic(address), "\(address)")
        }
    }
}
