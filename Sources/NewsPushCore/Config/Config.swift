import FeedParsing
import Foundation
import NewsPushModel

/// A loaded, validated `feeds.yaml` with every default filled in.
public struct NewsPushConfig: Sendable {
    /// The file it was read from.
    public var file: String
    /// `hub:` of the config.
    public var hub: HubSettings
    /// Absolute path of the ledger (`state:`; a `.json` path names the JSON state file of
    /// earlier versions, migrated into a `.db` beside it).
    public var statePath: String
    /// Seconds a state entry is kept (`state_retention`, default 30 days).
    public var stateRetention: Double
    /// `fetch:` of the config.
    public var fetch: FetchSettings
    /// `policy:` of the config.
    public var policy: PolicySettings
    /// Settings for every category (defaults for those the file does not mention).
    public var categories: [NewsCategory: CategorySettings]
    /// `feeds:`, in the order of the file.
    public var feeds: [FeedSettings]
    /// Rules that make matching items major (or minor), first match wins (`importance_rules`).
    public var importanceRules: [ImportanceRule] = []
    /// Which selected pushes wait for an editor (`review:`); none by default.
    public var review = ReviewSettings()
    /// Query parameters added to every pushed URL (`link_params`), in order; `{category}` in a
    /// value becomes the push's category.
    public var linkParams: [(name: String, value: String)] = []
    /// Absolute path of the desk's users file (`desk.users`; default `desk-users.yaml` beside
    /// the config file).
    public var deskUsersPath: String = ""
    /// `desk.trusted_proxies`: the addresses whose `X-Forwarded-For`/`-Proto` the desk believes.
    public var deskTrustedProxies: [String] = []
    /// `api:`: the app back-end's rules (SPEC §9).
    public var api = ApiSettings()
    /// `watch:` (the resident watcher's schedule).
    public var watch = WatchSettings()

    /// The folder of the config file: relative feed paths and the ledger are found from here.
    public var folder: String { (file as NSString).deletingLastPathComponent }

    /// Every language any category has a message in (`messages:`): each push carries a
    /// `messageParam_<lang>` for all of them.
    public var languages: Set<String> { Set(categories.values.flatMap(\.messages.keys)) }

    /// The settings of `category` (the loader fills in every category; the default is what it
    /// fills in for one the file does not mention).
    public func settings(for category: NewsCategory) -> CategorySettings {
        categories[category] ?? CategorySettings(tags: category.rawValue, message: CategorySettings.defaultMessage)
    }
}

/// `review:`: the rules that hold pushes for an editor, and whom to tell.
public struct ReviewSettings: Sendable {
    /// First match wins; no match: sent (`auto`).
    public var rules: [ReviewRule] = []
    /// The tag expression of the editors' devices, told once per run when something is held.
    public var notifyTags: String?

    /// No rules: every push is sent.
    public init(rules: [ReviewRule] = [], notifyTags: String? = nil) {
        self.rules = rules
        self.notifyTags = notifyTags
    }
}

/// `review.rules` entry: pushes of `category`, from `feed` (name or URL) and/or whose title
/// matches `title` (a regular expression) are held for an editor (`review`) or sent (`auto`).
public struct ReviewRule: Sendable {
    /// Held for an editor, or sent.
    public enum Mode: String, Sendable {
        case auto, review
    }

    /// The category the push must be filed under.
    public var category: NewsCategory?
    /// The feed (name or URL) the item must come from.
    public var feed: String?
    /// A regular expression the title must match.
    public var title: String?
    /// What a matching push does.
    public var mode: Mode
    /// Its position in `review.rules`, for the reason a push was held.
    public var index: Int

    /// A rule; every condition given must match.
    public init(category: NewsCategory? = nil, feed: String? = nil, title: String? = nil, mode: Mode, index: Int) {
        self.category = category
        self.feed = feed
        self.title = title
        self.mode = mode
        self.index = index
    }

    /// How reports name it: `review.rules[0] (category Politics)`.
    public var name: String {
        let conditions = [
            category.map { "category \($0.rawValue)" }, feed.map { "feed \($0)" }, title.map { "title /\($0)/" },
        ].compactMap { $0 }
        return "review.rules[\(index)] (\(conditions.joined(separator: ", ")))"
    }
}

/// `importance_rules` entry: items whose title matches `title` (a regular expression) and/or
/// whose feed is `feed` (name or URL) get `importance`.
public struct ImportanceRule: Sendable {
    /// A regular expression the title must match.
    public var title: String?
    /// The feed (name or URL) the item must come from.
    public var feed: String?
    /// What matching items become.
    public var importance: Importance

    /// A rule; `title` and `feed` both match when both are given.
    public init(title: String? = nil, feed: String? = nil, importance: Importance = .major) {
        self.title = title
        self.feed = feed
        self.importance = importance
    }
}

/// Where and how to reach the Notification Hub.
public struct HubSettings: Sendable {
    /// The hub's name (the first segment of its paths).
    public var name: String
    /// The expanded connection string. Holds the key: never print it.
    public var connectionString: String
    /// Replaces `https://<namespace host>/` when set (emulators, proxies).
    public var endpoint: String?
    /// The REST API version (`2020-06`).
    public var apiVersion: String
    /// Pushes in flight at once (`hub.concurrency`, default 8).
    public var concurrency: Int = 8
    /// Seconds one request to the hub may take, connecting included (`hub.timeout`, default 30 s).
    public var timeout: Double = 30
    /// Retries of a send the hub throttled or could not take (`hub.retries`, default 3, as the
    /// official SDKs), waiting `retry_delay` (default 1 s) doubled each time unless the hub's
    /// Retry-After says otherwise.
    public var retries: Int = 3
    /// Seconds before the first retry (`hub.retry_delay`).
    public var retryDelay: Double = 1
    /// The namespace's tier (`hub.tier`, default standard): its device quota is the default of
    /// `api.max_installations`.
    public var tier: HubTier = .standard
}

/// A Notification Hubs pricing tier (hub-api.md §3).
public enum HubTier: String, Sendable, CaseIterable {
    case free, basic, standard

    /// Active devices a namespace of this tier may hold.
    public var deviceQuota: Int {
        switch self {
        case .free: return 500
        case .basic: return 200_000
        case .standard: return 10_000_000
        }
    }
}

/// `watch:`: the resident watcher's schedule (SPEC §10).
public struct WatchSettings: Sendable, Equatable {
    /// A feed's usual fetch interval, in seconds (`watch.interval`).
    public var interval: Double = 60
    /// Never more often (`watch.min_interval`).
    public var minInterval: Double = 15
    /// Never less often (`watch.max_interval`), also the safety net under WebSub.
    public var maxInterval: Double = 1800
    /// Where the listener (WebSub callbacks, pings, `/metrics`) listens; nil: `off`, no listener.
    public var listen: String? = "127.0.0.1:8082"
    /// The public base URL of the WebSub callbacks (`watch.callback_url`); nil: no WebSub.
    public var callbackURL: String?
    /// Whether to subscribe where a feed advertises a hub (`watch.websub: auto`; `off`: not).
    public var webSub = true
    /// How long a feed stays with a watcher that stopped renewing its lease (`watch.lease`).
    public var lease: Double = 120
    /// The ping token of each feed, by feed name (`watch.ping_tokens`).
    public var pingTokens: [String: String] = [:]
    /// Whether a feed's WebSub hub may be at a loopback, private or link-local address
    /// (`watch.hubs.private: allow`; a staging hub, the tests): by default it is not subscribed to.
    public var privateHubs = false
    /// Whether a feed's WebSub hub may be reached over plain `http://` (`watch.hubs.http: allow`):
    /// by default not, so a subscription's secret never travels unencrypted.
    public var httpHubs = false

    /// The defaults: 60 s, between 15 s and 30 min, listening on 127.0.0.1:8082.
    public init() {}

    /// Whether `text` is `HOST:PORT` (a name, an IPv4 address or a bracketed IPv6 one).
    public static func isListenAddress(_ text: String) -> Bool {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return false }
        let host = text[..<colon]
        return !host.isEmpty && (!host.contains(":") || (host.hasPrefix("[") && host.hasSuffix("]")))
    }
}

/// Limits for fetching feeds.
public struct FetchSettings: Sendable {
    /// Feeds fetched at once (`fetch.concurrency`).
    public var concurrency = 16
    /// Feeds fetched at once from one host (`fetch.per_host`).
    public var perHost = 2
    /// Seconds for a whole request.
    public var timeout: Double = 20
    /// The largest document taken (`fetch.max_bytes`).
    public var maxBytes = 10 * 1024 * 1024
    /// A URL or address where publishers can reach the operator, sent in the User-Agent.
    public var contact: String?
    /// Seconds one feed's parse may take before that feed fails alone (`parse_budget`).
    public var parseBudget: Double = FeedParser.defaultBudget

    /// The defaults.
    public init() {}
}

/// Which items deserve a push.
public struct PolicySettings: Sendable {
    /// What the first read of a feed does: record a baseline, or push.
    public enum FirstRun: String, Sendable { case baseline, send }
    /// Seconds: never push an item published longer ago than this.
    public var maxAge: Double = 3 * 3600
    /// Pushes per category per window (`policy.budget.per_category`).
    public var budgetPerCategory = 3
    /// Seconds of the rolling budget window.
    public var budgetWindow: Double = 3600
    /// When nothing is pushed (`policy.quiet_hours`).
    public var quietHours: QuietHours?
    /// What a feed's first read does (`policy.first_run`).
    public var firstRun: FirstRun = .baseline
    /// Below this classification confidence an item is unclassified and not pushed.
    public var minConfidence = 0.5

    /// The defaults.
    public init() {}
}

/// A daily window in a time zone during which nothing is pushed.
public struct QuietHours: Sendable {
    /// Minutes after local midnight.
    public var from: Int
    /// Minutes after local midnight when the window ends.
    public var to: Int
    /// The zone the window is read in.
    public var timeZone: TimeZone

    /// The time zone as the config names it (`UTC` stays `UTC`, not Foundation's `GMT`).
    public var zoneName: String

    /// A window from `from` to `to` (minutes after midnight) in `timeZone`.
    public init(from: Int, to: Int, timeZone: TimeZone, zoneName: String? = nil) {
        self.from = from
        self.to = to
        self.timeZone = timeZone
        self.zoneName = zoneName ?? timeZone.identifier
    }

    /// When the window ends, as HH:MM local time.
    public var endText: String { String(format: "%02d:%02d", to / 60, to % 60) }

    /// Whether `date` falls inside the window (which may span midnight).
    public func contains(_ date: Date) -> Bool {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        let minute = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        if from == to { return false }
        return from < to ? (minute >= from && minute < to) : (minute >= from || minute < to)
    }
}

/// How pushes for one category look.
public struct CategorySettings: Sendable {
    /// The tag expression the push goes to.
    public var tags: String
    /// The `messageParam` text; placeholders: {category} {title} {source} {url} {summary}.
    public var message: String
    /// How the push is sent (`template`, the default, works with the seed app's registrations).
    public var format: PushFormat = .template
    /// Seconds a device may still show the alert after it is sent (`expiry`, default 1h).
    public var expiry: Double = 3600
    /// `major` (default) or `minor`.
    public var importance: Importance = .major
    /// Language → message template, sent as `messageParam_<lang>` (and as `messageParam` for
    /// items of a feed in that language).
    public var messages: [String: String] = [:]
    /// Language → the category's display name, for `{category}` in that language's message.
    public var names: [String: String] = [:]
    /// The most characters `messageParam` may have (default 178), cut at a word with "…".
    public var maxLength = 178
    /// `secure_alert` (id-only categories): the visible generic alert an Apple device shows
    /// instead of a silent push (`{category}` is the category's name), which the app's
    /// notification extension replaces with the fetched text. Nil: a silent push.
    public var secureAlert: String?

    /// A category's settings with the default alert settings.
    public init(tags: String, message: String, format: PushFormat = .template) {
        self.tags = tags
        self.message = message
        self.format = format
    }

    /// What the seed app's registrations display: `Breaking {category} News : {title}`.
    public static let defaultMessage = "Breaking {category} News : {title}"
    /// The placeholders a message may use.
    public static let placeholders: Set<String> = ["category", "title", "source", "url", "summary"]
}

/// One feed to follow.
public struct FeedSettings: Sendable {
    /// `http(s)://…`, or a file path relative to the config's folder (or `file://` absolute).
    public var url: String
    /// The display name; nil means the feed's own title.
    public var name: String?
    /// A section feed: every item goes to this category.
    public var category: NewsCategory?
    /// What the first read of this feed does (default: `policy.first_run`).
    public var firstRun: PolicySettings.FirstRun?
    /// The language of its items (`language`; default: the feed's own `<language>`, else en).
    public var language: String?
    /// The feed's own WebSub setting (`websub: URL` or `off`); nil: `watch.websub` decides.
    public var webSub: FeedWebSub?
    /// Where it is declared in the config file.
    public var line: Int
}

/// Language tags as newspush keys them: lower case, `_` between subtags (`pt_br`).
public enum Languages {
    /// `tag` lower-cased with `_` between subtags (`pt-BR` → `pt_br`).
    public static func normalized(_ tag: String) -> String {
        tag.trimmingCharacters(in: .whitespaces).lowercased().replacingOccurrences(of: "-", with: "_")
    }

    /// Whether `tag` reads as a language tag: a primary language of 2 or 3 letters, then
    /// subtags of 1 to 8 letters or digits (`en`, `pt-BR`, `zh-Hant-TW`).
    public static func isWellFormed(_ tag: String) -> Bool {
        let parts = normalized(tag).split(separator: "_", omittingEmptySubsequences: false)
        guard let primary = parts.first, (2...3).contains(primary.count),
            primary.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return false }
        return parts.dropFirst().allSatisfy {
            (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }

    /// The configured language that fits `tag`: itself, else its primary subtag (`fr_ca` → `fr`).
    public static func match(_ tag: String, in available: some Collection<String>) -> String? {
        let tag = normalized(tag)
        if available.contains(tag) { return tag }
        let primary = String(tag.prefix { $0 != "_" })
        return available.contains(primary) ? primary : nil
    }
}

/// A feed's own WebSub setting (`feeds[].websub`).
public enum FeedWebSub: Sendable, Equatable {
    /// Never subscribe for this feed.
    case off
    /// Subscribe at this hub (the feed's URL is the topic), whatever the feed advertises.
    case hub(String)
}
