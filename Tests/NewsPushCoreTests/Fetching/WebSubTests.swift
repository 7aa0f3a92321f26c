import Crypto
import Foundation
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

    @Test func onlyAVerificationAskedForIsConfirmedAndTheLeaseIsRenewedBeforeItEnds() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let links = WebSubLinks(hub: "https://hub/", topic: "https://news/feed")
        var subscriptions = WebSubSubscriptions()
        func verify(_ feed: String, _ mode: String, _ topic: String, at seconds: Double = 0) -> Bool {
            subscriptions.verify(
                feed: feed, mode: mode, topic: topic, leaseSeconds: 100, at: start.addingTimeInterval(seconds))
        }
        subscriptions.observe(feed: "f", links: links, secret: { "secret-1" })
        // Nothing asked yet: a verification is refused.
        #expect(!verify("f", "subscribe", links.topic))
        let first = subscriptions.due(at: start)
        #expect(first.map(\.feed) == ["f"])
        let again = subscriptions.due(at: start)
        #expect(again.isEmpty, "asked once, awaiting the verification")
        #expect(!verify("f", "unsubscribe", links.topic))
        #expect(!verify("f", "subscribe", "https://evil/"))
        #expect(!verify("g", "subscribe", links.topic))
        #expect(verify("f", "subscribe", links.topic))
        #expect(subscriptions.isActive(feed: "f", at: start.addingTimeInterval(99)))
        #expect(!verify("f", "subscribe", links.topic))
        let early = subscriptions.due(at: start.addingTimeInterval(79))
        #expect(early.isEmpty)
        #expect(subscriptions.nextAction() == start.addingTimeInterval(80))
        let renewal = subscriptions.due(at: start.addingTimeInterval(80))
        #expect(renewal.map(\.secret) == ["secret-1"], "renewed, same secret")
        // The same links keep the subscription; a new hub starts another with a new secret.
        subscriptions.observe(feed: "f", links: links, secret: { "secret-2" })
        #expect(subscriptions.secret(feed: "f") == "secret-1")
        subscriptions.observe(feed: "f", links: WebSubLinks(hub: "https://hub2/", topic: links.topic), secret: { "s3" })
        #expect(subscriptions.secret(feed: "f") == "s3" && subscriptions.byFeed["f"]?.state == .wanted)
    }

    @Test func aDenialOrAFailureIsAskedAgainAfterAWaitThatDoubles() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let links = WebSubLinks(hub: "https://hub/", topic: "https://news/feed")
        var subscriptions = WebSubSubscriptions()
        subscriptions.observe(feed: "f", links: links, secret: { "s" })
        _ = subscriptions.due(at: start)
        let other = subscriptions.failed(feed: "f", topic: "https://other/", reason: "denied", at: start)
        #expect(!other)
        let denied = subscriptions.failed(feed: "f", topic: links.topic, reason: "denied", at: start)
        #expect(denied)
        func dueCount(_ seconds: Double) -> Int { subscriptions.due(at: start.addingTimeInterval(seconds)).count }
        #expect(dueCount(29) == 0)
        #expect(dueCount(30) == 1)
        subscriptions.failed(feed: "f", reason: "503", at: start.addingTimeInterval(30))
        #expect(dueCount(89) == 0)
        #expect(dueCount(90) == 1, "60 s after the second failure")
        // An unanswered request is asked again after a minute.
        #expect(dueCount(149) == 0)
        #expect(dueCount(150) == 1)
    }
}
