import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Platforms newspush can address natively (without a registered template).
public enum NativeFormat: String, Sendable, CaseIterable {
    case apple
    case fcmv1

    /// The push services' own payload limit (APNs and FCM both take 4 KB).
    public var payloadLimit: Int { 4096 }
}

extension NotificationHubClient {
    /// A native send: `payload` is the platform's own JSON (an APNs payload, or an FCM v1
    /// `{"message":{…}}`), delivered to native registrations of that platform matching `tags`.
    /// `headers` carries the platform's own fields (`apns-priority`, `apns-expiration`,
    /// `apns-collapse-id`…); an apple send gets `apns-push-type: alert` and `apns-priority: 10`
    /// unless they are given.
    public func nativeRequest(
        _ format: NativeFormat, payload: [String: Any], tags: String?,
        headers extra: [(name: String, value: String)] = [],
        test: Bool = false, now: Date = Date()
    ) throws(HubError) -> HubRequest {
        if let tags { try TagExpression.validate(tags) }
        guard JSONSerialization.isValidJSONObject(payload),
            let body = try? JSONSerialization.data(
                withJSONObject: payload, options: [.sortedKeys, .withoutEscapingSlashes])
        else {
            throw .invalidPayload("the \(format.rawValue) payload is not a JSON object")
        }
        if format == .fcmv1, !(payload["message"] is [String: Any]) {
            throw .invalidPayload("an fcmv1 payload must be a complete FCM v1 message {\"message\":{…}}")
        }
        let limit = min(maxPayloadBytes, format.payloadLimit)
        if body.count > limit {
            let largest = Self.largestText(payload).map { "the field '\($0.path)' (\($0.bytes) bytes)" }
            throw .payloadTooLarge(bytes: body.count, limit: limit, largest: largest)
        }
        var headers: [(name: String, value: String)] = [
            ("Authorization", authorization(now: now)),
            ("Content-Type", "application/json;charset=utf-8"),
            ("ServiceBusNotification-Format", format.rawValue),
        ]
        if let tags { headers.append(("ServiceBusNotification-Tags", tags)) }
        for (name, value) in extra where name.lowercased().hasPrefix("apns-") == false || format == .apple {
            headers.append((name, value))
        }
        if format == .apple {
            if !extra.contains(where: { $0.name.lowercased() == "apns-push-type" }) {
                headers.append(("apns-push-type", "alert"))
            }
            if !extra.contains(where: { $0.name.lowercased() == "apns-priority" }) {
                headers.append(("apns-priority", "10"))
            }
        }
        headers.append(("x-ms-version", apiVersion))
        return HubRequest(method: "POST", url: messagesURL(test: test), headers: headers, body: body)
    }
}

extension NotificationHubClient {
    /// A native WNS toast send: `xml` is the toast, delivered to native wns registrations
    /// matching `tags` (`X-WNS-Type: wns/toast`).
    public func windowsToastRequest(xml: String, tags: String?, test: Bool = false, now: Date = Date())
        throws(HubError) -> HubRequest
    {
        if let tags { try TagExpression.validate(tags) }
        let body = Data(xml.utf8)
        let limit = min(maxPayloadBytes, 5000)  // WNS takes 5 KB
        if body.count > limit { throw .payloadTooLarge(bytes: body.count, limit: limit, largest: nil) }
        var headers: [(name: String, value: String)] = [
            ("Authorization", authorization(now: now)), ("Content-Type", "application/xml;charset=utf-8"),
            ("ServiceBusNotification-Format", "windows"), ("X-WNS-Type", "wns/toast"),
        ]
        if let tags { headers.append(("ServiceBusNotification-Tags", tags)) }
        headers.append(("x-ms-version", apiVersion))
        return HubRequest(method: "POST", url: messagesURL(test: test), headers: headers, body: body)
    }

    /// A WNS raw notification (`X-WNS-Type: wns/raw`): `body` handed to the app as it is,
    /// nothing shown (WNS takes 5 KB).
    public func windowsRawRequest(body: String, tags: String?, test: Bool = false, now: Date = Date())
        throws(HubError) -> HubRequest
    {
        if let tags { try TagExpression.validate(tags) }
        let data = Data(body.utf8)
        let limit = min(maxPayloadBytes, 5000)
        if data.count > limit { throw .payloadTooLarge(bytes: data.count, limit: limit, largest: nil) }
        var headers: [(name: String, value: String)] = [
            ("Authorization", authorization(now: now)), ("Content-Type", "application/octet-stream"),
            ("ServiceBusNotification-Format", "windows"), ("X-WNS-Type", "wns/raw"),
        ]
        if let tags { headers.append(("ServiceBusNotification-Tags", tags)) }
        headers.append(("x-ms-version", apiVersion))
        return HubRequest(method: "POST", url: messagesURL(test: test), headers: headers, body: data)
    }

    /// The toast `ToastText01` with `text`, escaped.
    public static func toast(_ text: String) -> String {
        #"<toast><visual><binding template="ToastText01"><text id="1">"# + MarkupText.escaped(text)
            + "</text></binding></visual></toast>"
    }
}

/// What the hub says about each device reached by a test send (`&test`).
public struct TestSendOutcome: Sendable, Equatable {
    /// One device's outcome of a test send.
    public struct Registration: Sendable, Equatable {
        /// The device's platform.
        public var platform: String
        /// The push service's handle of the device.
        public var pnsHandle: String
        /// The hub's registration id.
        public var registrationId: String
        /// What the push service said.
        public var outcome: String
    }

    /// How many devices the send reached.
    public var success: Int
    /// How many it did not.
    public var failure: Int
    /// Each device's outcome (at most 10).
    public var results: [Registration]

    /// Parses the `NotificationOutcome` XML of a test send's answer.
    public init?(xml: Data) {
        guard let outcome = XMLAnswer.parse(xml)?.all("NotificationOutcome").first else { return nil }
        success = outcome.value("Success").flatMap { Int($0) } ?? 0
        failure = outcome.value("Failure").flatMap { Int($0) } ?? 0
        results = outcome.all("RegistrationResult").map { result in
            Registration(
                platform: result.value("ApplicationPlatform") ?? "", pnsHandle: result.value("PnsHandle") ?? "",
                registrationId: result.value("RegistrationId") ?? "", outcome: result.value("Outcome") ?? "")
        }
    }
}

extension NotificationHubClient {
    /// The same send, scheduled by the hub for `time` (Standard tier; at most 7 days ahead):
    /// `POST {hub}/schedulednotifications` with `ServiceBusNotification-ScheduleTime` in UTC.
    /// The id in the answer's `Location` names the scheduled notification.
    public func scheduled(_ request: HubRequest, at time: Date) -> HubRequest {
        var scheduled = request
        scheduled.url = "\(baseURL)\(hubName)/schedulednotifications?api-version=\(apiVersion)"
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        scheduled.headers.append(("ServiceBusNotification-ScheduleTime", formatter.string(from: time)))
        return scheduled
    }

    /// Cancels a scheduled notification: `DELETE {hub}/schedulednotifications/{id}` (200).
    public func cancelScheduledRequest(id: String, now: Date = Date()) -> HubRequest {
        HubRequest(
            method: "DELETE",
            url: "\(baseURL)\(hubName)/schedulednotifications/\(Self.pathSegment(id))?api-version=\(apiVersion)",
            headers: [("Authorization", authorization(now: now)), ("x-ms-version", apiVersion)], body: Data())
    }

    /// Whether a 404's detail says the hub is missing rather than the resource in it: the
    /// service's own words for a path that names no hub ("No service is hosted at the specified
    /// address", also seen quoted inside "The messaging entity '…' could not be found"), or a
    /// detail that names the hub and no notification.
    static func namesMissingHub(_ detail: String) -> Bool {
        let lower = detail.lowercased()
        if lower.contains("no service is hosted at the specified address") { return true }
        return lower.contains("hub") && !lower.contains("notification")
    }

    /// Cancels scheduled notification `id` at the hub and says what came back.
    public func cancelScheduled(id: String) -> CancelOutcome {
        switch perform(cancelScheduledRequest(id: id)) {
        case .failure(.notSent(let why)), .failure(.outcomeUnknown(let why)):
            return .unreachable(why)
        case .success(let response):
            switch response.status {
            case 200: return .cancelled
            case 404 where Self.namesMissingHub(Self.errorDetail(response)): return .hubNotFound
            case 404: return .notFound
            case 403: return .notAllowed
            default: return .failed(status: response.status)
            }
        }
    }

    /// Per-message telemetry (Standard tier): `GET {hub}/messages/{id}?api-version=2016-07`.
    public func telemetryRequest(id: String, now: Date = Date()) -> HubRequest {
        HubRequest(
            method: "GET", url: "\(baseURL)\(hubName)/messages/\(Self.pathSegment(id))?api-version=2016-07",
            headers: [("Authorization", authorization(now: now)), ("x-ms-version", "2016-07")], body: Data())
    }

    /// How long the service may answer 404 for a notification it has not processed yet.
    public static let telemetryWindow: Double = 30 * 60

    /// When the hub took notification `id`, from the time its id carries (`NH-20221214202418813-…`,
    /// or the older `…-20181107001833-…`, UTC); nil for an id without one.
    public static func sentAt(notificationId id: String) -> Date? {
        let digits = id.split(separator: "-").first { part in
            (part.count == 17 || part.count == 14) && part.allSatisfy { $0.isASCII && $0.isNumber }
        }
        guard let digits else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = digits.count == 17 ? "yyyyMMddHHmmssSSS" : "yyyyMMddHHmmss"
        return formatter.date(from: String(digits))
    }

    /// Asks for the telemetry of notification `id` and says what came back. A 404 for a
    /// notification sent (by its id's time, else `sentAt`) within the last 30 minutes is
    /// `notProcessedYet`: the service answers so until it has processed it.
    public func telemetry(id: String, sentAt known: Date? = nil, now: Date = Date()) -> TelemetryOutcome {
        switch perform(telemetryRequest(id: id)) {
        case .failure(.notSent(let why)), .failure(.outcomeUnknown(let why)):
            return .unreachable("could not reach the hub at \(baseURL): \(why)")
        case .success(let response):
            switch response.status {
            case 200:
                guard let details = NotificationDetails(xml: response.body) else {
                    return .failed(status: 200, reason: "the hub's answer is not NotificationDetails XML")
                }
                return .details(details)
            case 403:
                return .failed(
                    status: 403,
                    reason:
                        "per-message telemetry needs the Standard tier (or the policy '\(connection.keyName)' lacks "
                        + "the right): the hub answered 403"
                )
            case 404:
                if let sent = known ?? Self.sentAt(notificationId: id),
                    now.timeIntervalSince(sent) < Self.telemetryWindow
                {
                    return .notProcessedYet(sentAt: sent)
                }
                return .failed(
                    status: 404,
                    reason: "the hub knows no notification '\(id)' (ids come from the Location of a Standard-tier send)"
                )
            case 401:
                return .failed(
                    status: 401, reason: "hub rejected the token (401): check the connection string's key and the clock"
                )
            default:
                return .failed(status: response.status, reason: "unexpected hub answer \(response.status)")
            }
        }
    }

    /// An id made safe as one path segment.
    /// `id` as one path segment: every byte but the unreserved ones escaped, and a segment of
    /// dots alone (`.`, `..`) escaped too, so no client or proxy takes it for a dot segment and
    /// sends the request to the hub's own path (RFC 3986 §5.2.4) instead.
    static func pathSegment(_ id: String) -> String {
        if !id.isEmpty && id.allSatisfy({ $0 == "." }) { return String(repeating: "%2E", count: id.count) }
        return id.addingPercentEncoding(withAllowedCharacters: unreserved) ?? id
    }

    /// RFC 3986's unreserved characters (built once: a `CharacterSet` is costly to make).
    private static let unreserved = CharacterSet(
        charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~")
}

/// What a request to cancel a scheduled send came to.
public enum CancelOutcome: Sendable, Equatable {
    /// The hub cancelled it (200).
    case cancelled
    /// The hub has no scheduled send of this id (404): already delivered, cancelled, or never
    /// one of this hub's.
    case notFound
    /// The hub itself is not there (a 404 whose detail names the hub, not the notification).
    case hubNotFound
    /// Scheduled sends need the Standard tier, or the policy lacks the right (403).
    case notAllowed
    /// Another answer.
    case failed(status: Int)
    /// The hub could not be reached; nothing was cancelled.
    case unreachable(String)
}

extension CancelOutcome: CustomStringConvertible {
    /// What the hub's answer means, in a few words.
    public var description: String {
        switch self {
        case .cancelled: return "cancelled"
        case .notFound: return "the hub has no such scheduled send (already delivered, or cancelled)"
        case .hubNotFound: return "the hub is not found (404): check hub.name and the connection string's Endpoint"
        case .notAllowed: return "scheduled sends need the Standard tier (403)"
        case .failed(let status): return "the hub answered \(status)"
        case .unreachable(let why): return "could not reach the hub: \(why)"
        }
    }
}

/// What a telemetry request came to.
public enum TelemetryOutcome: Sendable, Equatable {
    case details(NotificationDetails)
    /// 404 within 30 minutes of the send: the service has not processed it yet (ask again in 10 s).
    case notProcessedYet(sentAt: Date)
    case failed(status: Int, reason: String)
    case unreachable(String)
}

/// The hub's per-message telemetry (`NotificationDetails`): state, times, and how many devices
/// of each platform each outcome reached.
public struct NotificationDetails: Sendable, Equatable, Codable {
    /// The notification's id.
    public var notificationId: String?
    /// Enqueued, Processing, Completed, Abandoned…
    public var state: String?
    /// When the hub took it.
    public var enqueueTime: String?
    /// When delivery started.
    public var startTime: String?
    /// When delivery ended.
    public var endTime: String?
    /// The platforms it was sent for.
    public var targetPlatforms: String?
    /// Platform (`Apns`, `FcmV1`, `Wns`, …) → outcome name (`Success`, …) → count.
    public var outcomeCounts: [String: [String: Int]]

    enum CodingKeys: String, CodingKey {
        case state, notificationId = "notification_id", enqueueTime = "enqueue_time", startTime = "start_time",
            endTime = "end_time"
        case targetPlatforms = "target_platforms", outcomeCounts = "outcome_counts"
    }

    /// Telemetry with these values.
    public init(
        notificationId: String?, state: String?, enqueueTime: String?, startTime: String?, endTime: String?,
        targetPlatforms: String?, outcomeCounts: [String: [String: Int]]
    ) {
        self.notificationId = notificationId
        self.state = state
        self.enqueueTime = enqueueTime
        self.startTime = startTime
        self.endTime = endTime
        self.targetPlatforms = targetPlatforms
        self.outcomeCounts = outcomeCounts
    }

    /// Parses the XML body of a telemetry answer.
    public init?(xml: Data) {
        guard let details = XMLAnswer.parse(xml)?.all("NotificationDetails").first else { return nil }
        // The fields are the details' own, outside the per-platform outcome counts.
        let own = details.children.filter { !$0.name.hasSuffix("OutcomeCounts") }
        func field(_ name: String) -> String? { own.first { $0.name == name }?.text }
        notificationId = field("NotificationId")
        state = field("State")
        enqueueTime = field("EnqueueTime")
        startTime = field("StartTime")
        endTime = field("EndTime")
        targetPlatforms = field("TargetPlatforms")
        var counts: [String: [String: Int]] = [:]
        for platform in details.children where platform.name.hasSuffix("OutcomeCounts") {
            let name = String(platform.name.dropLast("OutcomeCounts".count))
            for outcome in platform.all("Outcome") {
                guard let outcomeName = outcome.value("Name") else { continue }
                counts[name, default: [:]][outcomeName] = outcome.value("Count").flatMap { Int($0) } ?? 0
            }
        }
        outcomeCounts = counts
    }
}

extension NotificationHubClient {
    /// The longest text in a native payload and where it is (`message.notification.body`), so an
    /// oversized push names what to shorten.
    static func largestText(_ value: Any, path: String = "") -> (path: String, bytes: Int)? {
        if let text = value as? String { return (path, text.utf8.count) }
        let children: [(String, Any)]
        if let object = value as? [String: Any] {
            children = object.map { (path.isEmpty ? $0.key : "\(path).\($0.key)", $0.value) }
        } else if let array = value as? [Any] {
            children = array.enumerated().map { ("\(path)[\($0.offset)]", $0.element) }
        } else {
            return nil
        }
        return children.compactMap { largestText($0.1, path: $0.0) }.max { $0.bytes < $1.bytes }
    }
}
