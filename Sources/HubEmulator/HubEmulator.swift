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
    /// The collapse id the push service got (`apns-collapse-id`, FCM's `collapse_key`), if any.
    public var collapseId: String?
    /// The push-service headers of the delivery (`apns-priority`, `apns-expiration`…), if any.
    public var headers: [String: String]?

    public init(device: String, platform: String, tags: [String], payload: String, notificationId: String,
                collapseId: String? = nil, headers: [String: String]? = nil) {
        self.device = device
        self.platform = platform
        self.tags = tags
        self.payload = payload
        self.notificationId = notificationId
        self.collapseId = collapseId
        self.headers = headers
    }

    enum CodingKeys: String, CodingKey {
        case device, platform, tags, payload, headers
        case notificationId = "notification_id", collapseId = "collapse_id"
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
/// virtual devices, renders templates and registration headers, honours expiry, holds
/// scheduled sends until their time, answers telemetry from its deliveries, logs every
/// delivery and injects faults on request.
public actor HubEmulator {
    public let connection: HubConnectionString
    public let registry: DeviceRegistry
    private var faults: [Fault] = []
    private var deliveries: [Delivery] = []
    private var notifications: [String: NotificationRecord] = [:]
    private var scheduled: [String: Task<Void, Never>] = [:]
    private var sendCount = 0
    /// The address the server listens on (`127.0.0.1:PORT`): a token signed for it is good too.
    private var ownAddress: String?
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

    /// What the hub knows about a notification (or a scheduled one), as telemetry reports it.
    public func notification(_ id: String) -> NotificationRecord? { notifications[id] }

    /// Tells the emulator the port it listens on.
    public func listening(on port: Int) { ownAddress = "127.0.0.1:\(port)" }

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
        guard let fault else { return route(request, trackingId: trackingId, now: now) }
        var response: EmulatorResponse
        if let status = fault.status {
            response = .xmlError(status, "Injected fault \(status)", trackingId: trackingId)
        } else {
            response = route(request, trackingId: trackingId, now: now)
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

    /// The service's resources: `POST {hub}/messages`, `POST {hub}/schedulednotifications`,
    /// `DELETE {hub}/schedulednotifications/{id}`, `GET {hub}/messages/{id}` (telemetry).
    private func route(_ request: EmulatorRequest, trackingId: String, now: Date) -> EmulatorResponse {
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let notFound = EmulatorResponse.xmlError(404, "The requested resource \(request.path) was not found", trackingId: trackingId)
        guard segments.count >= 2, ["messages", "schedulednotifications"].contains(segments[1]) else { return notFound }
        let hub = segments[0]
        // Authentication, as the service: token present, signature, expiry, audience.
        if let failure = verifyToken(request.headers["authorization"], hub: hub, now: now, trackingId: trackingId) { return failure }
        if let expected = registry.hub, expected.lowercased() != hub.lowercased() {
            return .xmlError(404, "No hub named '\(hub)' in this namespace", trackingId: trackingId)
        }
        switch (request.method, segments[1], segments.count) {
        case ("POST", "messages", 2):
            return send(request, hub: hub, trackingId: trackingId, now: now)
        case ("POST", "schedulednotifications", 2), ("DELETE", "schedulednotifications", 3), ("GET", "messages", 3):
            guard registry.tier == .standard else {
                return .xmlError(403, "This feature requires the Standard tier; this hub is \(registry.tier.rawValue)", trackingId: trackingId)
            }
            if request.method == "POST" { return schedule(request, hub: hub, trackingId: trackingId, now: now) }
            if request.method == "DELETE" { return cancel(segments[2], trackingId: trackingId, now: now) }
            return telemetry(segments[2], hub: hub, trackingId: trackingId)
        default:
            return notFound
        }
    }

    private func newNotificationId(_ now: Date) -> String {
        sendCount += 1
        return "NH-\(idTimeFormatter.string(from: now))-\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())-\(String(format: "%02d", (sendCount % 99) + 1))"
    }

    private func send(_ request: EmulatorRequest, hub: String, trackingId: String, now: Date) -> EmulatorResponse {
        let prepared: PreparedSend
        switch registry.prepare(request, trackingId: trackingId) {
        case .failure(let refusal): return refusal.response
        case .success(let value): prepared = value
        }
        let id = newNotificationId(now)
        let isTest = request.query["test"].map { $0.lowercased() != "false" } ?? false
        notifications[id] = NotificationRecord(id: id, hub: hub, host: connection.host, state: "Enqueued", enqueued: now, body: prepared.body,
                                               tags: prepared.tags, platforms: Set(prepared.targets.map(\.device.platform.rawValue)))
        deliver(prepared.targets, id: id, at: now, ignoringOffline: isTest)
        let apiVersion = request.query["api-version"] ?? "2020-06"
        var headers: [(String, String)] = [
            ("Location", "https://\(connection.host)/\(hub)/messages/\(id)?api-version=\(apiVersion)"),
            ("TrackingId", trackingId),
            ("X-Powered-By", "newspush-hub (Azure Notification Hubs emulator)"),
        ]
        if isTest {
            headers.append(("Content-Type", "application/xml; charset=utf-8"))
            return EmulatorResponse(status: 201, headers: headers, body: Data(Self.outcomeXML(prepared.targets.map(\.device)).utf8))
        }
        return EmulatorResponse(status: 201, headers: headers, body: Data())
    }

    /// A scheduled send: checked like a send, held until `ServiceBusNotification-ScheduleTime`
    /// (UTC, `yyyy-MM-ddTHH:mm:ss`), then delivered unless cancelled.
    private func schedule(_ request: EmulatorRequest, hub: String, trackingId: String, now: Date) -> EmulatorResponse {
        guard let text = request.headers["servicebusnotification-scheduletime"], let time = Self.scheduleTime(text) else {
            return .xmlError(400, "ServiceBusNotification-ScheduleTime is missing or not yyyy-MM-ddTHH:mm:ss", trackingId: trackingId)
        }
        guard time <= now.addingTimeInterval(7 * 86400 + 60) else {
            return .xmlError(400, "Scheduled notifications can be at most 7 days ahead", trackingId: trackingId)
        }
        let prepared: PreparedSend
        switch registry.prepare(request, trackingId: trackingId) {
        case .failure(let refusal): return refusal.response
        case .success(let value): prepared = value
        }
        let id = newNotificationId(now)
        notifications[id] = NotificationRecord(id: id, hub: hub, host: connection.host, state: "Scheduled", enqueued: now, body: prepared.body,
                                               tags: prepared.tags, platforms: Set(prepared.targets.map(\.device.platform.rawValue)))
        let delay = max(0, time.timeIntervalSince(now))
        scheduled[id] = Task { [weak self] in
            try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            guard !Task.isCancelled else { return }
            await self?.fire(id, targets: prepared.targets)
        }
        let apiVersion = request.query["api-version"] ?? "2020-06"
        return EmulatorResponse(status: 201, headers: [
            ("Location", "https://\(connection.host)/\(hub)/schedulednotifications/\(id)?api-version=\(apiVersion)"),
            ("TrackingId", trackingId),
        ], body: Data())
    }

    private func fire(_ id: String, targets: [SendTarget]) {
        scheduled[id] = nil
        guard notifications[id]?.state == "Scheduled" else { return }
        deliver(targets, id: id, at: Date(), ignoringOffline: false)
    }

    private func cancel(_ id: String, trackingId: String, now: Date) -> EmulatorResponse {
        guard let task = scheduled.removeValue(forKey: id) else {
            return .xmlError(404, "No scheduled notification '\(id)' (delivered, cancelled, or never scheduled)", trackingId: trackingId)
        }
        task.cancel()
        notifications[id]?.state = "Cancelled"
        notifications[id]?.ended = now
        return EmulatorResponse(status: 200, headers: [("TrackingId", trackingId)], body: Data())
    }

    private func telemetry(_ id: String, hub: String, trackingId: String) -> EmulatorResponse {
        guard let record = notifications[id] else {
            return .xmlError(404, "No notification '\(id)' in this hub", trackingId: trackingId)
        }
        return EmulatorResponse(status: 200, headers: [("Content-Type", "application/xml; charset=utf-8"), ("TrackingId", trackingId)],
                                body: Data(record.detailsXML().utf8))
    }

    /// Hands a notification to its devices now; a device that is off gets it when it comes
    /// online, unless it expired meanwhile (the push service drops it, as APNs and FCM do).
    private func deliver(_ targets: [SendTarget], id: String, at now: Date, ignoringOffline: Bool) {
        notifications[id]?.state = targets.isEmpty ? "NoTargetFound" : "Processing"
        notifications[id]?.started = now
        notifications[id]?.waiting = targets.count
        if targets.isEmpty { notifications[id]?.ended = now }
        for target in targets {
            if let offline = target.device.offlineSeconds, offline > 0, !ignoringOffline {
                Task { [weak self] in
                    try? await Task.sleep(nanoseconds: UInt64(offline * 1e9))
                    await self?.arrive(target, id: id, at: Date())
                }
            } else {
                arrive(target, id: id, at: now)
            }
        }
    }

    private func arrive(_ target: SendTarget, id: String, at now: Date) {
        let platform = target.device.platform
        if let expiry = target.expiry, expiry < now {
            notifications[id]?.count(platform, "Dropped", at: now)
            return
        }
        let delivery = Delivery(device: target.device.id, platform: platform.rawValue, tags: target.device.tags, payload: target.payload,
                                notificationId: id, collapseId: target.collapseId, headers: target.headers.isEmpty ? nil : target.headers)
        deliveries.append(delivery)
        if let log, var line = try? encoder.encode(delivery) {
            line.append(0x0A)
            log.write(line)
        }
        notifications[id]?.count(platform, "Success", at: now)
    }

    /// The 401/403 the service would answer, or nil when the token is good for this hub.
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
        let hosts = [connection.host] + (ownAddress.map { [$0, $0.replacingOccurrences(of: "127.0.0.1", with: "localhost")] } ?? [])
        guard hosts.contains(where: { Self.audienceCovers(sr: sr, host: $0, hub: hub) }) else {
            return .xmlError(401, "InvalidAudience: The token audience '\(SharedAccessSignature.percentDecode(sr))' does not cover this hub's messages", trackingId: trackingId)
        }
        guard policy.canSend else {
            // The service answers a Listen-only policy with an empty 403.
            return EmulatorResponse(status: 403, headers: [("TrackingId", trackingId)], body: Data())
        }
        return nil
    }

    /// Whether a token's resource (namespace, hub, or the hub's messages, http or https, with or
    /// without a query) scopes a send to `hub` on `host`.
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

    /// `yyyy-MM-ddTHH:mm:ss` in UTC.
    static func scheduleTime(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
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

/// What the emulated hub remembers of a notification, for per-message telemetry.
public struct NotificationRecord: Sendable {
    public var id: String
    public var hub: String
    public var host: String
    /// Enqueued, Processing, Completed, NoTargetFound, Scheduled or Cancelled.
    public var state: String
    public var enqueued: Date
    public var started: Date?
    public var ended: Date?
    public var body: String
    public var tags: String?
    public var platforms: Set<String>
    /// Platform → outcome (Success, Dropped) → devices.
    public var outcomes: [String: [String: Int]] = [:]
    /// Devices not reached yet (off, and not expired so far).
    var waiting = 0

    mutating func count(_ platform: VirtualDevice.Platform, _ outcome: String, at now: Date) {
        outcomes[platform.rawValue, default: [:]][outcome, default: 0] += 1
        waiting -= 1
        if waiting <= 0 {
            state = "Completed"
            ended = now
        }
    }

    /// The service's `NotificationDetails` XML.
    func detailsXML() -> String {
        func date(_ d: Date?) -> String { d.map { ISO8601DateFormatter().string(from: $0) } ?? "" }
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        }
        let element = ["apple": "Apns", "fcmv1": "FcmV1", "windows": "Wns"]
        var xml = "<NotificationDetails xmlns=\"http://schemas.microsoft.com/netservices/2010/10/servicebus/connect\" xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">"
        xml += "<NotificationId>\(escape(id))</NotificationId><Location>sb://\(host)/\(hub)/messages/\(escape(id))?api-version=2016-07</Location>"
        xml += "<State>\(state)</State><EnqueueTime>\(date(enqueued))</EnqueueTime>"
        if let started { xml += "<StartTime>\(date(started))</StartTime>" }
        if let ended { xml += "<EndTime>\(date(ended))</EndTime>" }
        xml += "<NotificationBody>\(escape(body))</NotificationBody>"
        if let tags { xml += "<Tags>\(escape(tags))</Tags>" }
        xml += "<TargetPlatforms>\(platforms.sorted().joined(separator: ","))</TargetPlatforms>"
        for (platform, counts) in outcomes.sorted(by: { $0.key < $1.key }) {
            let name = element[platform] ?? platform.capitalized
            xml += "<\(name)OutcomeCounts>"
            for (outcome, count) in counts.sorted(by: { $0.key < $1.key }) {
                xml += "<Outcome><Name>\(outcome)</Name><Count>\(count)</Count></Outcome>"
            }
            xml += "</\(name)OutcomeCounts>"
        }
        return xml + "</NotificationDetails>"
    }
}
