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

/// Shapes pushes into hub requests according to each category's settings (SPEC §5).
enum PushRequests {
    /// The template properties: messageParam, title, category, url, source, id (or only id and
    /// url for `id-only`).
    static func properties(_ content: PushContent, settings: CategorySettings) -> [String: String] {
        let values = ["category": content.category.rawValue, "title": content.title, "source": content.source,
                      "url": content.url, "summary": content.summary]
        let message = content.message ?? MessageTemplate.render(settings.message, values)
        if settings.format == .idOnly { return ["id": content.id, "url": content.url] }
        return ["messageParam": message, "title": content.title, "category": content.category.rawValue,
                "url": content.url, "source": content.source, "id": content.id]
    }

    /// The request for one push; `tags` overrides the category's tag expression.
    static func request(_ content: PushContent, settings: CategorySettings, tags: String? = nil, client: NotificationHubClient,
                        test: Bool = false, now: Date = Date()) throws(HubError) -> (request: HubRequest, properties: [String: String]) {
        let properties = properties(content, settings: settings)
        return (try request(content, properties: properties, settings: settings, tags: tags, client: client, test: test, now: now), properties)
    }

    /// The request for one push whose `properties` are already built.
    static func request(_ content: PushContent, properties: [String: String], settings: CategorySettings, tags: String? = nil,
                        client: NotificationHubClient, test: Bool = false, now: Date = Date()) throws(HubError) -> HubRequest {
        let tags = tags ?? settings.tags
        switch settings.format {
        case .template, .idOnly:
            return try client.templateRequest(properties: properties, tags: tags, test: test, now: now)
        case .apple:
            let payload: [String: Any] = [
                "aps": ["alert": properties["messageParam"] ?? content.title, "sound": "default"],
                "id": content.id, "url": content.url, "category": content.category.rawValue,
            ]
            return try client.nativeRequest(.apple, payload: payload, tags: tags, test: test, now: now)
        case .fcmv1:
            let payload: [String: Any] = [
                "message": [
                    "notification": ["title": content.category.rawValue, "body": properties["messageParam"] ?? content.title],
                    "data": ["id": content.id, "url": content.url, "category": content.category.rawValue, "source": content.source],
                ] as [String: Any],
            ]
            return try client.nativeRequest(.fcmv1, payload: payload, tags: tags, test: test, now: now)
        }
    }

    /// Sends requests at once, one thread each (at most `hub.concurrency` are passed in), over
    /// the client's pool of kept-alive connections; outcomes in the same order.
    static func sendAll(_ requests: [HubRequest], client: NotificationHubClient) -> [SendOutcome] {
        if requests.count == 1 { return [client.send(requests[0])] }
        final class Outcomes: @unchecked Sendable {
            let lock = NSLock()
            var values: [SendOutcome?]
            init(count: Int) { values = Array(repeating: nil, count: count) }
        }
        let outcomes = Outcomes(count: requests.count)
        let group = DispatchGroup()
        for (index, request) in requests.enumerated() {
            group.enter()
            let thread = Thread {
                let outcome = client.send(request)
                outcomes.lock.lock()
                outcomes.values[index] = outcome
                outcomes.lock.unlock()
                group.leave()
            }
            thread.start()
        }
        group.wait()
        return outcomes.values.map { $0 ?? .notAccepted(status: nil, reason: "not sent") }
    }
}
