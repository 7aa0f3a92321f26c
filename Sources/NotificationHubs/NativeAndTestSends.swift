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
    public func nativeRequest(_ format: NativeFormat, payload: [String: Any], tags: String?, test: Bool = false,
                              now: Date = Date()) throws(HubError) -> HubRequest {
        if let tags { try TagExpression.validate(tags) }
        guard JSONSerialization.isValidJSONObject(payload),
              let body = try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            throw .invalidPayload("the \(format.rawValue) payload is not a JSON object")
        }
        if format == .fcmv1, !(payload["message"] is [String: Any]) {
            throw .invalidPayload("an fcmv1 payload must be a complete FCM v1 message {\"message\":{…}}")
        }
        let limit = min(maxPayloadBytes, format.payloadLimit)
        if body.count > limit { throw .payloadTooLarge(bytes: body.count, limit: limit) }
        var headers: [(name: String, value: String)] = [
            ("Authorization", authorization(now: now)),
            ("Content-Type", "application/json;charset=utf-8"),
            ("ServiceBusNotification-Format", format.rawValue),
        ]
        if let tags { headers.append(("ServiceBusNotification-Tags", tags)) }
        if format == .apple {
            headers.append(("apns-push-type", "alert"))
            headers.append(("apns-priority", "10"))
        }
        headers.append(("x-ms-version", apiVersion))
        return HubRequest(method: "POST", url: messagesURL(test: test), headers: headers, body: body)
    }
}

/// What the hub says about each device reached by a test send (`&test`).
public struct TestSendOutcome: Sendable, Equatable {
    public struct Registration: Sendable, Equatable {
        public var platform: String
        public var pnsHandle: String
        public var registrationId: String
        public var outcome: String
    }

    public var success: Int
    public var failure: Int
    public var results: [Registration]

    /// Parses the `NotificationOutcome` XML of a test send's answer.
    public init?(xml: Data) {
        let delegate = OutcomeParser()
        let parser = XMLParser(data: xml)
        parser.delegate = delegate
        guard parser.parse(), delegate.sawOutcome else { return nil }
        success = delegate.success
        failure = delegate.failure
        results = delegate.results
    }

    private final class OutcomeParser: NSObject, XMLParserDelegate {
        var sawOutcome = false
        var success = 0
        var failure = 0
        var results: [Registration] = []
        private var current: Registration?
        private var text = ""

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            text = ""
            if name == "NotificationOutcome" { sawOutcome = true }
            if name == "RegistrationResult" { current = Registration(platform: "", pnsHandle: "", registrationId: "", outcome: "") }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
            switch name {
            case "Success": success = Int(value) ?? 0
            case "Failure": failure = Int(value) ?? 0
            case "ApplicationPlatform": current?.platform = value
            case "PnsHandle": current?.pnsHandle = value
            case "RegistrationId": current?.registrationId = value
            case "Outcome": current?.outcome = value
            case "RegistrationResult":
                if let current { results.append(current) }
                current = nil
            default: break
            }
            text = ""
        }
    }
}
