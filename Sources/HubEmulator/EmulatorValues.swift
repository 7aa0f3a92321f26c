import Crypto
import Foundation
import NotificationHubs

/// One notification handed to one virtual device: a line of the delivery log.
public struct Delivery: Codable, Sendable, Equatable {
    /// The virtual device's id.
    public var device: String
    /// Its platform (apple, fcmv1, windows).
    public var platform: String
    /// The tags it is registered with.
    public var tags: [String]
    /// What the push service would hand the device: the rendered body.
    public var payload: String
    /// The notification the delivery belongs to.
    public var notificationId: String
    /// The collapse id the push service got (`apns-collapse-id`, FCM's `collapse_key`), if any.
    public var collapseId: String?
    /// The push-service headers of the delivery (`apns-priority`, `apns-expiration`…), if any.
    public var headers: [String: String]?

    /// A delivery of `payload` to `device`.
    public init(
        device: String, platform: String, tags: [String], payload: String, notificationId: String,
        collapseId: String? = nil, headers: [String: String]? = nil
    ) {
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
    /// With `delaySeconds`: deliver first, then wait before answering.
    public var delayAfterDelivery: Bool?
    /// Close the connection without answering (after delivering, as a hub that took the send
    /// and then lost the connection).
    public var drop: Bool?
    /// How many send requests the fault applies to.
    public var count: Int
    /// Only sends of this format (`ServiceBusNotification-Format`: apple, fcmv1, template …),
    /// or `installation`: requests of the installations API; nil: any request.
    public var format: String?
    /// Applies to this share (0…1) of the requests it could take, the rest go through.
    public var chance: Double?
    /// Restarts the generator `chance` is drawn from, so a run replays.
    public var seed: UInt64?
    /// Applies only past this many installation writes in the last second (a hub that
    /// throttles above a rate: `{"status": 429, "retry_after": "1", "per_second": 500}`).
    public var perSecond: Int?
    /// The error body's `Detail` instead of "Injected fault N" (a hub quoting what it was sent).
    public var detail: String?

    /// A fault for the next `count` send requests (of `format`, when given).
    public init(
        status: Int? = nil, retryAfter: String? = nil, delaySeconds: Double? = nil, delayAfterDelivery: Bool? = nil,
        drop: Bool? = nil, count: Int = 1, format: String? = nil, chance: Double? = nil, seed: UInt64? = nil,
        perSecond: Int? = nil, detail: String? = nil
    ) {
        self.status = status
        self.retryAfter = retryAfter
        self.delaySeconds = delaySeconds
        self.delayAfterDelivery = delayAfterDelivery
        self.drop = drop
        self.count = count
        self.format = format
        self.chance = chance
        self.seed = seed
        self.perSecond = perSecond
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case status, drop, count, format, chance, seed, detail
        case retryAfter = "retry_after"
        case delaySeconds = "delay_seconds"
        case delayAfterDelivery = "delay_after_delivery"
        case perSecond = "per_second"
    }

    /// Reads a fault as the control API takes it (`count` defaults to 1, and must be 1 or more).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decodeIfPresent(Int.self, forKey: .status)
        retryAfter = try c.decodeIfPresent(String.self, forKey: .retryAfter)
        delaySeconds = try c.decodeIfPresent(Double.self, forKey: .delaySeconds)
        delayAfterDelivery = try c.decodeIfPresent(Bool.self, forKey: .delayAfterDelivery)
        drop = try c.decodeIfPresent(Bool.self, forKey: .drop)
        count = try c.decodeIfPresent(Int.self, forKey: .count) ?? 1
        format = try c.decodeIfPresent(String.self, forKey: .format)?.lowercased()
        chance = try c.decodeIfPresent(Double.self, forKey: .chance)
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed)
        perSecond = try c.decodeIfPresent(Int.self, forKey: .perSecond)
        if count < 1 {
            throw DecodingError.dataCorruptedError(forKey: .count, in: c, debugDescription: "count must be 1 or more")
        }
    }
}

/// A request as the emulator sees it, independent of the HTTP server.
public struct EmulatorRequest: Sendable {
    /// The HTTP method.
    public var method: String
    /// The path, without the query.
    public var path: String
    /// The query's parameters.
    public var query: [String: String]
    /// The headers, names lower-cased.
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// A request as the server received it.
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
    /// The status to answer with.
    public var status: Int
    /// The headers to answer with.
    public var headers: [(String, String)]
    /// The body to answer with.
    public var body: Data
    /// Close the connection instead of answering.
    public var drop = false
    /// Seconds to wait before answering (the send, if any, is already delivered).
    public var delay: Double = 0

    static func xmlError(_ status: Int, _ detail: String, trackingId: String) -> EmulatorResponse {
        let body =
            "<Error><Code>\(status)</Code><Detail>\(detail).TrackingId:\(trackingId),"
            + "TimeStamp:\(ErrorTimestamp.now())</Detail></Error>"
        return EmulatorResponse(
            status: status, headers: [("Content-Type", "application/xml; charset=utf-8"), ("TrackingId", trackingId)],
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

/// What the emulated hub remembers of a notification, for per-message telemetry.
public struct NotificationRecord: Sendable {
    /// The notification id (the last segment of the send's Location).
    public var id: String
    /// The hub it was sent through.
    public var hub: String
    /// The namespace host.
    public var host: String
    /// Enqueued, Processing, Completed, NoTargetFound, Scheduled or Cancelled.
    public var state: String
    /// When the hub took it.
    public var enqueued: Date
    /// When delivery started.
    public var started: Date?
    /// When delivery ended.
    public var ended: Date?
    /// The body that was sent.
    public var body: String
    /// The tag expression it went to.
    public var tags: String?
    /// The platforms it was sent for.
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
        func escape(_ text: String) -> String { MarkupText.escaped(text) }
        let element = ["apple": "Apns", "fcmv1": "FcmV1", "windows": "Wns"]
        var xml =
            "<NotificationDetails xmlns=\"http://schemas.microsoft.com/netservices/2010/10/servicebus/connect\" "
            + "xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">"
        xml +=
            "<NotificationId>\(escape(id))</NotificationId><Location>sb://\(host)/\(hub)/messages/"
            + "\(escape(id))?api-version=2016-07</Location>"
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

/// A generator of pseudo-random numbers from a seed (SplitMix64, written here because the
/// standard library's generator cannot be seeded): the emulator's chance faults replay.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence `seed` fixes.
    public init(seed: UInt64) { state = seed }

    /// The next number of the sequence.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
