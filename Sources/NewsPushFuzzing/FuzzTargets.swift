import FeedParsing
import Foundation
import NewsPushCore
import NewsPushHTTP
import NewsPushModel
import NotificationHubs

/// The inputs newspush reads from outside, each as a libFuzzer target (README "Hostile input").
/// A target takes arbitrary bytes, runs them through what the binaries run them through, and
/// traps when a promise is broken (a secret in an error, a parse that contradicts itself); a
/// crash, a sanitizer report or more than a second on one input is a finding.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Feed bytes → the parser, the "no usable items" check and the alert's text.
    case feed
    /// `feeds.yaml` text → the config loader (with a hub connection string in the environment).
    case config
    /// A tag expression → the validator and the emulator's evaluator.
    case tags
    /// Date and duration strings → the feed date parsers, durations, Retry-After.
    case dates
    /// A connection string → its parser; no error may repeat the key.
    case connection
    /// A form body or URL query, as the desk receives them → its decoder; what it decodes
    /// decodes the same once encoded again.
    case form

    /// Runs one input.
    public func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .feed: Self.feed(Data(bytes))
        case .config: Self.config(Self.text(bytes))
        case .tags: Self.tags(Self.text(bytes))
        case .dates: Self.dates(Self.text(bytes))
        case .connection: Self.connection(Self.text(bytes))
        case .form: Self.form(Self.text(bytes))
        }
    }

    /// Runs the target on one input.
    public func run(_ data: Data) {
        data.withUnsafeBytes { run($0) }
    }

    private static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    private static func feed(_ data: Data) {
        guard let feed = try? FeedParser.parse(data, url: "https://fuzz.example/feed.xml") else { return }
        _ = feed.unusable
        for item in feed.items {
            let headline = AlertCopy.headline(title: item.title, summary: item.summary) ?? ""
            let summary = AlertCopy.summary(item.summary, headline: headline)
            _ = AlertText.fit(headline + "\n" + summary, limit: 178)
            _ = TitleFingerprint(headline)
            _ = StoryKey.keys(for: [item], feedURL: "https://fuzz.example/feed.xml")
        }
    }

    /// A key no input is expected to contain: every error is searched for pieces of it.
    static let sentinelKey = "Zm9vYmFyU2VudGluZWxLZXkxMjM0NTY3OA=="

    private static func config(_ text: String) {
        let environment = [
            "NEWSPUSH_HUB_CONNECTION_STRING":
                "Endpoint=sb://fuzz.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=\(sentinelKey)",
            "FUZZ": "value",
        ]
        do {
            _ = try ConfigLoader(environment: environment).parse(text, file: "fuzz.yaml")
        } catch {
            requireNoSecret(in: String(describing: error))
        }
    }

    private static func tags(_ text: String) {
        // The emulator routes with `TagExpression.Node` (its `TagPredicate`).
        guard let node = try? TagExpression.parse(text) else { return }
        for tags: Set<String> in [
            [], ["World"], ["World", "Sports", "lang_en"],
            Set(text.split(whereSeparator: { !$0.isLetter }).map(String.init)),
        ] {
            _ = node.matches(tags)
        }
        do {
            try TagExpression.validate(text)
        } catch {
            fatalError("the validator refuses an expression the evaluator parsed: \(error)")
        }
    }

    private static func dates(_ text: String) {
        _ = FeedDates.parse(text)
        _ = FeedDates.parseISO8601(text)
        _ = Durations.parse(text)
        _ = NotificationHubClient.parseRetryAfter(text, now: Date(timeIntervalSince1970: 1_800_000_000))
    }

    private static func connection(_ text: String) {
        // The fuzzed text with a key part before or after it, as a config would hold it, and
        // with the ';' before the key part missing.
        for candidate in [
            text + ";SharedAccessKey=\(sentinelKey)", "SharedAccessKey=\(sentinelKey);" + text,
            text + "SharedAccessKey=\(sentinelKey)",
        ] {
            do {
                let parsed = try HubConnectionString(parsing: candidate)
                requireNoSecret(in: parsed.description)
            } catch {
                requireNoSecret(in: String(describing: error))
            }
        }
    }

    private static func form(_ text: String) {
        let fields = FormFields.parse(text)
        // Every byte but the unreserved ones escaped: the same fields come back.
        func escaped(_ text: String) -> String {
            text.utf8.map { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    return String(UnicodeScalar(byte))
                default:
                    return String(format: "%%%02X", byte)
                }
            }.joined()
        }
        let again = FormFields.parse(fields.map { "\(escaped($0.key))=\(escaped($0.value))" }.joined(separator: "&"))
        if again != fields { fatalError("the form decodes differently once encoded again: \(fields) vs \(again)") }
    }

    /// Traps when `message` holds any 12-character piece of the sentinel key.
    static func requireNoSecret(in message: String) {
        let key = Array(sentinelKey)
        for start in 0...(key.count - 12) where message.contains(String(key[start..<start + 12])) {
            fatalError("an error repeats the key: \(message)")
        }
    }
}
