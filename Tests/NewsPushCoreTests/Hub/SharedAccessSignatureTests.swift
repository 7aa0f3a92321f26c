import Crypto
import Foundation
import Testing

@testable import NotificationHubs

@Suite("SAS tokens and connection strings (hub-api.md §2)")
struct SharedAccessSignatureTests {
    let cs1 = testConnectionString
    let cs2 =
        "Endpoint=sb://Contoso-News.servicebus.windows.net/;SharedAccessKeyName=SendOnly;SharedAccessKey=s3cr3t+Key/"
        + "With=Chars="

    @Test func vectorV1() throws {
        let c = try HubConnectionString(parsing: cs1)
        let token = SharedAccessSignature.token(
            resourceURI: SharedAccessSignature.hubResourceURI(host: c.host, hub: "breaking-news"),
            keyName: c.keyName, key: c.key, expiry: 1_700_000_000)
        #expect(
            token
                == "SharedAccessSignature sr=https%3a%2f%2fcontoso-news.servicebus.windows.net%2fbreaking-news&sig="
                + "4bSt6dDEW84kmiFi2wOpNGo14Ej0mMs8D%2FvmmxrF%2B8Y%3D&se=1700000000&skn="
                + "DefaultFullSharedAccessSignature"
        )
    }

    @Test func vectorV2KeyWithPlusSlashAndEquals() throws {
        let c = try HubConnectionString(parsing: cs2)
        #expect(c.key == "s3cr3t+Key/With=Chars=")
        let token = SharedAccessSignature.token(
            resourceURI: SharedAccessSignature.hubResourceURI(host: c.host, hub: "SportsHub"),
            keyName: c.keyName, key: c.key, expiry: 2_000_000_000)
        #expect(
            token
                == "SharedAccessSignature sr=https%3a%2f%2fcontoso-news.servicebus.windows.net%2fsportshub&sig="
                + "nQY1gb%2BKEl2yyhdT2xv9ziAI4S3MPy0QNOwIpiphKIw%3D&se=2000000000&skn=SendOnly"
        )
    }

    @Test func vectorV3SignatureMatchesDotNetStyle() {
        // V3 differs only in lower-case hex in sig; the signature bytes are the same.
        let sr = SharedAccessSignature.percentEncode(
            "http://contoso-news.servicebus.windows.net/breaking-news/messages/", lowercaseHex: true)
        #expect(sr == "http%3a%2f%2fcontoso-news.servicebus.windows.net%2fbreaking-news%2fmessages%2f")
        let sig = SharedAccessSignature.sign(sr: sr, expiry: 1_735_689_600, key: testKey)
        #expect(
            SharedAccessSignature.percentEncode(sig, lowercaseHex: true)
                == "cI2LkCPhHDdrjvFttJJmf09VPQ5pqhxWB38RxJJTBX4%3d")
    }

    @Test func vectorV4UpperCaseHexSr() {
        let sr = SharedAccessSignature.percentEncode(
            "https://Contoso-News.servicebus.windows.net/".lowercased(), lowercaseHex: false)
        #expect(sr == "https%3A%2F%2Fcontoso-news.servicebus.windows.net%2F")
        let sig = SharedAccessSignature.sign(sr: sr, expiry: 1_700_000_000, key: testKey)
        #expect(
            SharedAccessSignature.percentEncode(sig, lowercaseHex: false)
                == "j2kscSNj5jD1ed2hCmq2z24y0R6lSTUBjknd%2BTiQa3Q%3D")
    }

    @Test func jsCheckVector() {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("mydata".utf8), using: SymmetricKey(data: Data("mysecretkey".utf8)))
        #expect(
            SharedAccessSignature.percentEncode(Data(mac).base64EncodedString(), lowercaseHex: false)
                == "u0JTQtSbhCo8r7%2BYr%2FRNiJOs7%2FVwDireHAXovvLBbXo%3D")
    }

    @Test func theKeyIsNotBase64Decoded() throws {
        let c = try HubConnectionString(parsing: cs1)
        let token = SharedAccessSignature.token(
            resourceURI: "https://contoso-news.servicebus.windows.net/breaking-news",
            keyName: c.keyName, key: c.key, expiry: 1_700_000_000)
        #expect(!token.contains("LKj%2BSd4Ikh02XxQHJ%2BWjF2VCxK9HuqPJ7zmptQYeII4%3D"))
    }

    @Test func connectionStringErrorsNameWhatIsMissing() {
        #expect(throws: HubError.invalidConnectionString("missing SharedAccessKeyName, SharedAccessKey")) {
            try HubConnectionString(parsing: "Endpoint=sb://ns.servicebus.windows.net/")
        }
        #expect(throws: HubError.invalidConnectionString("missing Endpoint")) {
            try HubConnectionString(parsing: "SharedAccessKeyName=a;SharedAccessKey=b=")
        }
        #expect(throws: HubError.self) { try HubConnectionString(parsing: "garbage") }
    }

    /// Fuzzing found it: with the ';' before the key part missing, the key became part of the
    /// endpoint or key name, which `description` shows.
    @Test func aMissingSeparatorDoesNotGlueTheKeyOntoAShownPart() {
        for text in [
            "Endpoint=sb://ns.servicebus.windows.net/SharedAccessKey=\(testKey);SharedAccessKeyName=send",
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=sendSharedAccessKey=\(testKey)",
        ] {
            do {
                let parsed = try HubConnectionString(parsing: text)
                Issue.record("accepted: \(parsed.description)")
            } catch {
                #expect(!String(describing: error).contains(testKey.prefix(12)))
                #expect(String(describing: error).contains("is a ';' missing"))
            }
        }
    }

    /// Fuzzing found it: Foundation's date formatter traps on some combining characters, and a
    /// Retry-After header is whatever a server sends.
    @Test func retryAfterTakesOnlySecondsOrAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(NotificationHubClient.parseRetryAfter("Su\u{033D}2t9:5M", now: now) == nil)
        #expect(NotificationHubClient.parseRetryAfter("inf", now: now) == nil)
        #expect(NotificationHubClient.parseRetryAfter("1e9999", now: now) == nil)
        // A segment of dots alone is escaped: never a dot segment a client removes.
        #expect(NotificationHubClient.pathSegment("..") == "%2E%2E" && NotificationHubClient.pathSegment(".") == "%2E")
        #expect(NotificationHubClient.pathSegment("a.b") == "a.b")
        // Past Int's range (or any number past a day): a day, never a trap further on.
        #expect(NotificationHubClient.parseRetryAfter("99999999999999999999999999", now: now) == 86400)
        #expect(NotificationHubClient.parseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == 86400)
        #expect(NotificationHubClient.parseRetryAfter(" 2 ", now: now) == 2)
        #expect(NotificationHubClient.parseRetryAfter("1.5", now: now) == 1.5)
        let date = now.addingTimeInterval(30)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(NotificationHubClient.parseRetryAfter(formatter.string(from: date), now: now) == 30)
    }

    @Test func descriptionHidesTheKey() throws {
        let c = try HubConnectionString(parsing: cs1)
        #expect(!c.description.contains(testKey))
        #expect(c.description.contains("<redacted>"))
    }

    @Test func redactionHidesOnlyTheSignature() {
        let header = "SharedAccessSignature sr=abc&sig=SECRET%3D&se=1&skn=k"
        #expect(HubRequest.redactSignature(header) == "SharedAccessSignature sr=abc&sig=<redacted>&se=1&skn=k")
    }

    @Test(arguments: [
        "World", "World || Politics", "Sports && !Betting", "(a || b) && c", "user:alice", "tag_1@x.y#z-1",
    ])
    func validTagExpressions(_ expression: String) throws {
        try TagExpression.validate(expression)
    }

    @Test(arguments: [
        "", "$InstallationId:{1}", "World | Politics", "World &&", "(World", "World)", "a b", "wörld",
        String(repeating: "a", count: 121), "World\nPolitics",
        (1...21).map { "t\($0)" }.joined(separator: " || "),
        (1...7).map { "t\($0)" }.joined(separator: " && "),
    ])
    func invalidTagExpressions(_ expression: String) {
        #expect(throws: HubError.self) { try TagExpression.validate(expression) }
    }

    /// Hostile nesting is refused by a counter before anything recursive runs (100,000 levels
    /// crashed the parser with a stack overflow), quickly, with a short message.
    @Test(arguments: [
        String(repeating: "(", count: 100_000) + "a" + String(repeating: ")", count: 100_000),
        String(repeating: "!", count: 100_000) + "a",
        String(repeating: "(!", count: 50_000) + "a" + String(repeating: ")", count: 50_000),
        String(repeating: "(", count: 33) + "a" + String(repeating: ")", count: 33),
        String(repeating: "a || ", count: 1000) + "a",
    ])
    func deepOrHugeExpressionsAreRefusedWithoutRecursion(_ expression: String) {
        let cpu = threadCPUSeconds {
            #expect {
                try TagExpression.validate(expression)
            } throws: { error in
                guard case .invalidTagExpression(let shown, _) = error as? HubError else { return false }
                return shown.count <= 200
            }
        }
        #expect(cpu < 5)
    }

    @Test func reasonableNestingIsStillAccepted() throws {
        try TagExpression.validate(String(repeating: "(", count: 10) + "a && !b" + String(repeating: ")", count: 10))
        try TagExpression.validate("!!!!a")
    }

    @Test func twentyOrTagsAreAllowed() throws {
        try TagExpression.validate((1...20).map { "t\($0)" }.joined(separator: " || "))
        try TagExpression.validate((1...6).map { "t\($0)" }.joined(separator: " && "))
    }
}
