import Foundation
import NotificationHubs

/// What one push says, before it is shaped for a category's format.
public struct PushContent: Sendable {
    public var category: NewsCategory
    public var title: String
    public var url: String
    public var source: String
    /// The story key (the `id` property).
    public var id: String
    public var summary: String
    /// Replaces the rendered message template (manual publish with `--message`).
    public var message: String?

    public init(category: NewsCategory, title: String, url: String, source: String, id: String, summary: String = "",
                message: String? = nil) {
        self.category = category
        self.title = title
        self.url = url
        self.source = source
        self.id = id
        self.summary = summary
        self.message = message
    }
}

/// Shapes pushes into hub requests (SPEC §5). The outbox keeps a push's format, tags and
/// properties; the request is built from them when it is sent, with a fresh token.
public enum PushRequests {
    /// The template properties: messageParam, title, category, url, source, id (or only id and
    /// url for `id-only`).
    public static func properties(_ content: PushContent, settings: CategorySettings) -> [String: String] {
        let values = ["category": content.category.rawValue, "title": content.title, "source": content.source,
                      "url": content.url, "summary": content.summary]
        let message = content.message ?? MessageTemplate.render(settings.message, values)
        if settings.format == .idOnly { return ["id": content.id, "url": content.url] }
        return ["messageParam": message, "title": content.title, "category": content.category.rawValue,
                "url": content.url, "source": content.source, "id": content.id]
    }

    /// The request for a push of `format` to `tags` with `properties`.
    public static func request(format: PushFormat, tags: String, properties: [String: String], client: NotificationHubClient,
                               test: Bool = false, now: Date = Date()) throws(HubError) -> HubRequest {
        switch format {
        case .template, .idOnly:
            return try client.templateRequest(properties: properties, tags: tags, test: test, now: now)
        case .apple:
            let payload: [String: Any] = [
                "aps": ["alert": properties["messageParam"] ?? properties["title"] ?? "", "sound": "default"],
                "id": properties["id"] ?? "", "url": properties["url"] ?? "", "category": properties["category"] ?? "",
            ]
            return try client.nativeRequest(.apple, payload: payload, tags: tags, test: test, now: now)
        case .fcmv1:
            let payload: [String: Any] = [
                "message": [
                    "notification": ["title": properties["category"] ?? "", "body": properties["messageParam"] ?? properties["title"] ?? ""],
                    "data": ["id": properties["id"] ?? "", "url": properties["url"] ?? "", "category": properties["category"] ?? "",
                             "source": properties["source"] ?? ""],
                ] as [String: Any],
            ]
            return try client.nativeRequest(.fcmv1, payload: payload, tags: tags, test: test, now: now)
        }
    }

    /// The request for an outbox entry.
    public static func request(_ entry: OutboxEntry, client: NotificationHubClient, now: Date = Date()) throws(HubError) -> HubRequest {
        try request(format: entry.format, tags: entry.tags, properties: entry.properties, client: client, now: now)
    }
}
