import Foundation
import NotificationHubs

/// One device a send reaches, with what it would show and how its push service would treat it.
struct SendTarget: Sendable {
    var device: VirtualDevice
    /// The rendered body (the registration's template with the send's properties, or the
    /// native payload).
    var payload: String
    /// The push-service headers of the delivery: the registration's rendered `apns-*` headers
    /// for a template send, the request's own for a native one.
    var headers: [String: String]
    /// After this the push service drops it instead of delivering it.
    var expiry: Date?

    /// The collapse id the push service gets: `apns-collapse-id` for APNs, an FCM v1 message's
    /// `android.collapse_key` (in the body, templated or native).
    var collapseId: String? {
        if device.platform == .fcmv1 {
            let message =
                (try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])?["message"]
                as? [String: Any]
            let key = (message?["android"] as? [String: Any])?["collapse_key"] as? String
            return key?.isEmpty == false ? key : nil
        }
        return headers["apns-collapse-id"]
    }
}

/// The service's answer to a request it refuses.
struct EmulatorRefusal: Error {
    var response: EmulatorResponse
}

/// A send request worked out: its format and the devices it reaches, or why the service
/// would refuse it.
struct PreparedSend: Sendable {
    var format: String
    var targets: [SendTarget]
    var tags: String?
    var body: String
}

extension DeviceRegistry {
    /// What a send request (`POST …/messages` or `…/schedulednotifications`) delivers, checked
    /// as the service checks it; the error is the service's answer.
    func prepare(_ request: EmulatorRequest, trackingId: String) -> Result<PreparedSend, EmulatorRefusal> {
        if request.query["direct"] != nil {
            return .failure(
                EmulatorRefusal(response: .xmlError(400, "Direct sends are not emulated", trackingId: trackingId)))
        }
        if request.body.count > 64 * 1024 {
            return .failure(
                EmulatorRefusal(
                    response: .xmlError(413, "The message size cannot be over 64 KB", trackingId: trackingId)))
        }
        let format = (request.headers["servicebusnotification-format"] ?? "template").lowercased()
        if format != "template", let credentials, !credentials.contains(format) {
            // The service's words for a format whose credential the hub lacks (Fixtures/hub-answers).
            return .failure(
                EmulatorRefusal(
                    response: .xmlError(
                        400,
                        "The notification has no target applications. The notification format is \(format). Review "
                            + "the credentials specified in the notification hub description and the notification "
                            + "format.", trackingId: trackingId)))
        }
        let tags = request.headers["servicebusnotification-tags"]
        var predicate: TagPredicate?
        if let tags {
            do { predicate = try TagPredicate(parsing: tags) } catch {
                return .failure(EmulatorRefusal(response: .xmlError(400, "\(error)", trackingId: trackingId)))
            }
        }
        let matching = devices.filter { device in
            guard let predicate else { return true }
            return predicate.matches(Set(device.tags))
                && (device.templateTags.map { predicate.matches(Set($0)) } ?? true)
        }
        let body = String(decoding: request.body, as: UTF8.self)
        let targets: [SendTarget]
        switch format == "template"
            ? templateTargets(request, matching: matching, trackingId: trackingId)
            : nativeTargets(request, format: format, matching: matching, body: body, trackingId: trackingId)
        {
        case .failure(let refusal): return .failure(refusal)
        case .success(let found): targets = found
        }
        // The test flag limits a send to 10 registrations.
        let limited =
            request.query["test"].map({ $0.lowercased() != "false" }) ?? false ? Array(targets.prefix(10)) : targets
        return .success(PreparedSend(format: format, targets: limited, tags: tags, body: body))
    }

    /// A template send's deliveries: each matching template registration, rendered with the
    /// send's properties (a flat JSON object of strings, as the service requires).
    private func templateTargets(_ request: EmulatorRequest, matching: [VirtualDevice], trackingId: String)
        -> Result<[SendTarget], EmulatorRefusal>
    {
        var targets: [SendTarget] = []
        guard (request.headers["content-type"] ?? "").lowercased().hasPrefix("application/json") else {
            return .failure(
                EmulatorRefusal(
                    response: .xmlError(
                        400, "Content-Type must be application/json for template notifications",
                        trackingId: trackingId)))
        }
        guard let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
            object.values.allSatisfy({ $0 is String })
        else {
            return .failure(
                EmulatorRefusal(
                    response: .xmlError(
                        400, "The template notification body must be a flat JSON object of string properties",
                        trackingId: trackingId)))
        }
        let properties = object.compactMapValues { $0 as? String }
        if let bad = properties.keys.first(where: { !NotificationHubClient.isValidPropertyName($0) }) {
            return .failure(
                EmulatorRefusal(response: .xmlError(400, "Invalid property name '\(bad)'", trackingId: trackingId)))
        }
        for device in matching {
            guard let template = device.template else { continue }  // native registrations skip template sends
            // An FCM v1 template that is not a whole v1 message renders nothing the service can send:
            // neither a success nor a failure (hub-api.md §4, dotnet#313).
            if device.platform == .fcmv1, !Self.isFCMv1Message(template) { continue }
            targets.append(Self.templateTarget(device, template: template, properties: properties))
        }
        return .success(targets)
    }

    /// A native send's deliveries: each matching native registration of the format's platform
    /// gets the body as it is.
    private func nativeTargets(
        _ request: EmulatorRequest, format: String, matching: [VirtualDevice], body: String, trackingId: String
    ) -> Result<[SendTarget], EmulatorRefusal> {
        var targets: [SendTarget] = []
        guard let platform = VirtualDevice.Platform(rawValue: format) else {
            return .failure(
                EmulatorRefusal(
                    response: .xmlError(
                        400, "The notification format '\(format)' is not supported by this emulator",
                        trackingId: trackingId)))
        }
        var object: [String: Any] = [:]
        if platform != .windows {
            guard let parsed = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any] else {
                return .failure(
                    EmulatorRefusal(
                        response: .xmlError(
                            400, "The \(format) notification body must be a JSON object", trackingId: trackingId)))
            }
            if platform == .fcmv1, !(parsed["message"] is [String: Any]) {
                return .failure(
                    EmulatorRefusal(
                        response: .xmlError(
                            400, "An fcmv1 notification must be a complete FCM v1 message: {\"message\":{…}}",
                            trackingId: trackingId)))
            }
            object = parsed
        }
        let headers = Self.nativeHeaders(request.headers, object: object, platform: platform)
        let expiry = headers["apns-expiration"].flatMap(Double.init).flatMap {
            $0 > 0 ? Date(timeIntervalSince1970: $0) : nil
        }
        for device in matching where device.platform == platform && device.template == nil {
            targets.append(SendTarget(device: device, payload: body, headers: headers, expiry: expiry))
        }
        return .success(targets)
    }

    /// A template registration's delivery: its body, its `apns-*` headers and its `Expiry`, each
    /// rendered with the send's properties (an Apple template registration's headers and expiry
    /// may be expressions such as `$(collapseId)`).
    static func templateTarget(_ device: VirtualDevice, template: String, properties: [String: String]) -> SendTarget {
        let payload =
            device.platform == .windows
            ? TemplateRenderer.renderXML(template, properties: properties)
            : (try? TemplateRenderer.renderJSON(template, properties: properties)) ?? template
        var headers: [String: String] = [:]
        for (name, expression) in device.headers {
            let value = TemplateRenderer.evaluateText(expression, properties.lowercasedKeys)
            if !value.isEmpty { headers[name] = value }
        }
        let expiry = device.expiry.map { TemplateRenderer.evaluateText($0, properties.lowercasedKeys) }.flatMap(
            Self.date)
        return SendTarget(device: device, payload: payload, headers: headers, expiry: expiry)
    }

    /// The push-service headers of a native send: the request's `apns-*` headers (APNs), its
    /// `x-wns-*` headers (WNS: a toast or a raw notification).
    static func nativeHeaders(
        _ requestHeaders: [String: String], object: [String: Any], platform: VirtualDevice.Platform
    ) -> [String: String] {
        switch platform {
        case .apple: return requestHeaders.filter { $0.key.hasPrefix("apns-") }
        case .windows: return requestHeaders.filter { $0.key.hasPrefix("x-wns-") }
        default: return [:]
        }
    }

    /// An `Expiry` value: a W3C date-time, or `0` (none).
    static func date(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty || trimmed == "0" { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: trimmed) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: trimmed)
    }
}

extension Dictionary where Key == String, Value == String {
    /// Property names are case-insensitive in template expressions.
    var lowercasedKeys: [String: String] {
        Dictionary(map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
    }
}

extension DeviceRegistry {
    /// Whether an FCM v1 template is a complete message document (`{"message":{…}}`).
    static func isFCMv1Message(_ template: String) -> Bool {
        guard let rendered = try? TemplateRenderer.renderJSON(template, properties: [:]),
            let object = try? JSONSerialization.jsonObject(with: Data(rendered.utf8)) as? [String: Any]
        else { return false }
        return object["message"] is [String: Any]
    }
}
