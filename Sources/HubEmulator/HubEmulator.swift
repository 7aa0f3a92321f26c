import Crypto
import Foundation
import NotificationHubs

/// One notification handed to one virtual device: a line of the delivery log.
public struct Delivery: Codable, Sendable, Equatable {
    public var device: String
    public var platform: String
    public var tags: [String]
    public var payload: String
    public var notificationId: String

    enum CodingKeys: String, CodingKey {
        case device, platform, tags, payload
        case notificationId = "notification_id"
    }
}

/// A fault the emulator injects into the next `count` send requests (default 1).
public struct Fault: Codable, Sendable, Equatable {
    /// Answer with this status (and an error body) instead of handling the send.
    public var status: Int?
    /// `Retry-After` header value to add.
    public var retryAfter: String?
    /// Wait this long before handling the request, so a client that times out first finds it
    /// not delivered; with `delayAfterDelivery`, deliver first and then wait (a hub that
    /// accepted the send but answers too late).
    public var delaySeconds: Double?
    public var delayAfterDelivery: Bool?
    /// Close the connection without answering (after delivering, as a hub that took the send
    /// and then lost the connection).
    public var drop: Bool?
    public var count: Int

    public init(status: Int? = nil, retryAfter: String? = nil, delaySeconds: Double? = nil, delayAfterDelivery: Bool? = nil,
                drop: Bool? = nil, count: Int = 1) {
        self.status = status
        self.retryAfter = retryAfter
        self.delaySeconds = delaySeconds
        self.delayAfterDelivery = delayAfterDelivery
        self.drop = drop
        self.count = count
    }

    enum CodingKeys: String, CodingKey {
        case status, drop, count
        case retryAfter = "retry_after"
        case delaySeconds = "delay_seconds"
        case delayAfterDelivery = "delay_after_delivery"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decodeIfPresent(Int.self, forKey: .status)
        retryAfter = try c.decodeIfPresent(String.self, forKey: .retryAfter)
        delaySeconds = try c.decodeIfPresent(Double.self, forKey: .delaySeconds)
        delayAfterDelivery = try c.decodeIfPresent(Bool.self, forKey: .delayAfterDelivery)
        drop = try c.decodeIfPresent(Bool.self, forKey: .drop)
        count = try c.decodeIfPresent(Int.self, forKey: .count) ?? 1
        if count < 1 { throw DecodingError.dataCorruptedError(forKey: .count, in: c, debugDescription: "count must be 1 or more") }
    }
}

/// A request as the emulator sees it, independent of the HTTP server.
public struct EmulatorRequest: Sendable {
    public var method: String
    public var path: String
    public var query: [String: String]
    public var headers: [String: String]
    public var body: Data

    public init(method: String, path: String, query: [String: String], headers: [String: String], body: Data) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.body = body
    }

    /// Splits `/path?a=1&test` into path and query items.
    public static func splitURI(_ uri: String) -> (String, [String: String]) {
        let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for item in parts[1].split(separator: "&") {
                let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[String(pair[0]).removingPercentEncoding ?? String(pair[0])] =
                    pair.count == 2 ? (String(pair[1]).removingPercentEncoding ?? String(pair[1])) : ""
            }
        }
        return (String(parts[0]), query)
    }
}

/// What the emulator answers.
public struct EmulatorResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Data
    /// Close the connection instead of answering.
    public var drop = false
    /// Seconds to wait before answering (the send, if any, is already delivered).
    public var delay: Double = 0

    static func xmlError(_ status: Int, _ detail: String, trackingId: String) -> EmulatorResponse {
        let body = "<Error><Code>\(status)</Code><Detail>\(detail).TrackingId:\(trackingId),TimeStamp:\(ErrorTimestamp.now())</Detail></Error>"
        return EmulatorResponse(status: status, headers: [("Content-Type", "application/xml; charset=utf-8"), ("TrackingId", trackingId)],
                                body: Data(body.utf8))
    }
}

/// The `TimeStamp` the service writes into error details (only error answers need it).
enum ErrorTimestamp {
    static func now() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "M/d/yyyy h:mm:ss a"
        return formatter.string(from: Date())
    }
}

/// The emulated hub: verifies SAS tokens like the service, routes sends by tag expression to
/// virtual devices, renders templates, logs deliveries and injects faults on request.
public actor HubEmulator {
    public let connection: HubConnectionString
    public let registry: DeviceRegistry
    private var faults: [Fault] = []
    private var deliveries: [Delivery] = []
    private var sendCount = 0
    private let log: FileHandle?
    private let encoder: JSONEncoder
    /// The time part of notification ids, made once rather than per send.
    private let idTimeFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmssSSS"
        return formatter
    }()

    /// `logPath`: JSON Lines file that every delivery is appended to.
    public init(connection: HubConnectionString, registry: DeviceRegistry, logPath: String?) throws {
        self.connection = connection
        self.registry = registry
        if let logPath {
            if !FileManager.default.fileExists(atPath: logPath) {
                FileManager.default.createFile(atPath: logPath, contents: nil)
            }
            guard let handle = FileHandle(forWritingAtPath: logPath) else {
                throw DeviceRegistry.LoadError(description: "\(logPath): cannot open the delivery log for writing")
            }
            handle.seekToEndOfFile()
            log = handle
        } else {
            log = nil
        }
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    /// Every delivery so far.
    public func allDeliveries() -> [Delivery] { deliveries }

    /// Queues a fault for the next send requests.
    public func inject(_ fault: Fault) { faults.append(fault) }

    public func clearFaults() { faults.removeAll() }

    /// Takes the fault for the next send request, if one is queued (control requests take none).
    public func nextFault(for request: EmulatorRequest) -> Fault? {
        request.path.hasPrefix("/_emulator/") ? nil : nextFault()
    }

    private func nextFault() -> Fault? {
        guard !faults.isEmpty else { return nil }
        let fault = faults[0]
        faults[0].count -= 1
        if faults[0].count <= 0 { faults.removeFirst() }
        return fault
    }

    /// Handles one HTTP request, with the fault taken for it (a delay before delivery has
    /// already been waited by the server).
    public func handle(_ request: EmulatorRequest, fault: Fault? = nil, now: Date = Date()) -> EmulatorResponse {
        let trackingId = request.headers["trackingid"] ?? UUID().uuidString.lowercased()
        // Control endpoints for tests and demos.
        if request.path.hasPrefix("/_emulator/") { return control(request) }
        guard let fault else { return handleSend(request, trackingId: trackingId, now: now) }
        var response: EmulatorResponse
        if let status = fault.status {
            response = .xmlError(status, "Injected fault \(status)", trackingId: trackingId)
        } else {
            response = handleSend(request, trackingId: trackingId, now: now)
        }
        if let retryAfter = fault.retryAfter { response.headers.append(("Retry-After", retryAfter)) }
        if fault.delayAfterDelivery == true { response.delay = fault.delaySeconds ?? 0 }
        response.drop = fault.drop ?? false
        return response
    }

    private func control(_ request: EmulatorRequest) -> EmulatorResponse {
        switch (request.method, request.path) {
        case ("POST", "/_emulator/faults"):
            guard let fault = try? JSONDecoder().decode(Fault.self, from: request.body) else {
                return EmulatorResponse(status: 400, headers: [], body: Data("expected {\"status\":503,\"count\":1,\"retry_after\":\"1\",\"delay_seconds\":0.5,\"drop\":true}".utf8))
            }
            faults.append(fault)
            return EmulatorResponse(status: 204, headers: [], body: Data())
        case ("DELETE", "/_emulator/faults"):
            faults.removeAll()
            return EmulatorResponse(status: 204, headers: [], body: Data())
        case ("GET", "/_emulator/deliveries"):
            let data = (try? encoder.encode(deliveries)) ?? Data("[]".utf8)
            return EmulatorResponse(status: 200, headers: [("Content-Type", "application/json")], body: data)
        case ("GET", "/_emulator/health"):
            return EmulatorResponse(status: 200, headers: [], body: Data("ok".utf8))
        default:
            return EmulatorResponse(status: 404, headers: [], body: Data())
        }
    }

    private func handleSend(_ request: EmulatorRequest, trackingId: String, now: Date) -> EmulatorResponse {
        // /{hub}/messages or /{hub}/messages/
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard request.method == "POST", segments.count == 2, segments[1] == "messages" else {
            return .xmlError(404, "The requested resource \(request.path) was not found", trackingId: trackingId)
        }
        let hub = segments[0]
        // Authentication, as the service: token present, signature, expiry, audience.
        if let failure = verifyToken(request.headers["authorization"], hub: hub, now: now, trackingId: trackingId) {
            return failure
        }
        if let expected = registry.hub, expected.lowercased() != hub.lowercased() {
            return .xmlError(404, "No hub named '\(hub)' in this namespace", trackingId: trackingId)
        }
        if request.query["direct"] != nil {
            return .xmlError(400, "Direct sends are not emulated", trackingId: trackingId)
        }
        if request.body.count > 64 * 1024 {
            return .xmlError(413, "The message size cannot be over 64 KB", trackingId: trackingId)
        }
        let format = (request.headers["servicebusnotification-format"] ?? "template").lowercased()
        let contentType = (request.headers["content-type"] ?? "").lowercased()
        var predicate: TagPredicate?
        if let tags = request.headers["servicebusnotification-tags"] {
            do {
                predicate = try TagPredicate(parsing: tags)
            } catch {
                return .xmlError(400, "\(error)", trackingId: trackingId)
            }
        }
        let matching = registry.devices.filter { predicate?.matches(Set($0.tags)) ?? true }
        let isTest = request.query["test"].map { $0.lowercased() != "false" } ?? false
        let notificationId = "NH-\(idTimeFormatter.string(from: now))-\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())-\(String(format: "%02d", (sendCount % 99) + 1))"
        sendCount += 1

        var targets: [(VirtualDevice, String)] = []
        switch format {
        case "template":
            guard contentType.hasPrefix("application/json") else {
                return .xmlError(400, "Content-Type must be application/json for template notifications", trackingId: trackingId)
            }
            guard let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
                  object.values.allSatisfy({ $0 is String }) else {
                return .xmlError(400, "The template notification body must be a flat JSON object of string properties", trackingId: trackingId)
            }
            let properties = object.compactMapValues { $0 as? String }
            if let bad = properties.keys.first(where: { !NotificationHubClient.isValidPropertyName($0) }) {
                return .xmlError(400, "Invalid property name '\(bad)'", trackingId: trackingId)
            }
            for device in matching {
                guard let template = device.template else { continue }   // native registrations skip template sends
                let payload: String
                if device.platform == .windows {
                    payload = TemplateRenderer.renderXML(template, properties: properties)
                } else {
                    payload = (try? TemplateRenderer.renderJSON(template, properties: properties)) ?? template
                }
                targets.append((device, payload))
            }
        case "apple", "fcmv1", "windows":
            let platform = VirtualDevice.Platform(rawValue: format)!
            let text = String(decoding: request.body, as: UTF8.self)
            if platform != .windows {
                guard let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any] else {
                    return .xmlError(400, "The \(format) notification body must be a JSON object", trackingId: trackingId)
                }
                if platform == .fcmv1, !(object["message"] is [String: Any]) {
                    return .xmlError(400, "An fcmv1 notification must be a complete FCM v1 message: {\"message\":{…}}", trackingId: trackingId)
                }
            }
            for device in matching where device.platform == platform && device.template == nil {
                targets.append((device, text))
            }
        default:
            return .xmlError(400, "The notification format '\(format)' is not supported by this emulator", trackingId: trackingId)
        }
        // The test flag limits a send to 10 registrations.
        if isTest { targets = Array(targets.prefix(10)) }
        for (device, payload) in targets {
            let delivery = Delivery(device: device.id, platform: device.platform.rawValue, tags: device.tags, payload: payload,
                                    notificationId: notificationId)
            deliveries.append(delivery)
            if let log, var line = try? encoder.encode(delivery) {
                line.append(0x0A)
                log.write(line)
            }
        }
        let apiVersion = request.query["api-version"] ?? "2020-06"
        var headers: [(String, String)] = [
            ("Location", "https://\(connection.host)/\(hub)/messages/\(notificationId)?api-version=\(apiVersion)"),
            ("TrackingId", trackingId),
            ("X-Powered-By", "newspush-hub (Azure Notification Hubs emulator)"),
        ]
        if isTest {
            headers.append(("Content-Type", "application/xml; charset=utf-8"))
            return EmulatorResponse(status: 201, headers: headers, body: Data(Self.outcomeXML(targets.map(\.0)).utf8))
        }
        return EmulatorResponse(status: 201, headers: headers, body: Data())
    }

    /// The 401/403 the service would answer, or nil when the token is good for this send.
    private func verifyToken(_ header: String?, hub: String, now: Date, trackingId: String) -> EmulatorResponse? {
        guard let header, !header.isEmpty else {
            return .xmlError(401, "MissingToken: The authorization header was not provided", trackingId: trackingId)
        }
        guard let fields = SharedAccessSignature.fields(of: header), let sr = fields["sr"], let sig = fields["sig"],
              let seText = fields["se"], let se = Int(seText), let keyName = fields["skn"] else {
            return .xmlError(401, "MalformedToken: The credentials contained in the authorization header are not in the SharedAccessSignature format", trackingId: trackingId)
        }
        let policy: AccessPolicy
        if keyName == connection.keyName {
            policy = AccessPolicy(name: keyName, key: connection.key, canSend: true)
        } else if let other = registry.policies.first(where: { $0.name == keyName }) {
            policy = other
        } else {
            return .xmlError(401, "40103: Invalid authorization token signature (unknown key name '\(keyName)')", trackingId: trackingId)
        }
        // The service HMACs the sr string exactly as sent.
        let expected = SharedAccessSignature.sign(sr: sr, expiry: se, key: policy.key)
        guard SharedAccessSignature.percentDecode(sig) == expected else {
            return .xmlError(401, "InvalidSignature: The token has an invalid signature", trackingId: trackingId)
        }
        guard Double(se) > now.timeIntervalSince1970 else {
            return .xmlError(401, "ExpiredToken: The token is expired. Expiration time: '\(se)'", trackingId: trackingId)
        }
        guard Self.audienceCovers(sr: sr, host: connection.host, hub: hub) else {
            return .xmlError(401, "InvalidAudience: The token audience '\(SharedAccessSignature.percentDecode(sr))' does not cover this hub's messages", trackingId: trackingId)
        }
        guard policy.canSend else {
            // The service answers a Listen-only policy with an empty 403.
            return EmulatorResponse(status: 403, headers: [("TrackingId", trackingId)], body: Data())
        }
        return nil
    }

    /// Whether a token's resource (namespace, hub, or the hub's messages, http or https, with or
    /// without a query) scopes a send to `hub`.
    static func audienceCovers(sr: String, host: String, hub: String) -> Bool {
        var resource = SharedAccessSignature.percentDecode(sr).lowercased()
        if let query = resource.firstIndex(of: "?") { resource = String(resource[..<query]) }
        for scheme in ["https://", "http://", "sb://"] where resource.hasPrefix(scheme) {
            resource.removeFirst(scheme.count)
        }
        while resource.hasSuffix("/") { resource.removeLast() }
        let target = "\(host.lowercased())/\(hub.lowercased())/messages"
        return target == resource || target.hasPrefix(resource + "/")
    }

    /// The `NotificationOutcome` XML a test send answers with.
    static func outcomeXML(_ devices: [VirtualDevice]) -> String {
        var xml = "<NotificationOutcome xmlns=\"http://schemas.microsoft.com/netservices/2010/10/servicebus/connect\" xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">"
        xml += "<Success>\(devices.count)</Success><Failure>0</Failure>"
        if devices.isEmpty {
            xml += "<Results i:nil=\"true\"/>"
        } else {
            xml += "<Results>"
            for device in devices {
                xml += "<RegistrationResult><ApplicationPlatform>\(device.platform.rawValue)</ApplicationPlatform><PnsHandle>\(device.id)</PnsHandle><RegistrationId>\(device.id)</RegistrationId><Outcome>The Notification was successfully sent to the Push Notification System</Outcome></RegistrationResult>"
            }
            xml += "</Results>"
        }
        return xml + "</NotificationOutcome>"
    }
}
