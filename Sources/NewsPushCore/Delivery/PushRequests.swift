import Crypto
import FeedParsing
import Foundation
import NewsPushModel
import NotificationHubs

/// What one push says, before it is shaped for a category's format.
public struct PushContent: Sendable, Codable {
    /// The story's category.
    public var category: NewsCategory
    /// The headline as pushed.
    public var title: String
    /// The story's link.
    public var url: String
    /// The feed's name, or `newsroom`.
    public var source: String
    /// The story key (the `id` property).
    public var id: String
    /// The summary, for `{summary}`.
    public var summary: String
    /// Replaces the rendered message template (manual publish with `--message`).
    public var message: String?
    /// An https image for the alert, if the item has one.
    public var image: String?
    /// The language of the item (its feed's), which picks the message template.
    public var language: String
    /// major or minor.
    public var importance: Importance
    /// The story whose alert this one replaces on the lock screen: the story itself, or the
    /// story a correction corrects.
    public var collapseKey: String

    /// What a push of story `id` says.
    public init(
        category: NewsCategory, title: String, url: String, source: String, id: String, summary: String = "",
        message: String? = nil, image: String? = nil, language: String = "en", importance: Importance = .major,
        collapseKey: String? = nil
    ) {
        self.category = category
        self.title = title
        self.url = url
        self.source = source
        self.id = id
        self.summary = summary
        self.message = message
        self.image = image
        self.language = language
        self.importance = importance
        self.collapseKey = collapseKey ?? id
    }
}

/// Shapes pushes into hub requests (SPEC §5). The outbox keeps a push's format, tags and
/// properties; the request is built from them when it is sent, with a fresh token and the
/// expiry counted from then.
public enum PushRequests {
    /// The template properties (SPEC §5): messageParam and one messageParam_<lang> per language
    /// of the category's `messages`, title, category, url (with `link_params`), source, id,
    /// image, collapseId, importance, priority, interruptionLevel; `expiry` is added when the
    /// push is sent. An `id-only` push has them too until it is sealed (`SecurePush`), and its
    /// `secure_alert` as `secureAlert`.
    public static func properties(
        _ content: PushContent, settings: CategorySettings, languages: Set<String> = [],
        linkParams: [(name: String, value: String)] = []
    ) -> [String: String] {
        // A push carries only http(s) links: a relative one (a feed read from a file), a
        // `javascript:` or `file:` one, or one with control characters goes out as no link at all.
        let url =
            FeedURL.isHTTP(content.url)
            ? Tracking.link(content.url, params: linkParams, category: content.category) : ""
        let image = content.image.flatMap { FeedURL.isHTTP($0) ? $0 : nil } ?? ""
        // Every text a device may show is cleaned and bounded as the message is: no control
        // characters, no bidirectional overrides, white space collapsed, at most
        // `AlertText.propertyLimit` characters and four bytes each.
        let title = AlertText.fit(content.title, limit: AlertText.propertyLimit)
        let source = AlertText.fit(content.source, limit: AlertText.propertyLimit)
        func message(in language: String?) -> String {
            if let message = content.message { return AlertText.fit(message, limit: settings.maxLength) }
            let template = language.flatMap { settings.messages[$0] } ?? settings.message
            let values = [
                "category": language.flatMap { settings.names[$0] } ?? content.category.rawValue,
                "title": title, "source": source, "url": url, "summary": content.summary,
            ]
            return AlertText.fit(MessageTemplate.render(template, values), limit: settings.maxLength)
        }
        var properties = [
            "messageParam": message(in: Languages.match(content.language, in: settings.messages.keys)),
            "title": title, "category": content.category.rawValue, "url": url, "source": source,
            "id": content.id,
            "image": image, "collapseId": CollapseID.of(content.collapseKey),
            "importance": content.importance.rawValue, "priority": content.importance.priority,
            "interruptionLevel": content.importance.interruptionLevel,
        ]
        // Every language any category declares, so a device registered with
        // `$(messageParam_<lang>)` never gets an empty alert: the category's message in that
        // language, else its default message.
        for language in languages.union(settings.messages.keys) {
            properties["messageParam_\(language)"] = message(in: settings.messages[language] == nil ? nil : language)
        }
        if settings.format == .idOnly, let alert = settings.secureAlert {
            let language = Languages.match(content.language, in: settings.names.keys)
            let name = language.flatMap { settings.names[$0] } ?? content.category.rawValue
            properties["secureAlert"] = AlertText.fit(
                MessageTemplate.render(alert, ["category": name]), limit: AlertText.propertyLimit)
        }
        return properties
    }

    /// The request for an outbox entry at `now`: its properties, the expiry counted from when
    /// it is delivered (now, or its scheduled time), as a scheduled send when it has a time.
    /// An id-only push's first platform's (what a dry run shows).
    public static func request(
        _ entry: OutboxEntry, client: NotificationHubClient, test: Bool = false, now: Date
    ) throws(HubError) -> HubRequest {
        try request(entry, platform: nil, client: client, test: test, now: now)
    }

    /// Every request an outbox entry is sent as: one, or one per platform an id-only push has
    /// still to reach, each with the format it goes as.
    public static func requests(
        _ entry: OutboxEntry, client: NotificationHubClient, test: Bool = false, now: Date
    ) throws(HubError) -> [PlatformRequest] {
        guard entry.format == .idOnly else {
            return [
                PlatformRequest(format: entry.format, request: try request(entry, client: client, test: test, now: now))
            ]
        }
        var requests: [PlatformRequest] = []
        for platform in SecurePush.platforms(of: entry) {
            requests.append(
                PlatformRequest(
                    format: platform,
                    request: try request(entry, platform: platform, client: client, test: test, now: now)))
        }
        return requests
    }

    /// The template property, and the native payloads' field, that carries a push's alert id
    /// (its outbox id), which an app reports events of (SPEC §11).
    public static let alertIdProperty = "alertId"

    /// The request of `entry` (to `platform`, for an id-only push), scheduled when it has a time;
    /// its properties carry its alert id.
    private static func request(
        _ entry: OutboxEntry, platform: PushFormat?, client: NotificationHubClient, test: Bool, now: Date
    ) throws(HubError) -> HubRequest {
        var properties = entry.properties
        properties[alertIdProperty] = entry.id
        let request = try request(
            format: entry.format, platform: platform, tags: entry.tags, properties: properties,
            expiresAfter: entry.expiresAfter, deliveredAt: entry.scheduledAt ?? now, client: client, test: test,
            now: now)
        return entry.scheduledAt.map { client.scheduled(request, at: $0) } ?? request
    }

    /// The request for a push of `format` to `tags` with `properties`, delivered at
    /// `deliveredAt` and shown for `expiresAfter` seconds from then; an id-only push's send to
    /// `platform` (its first platform when nil).
    public static func request(
        format: PushFormat, platform: PushFormat? = nil, tags: String, properties: [String: String],
        expiresAfter: Double, deliveredAt: Date, client: NotificationHubClient, test: Bool = false, now: Date
    ) throws(HubError) -> HubRequest {
        // Whole seconds, rounded up: the W3C date and apns-expiration have no fractions, and
        // rounding down could end an alert's life before it starts.
        let expiry = Date(
            timeIntervalSince1970: deliveredAt.addingTimeInterval(expiresAfter).timeIntervalSince1970.rounded(.up))
        let p = properties
        let major = p["importance"] != Importance.minor.rawValue
        switch format {
        case .template:
            var sent = p
            sent["expiry"] = FeedDates.format(expiry)
            return try client.templateRequest(properties: sent, tags: tags, test: test, now: now)
        case .idOnly:
            return try SecurePush.request(
                platform: platform ?? SecurePush.platforms[0], properties: p, tags: tags, expiry: expiry,
                client: client, test: test, now: now)
        case .apple:
            return try client.nativeRequest(
                .apple, payload: applePayload(p, major: major), tags: tags,
                headers: appleHeaders(p, expiry: expiry), test: test, now: now)
        case .fcmv1:
            return try client.nativeRequest(
                .fcmv1, payload: fcmPayload(p, major: major, expiresAfter: expiresAfter), tags: tags, test: test,
                now: now)
        case .wns:
            return try client.windowsToastRequest(
                xml: NotificationHubClient.toast(p["messageParam"] ?? p["title"] ?? ""), tags: tags, test: test,
                now: now)
        }
    }
}

extension PushRequests {
    /// An Apple native push's body: the alert, its interruption level and sound, the story's id,
    /// link and category, and its picture for a service extension.
    static func applePayload(_ p: [String: String], major: Bool) -> [String: Any] {
        var aps: [String: Any] = [
            "alert": p["messageParam"] ?? p["title"] ?? "",
            "interruption-level": p["interruptionLevel"] ?? Importance.major.interruptionLevel,
        ]
        if major { aps["sound"] = "default" }  // minor alerts arrive silently
        var payload: [String: Any] = ["id": p["id"] ?? "", "url": p["url"] ?? "", "category": p["category"] ?? ""]
        if let alertId = p[alertIdProperty] { payload[alertIdProperty] = alertId }
        if let image = p["image"], !image.isEmpty {
            aps["mutable-content"] = 1  // a notification service extension attaches the image
            payload["image"] = image
        }
        payload["aps"] = aps
        return payload
    }

    /// An Apple native push's headers: an alert, its priority, its expiry and collapse id.
    static func appleHeaders(_ p: [String: String], expiry: Date) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [
            ("apns-push-type", "alert"), ("apns-priority", p["priority"] ?? Importance.major.priority),
            ("apns-expiration", String(Int(expiry.timeIntervalSince1970))),
        ]
        if let collapse = p["collapseId"], !collapse.isEmpty { headers.append(("apns-collapse-id", collapse)) }
        return headers
    }

    /// An FCM v1 push's body: the notification, Android's time to live, priority and collapse
    /// key, and the story's fields as data.
    static func fcmPayload(_ p: [String: String], major: Bool, expiresAfter: Double) -> [String: Any] {
        var notification: [String: Any] = [
            "title": p["category"] ?? "", "body": p["messageParam"] ?? p["title"] ?? "",
        ]
        if let image = p["image"], !image.isEmpty { notification["image"] = image }
        var android: [String: Any] = [
            "ttl": "\(Int(expiresAfter.rounded()))s", "priority": major ? "high" : "normal",
        ]
        if let collapse = p["collapseId"], !collapse.isEmpty { android["collapse_key"] = collapse }
        var data = [
            "id": p["id"] ?? "", "url": p["url"] ?? "", "category": p["category"] ?? "", "source": p["source"] ?? "",
        ]
        if let alertId = p[alertIdProperty] { data[alertIdProperty] = alertId }
        return ["message": ["notification": notification, "android": android, "data": data] as [String: Any]]
    }
}

/// One hub request of a push and the format it goes as (an id-only push has one per platform).
public struct PlatformRequest: Sendable {
    /// The format: the entry's, or the platform of an id-only push's native send.
    public var format: PushFormat
    /// The request.
    public var request: HubRequest

    /// A request that goes as `format`.
    public init(format: PushFormat, request: HubRequest) {
        self.format = format
        self.request = request
    }
}

/// The collapse id of a story's alerts: the same for every alert of the story, so a corrected
/// alert replaces the first on the lock screen (APNs allows 64 bytes; this is 35).
public enum CollapseID {
    /// The collapse id of story `storyKey`'s alerts.
    public static func of(_ storyKey: String) -> String {
        "np-" + Hex.string(SHA256.hash(data: Data(storyKey.utf8)).prefix(16))
    }
}

/// `link_params`: tracking parameters added to the pushed URL (the story key is taken from the
/// feed's link before, so it never sees them).
public enum Tracking {
    /// `url` with `params` added (`{category}` in a value becomes the push's category).
    public static func link(_ url: String, params: [(name: String, value: String)], category: NewsCategory) -> String {
        guard !params.isEmpty, !url.isEmpty, var components = URLComponents(string: url), components.host != nil else {
            return url
        }
        var items = components.queryItems ?? []
        for (name, value) in params {
            items.removeAll { $0.name == name }
            items.append(
                URLQueryItem(name: name, value: MessageTemplate.render(value, ["category": category.rawValue])))
        }
        components.queryItems = items
        return components.string ?? url
    }
}
