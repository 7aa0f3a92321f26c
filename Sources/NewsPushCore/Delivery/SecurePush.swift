import Foundation
import NewsPushModel
import NotificationHubs

/// Secure pushes (SPEC §9): an id-only push carries only its `secureId`; its texts wait in the
/// ledger until it expires, for the signed-in phone to fetch. Until it is sent, an id-only
/// outbox entry holds its texts like a template push (an editor reads and edits them on the
/// desk); just before its first request it is *sealed*: the texts move to the ledger under a
/// fresh id and the entry keeps only that id and the platforms it still has to reach.
public enum SecurePush {
    /// The platforms an id-only push goes to, each by a native send of its own.
    public static let platforms: [PushFormat] = [.apple, .fcmv1]
    /// The property that holds a sealed entry's id.
    public static let idProperty = "secureId"
    /// The property that lists the platforms a sealed entry has still to reach.
    static let platformsProperty = "platforms"
    /// What is kept of an entry's properties once sealed: nothing a device would show.
    static let kept: Set<String> = [
        "id", "category", "importance", "priority", "interruptionLevel", "collapseId", "secureAlert", "from",
    ]

    /// Whether `entry` is an id-only push whose texts are not yet in the ledger.
    public static func needsSealing(_ entry: OutboxEntry) -> Bool {
        entry.format == .idOnly && entry.properties[idProperty] == nil
    }

    /// The texts of an unsealed id-only entry by language: `default` is `messageParam`, and each
    /// `messageParam_<lang>` is under `<lang>` (the suffix form, `pt_br`).
    public static func texts(of entry: OutboxEntry) -> [String: String] {
        var texts: [String: String] = [:]
        for (name, value) in entry.properties {
            if name == "messageParam" {
                texts["default"] = value
            } else if name.hasPrefix("messageParam_") {
                texts[String(name.dropFirst("messageParam_".count))] = value
            }
        }
        return texts
    }

    /// `entry` once its texts are in the ledger as secure push `id`.
    public static func sealed(_ entry: OutboxEntry, id: Int) -> OutboxEntry {
        var sealed = entry
        sealed.properties = entry.properties.filter { kept.contains($0.key) }
        sealed.properties[idProperty] = String(id)
        sealed.properties[platformsProperty] = platforms.map(\.rawValue).joined(separator: ",")
        return sealed
    }

    /// The platforms a sealed entry has still to reach (all of them for an unsealed one).
    public static func platforms(of entry: OutboxEntry) -> [PushFormat] {
        guard let listed = entry.properties[platformsProperty] else { return platforms }
        return listed.split(separator: ",").compactMap { PushFormat(rawValue: String($0)) }
    }

    /// `properties` with only `platforms` left to reach.
    static func remaining(_ platforms: [PushFormat], of properties: [String: String]) -> [String: String] {
        var properties = properties
        properties[platformsProperty] = platforms.map(\.rawValue).joined(separator: ",")
        return properties
    }

    /// A new `secureId`: a decimal integer below 2³¹, drawn from the system's cryptographic
    /// generator, so no id says anything about the next.
    public static func drawID() -> Int { Int.random(in: 1...Int(Int32.max)) }

    /// The native request of one platform's send: only the id, as a background push (apple;
    /// with the category's `secure_alert`, a visible generic alert the app's notification
    /// extension replaces) or as data (FCM v1). A dry run, before the id is drawn, shows `0`.
    static func request(
        platform: PushFormat, properties p: [String: String], tags: String, expiry: Date,
        client: NotificationHubClient, test: Bool, now: Date
    ) throws(HubError) -> HubRequest {
        let id = p[idProperty] ?? "0"
        guard platform == .apple else {
            return try client.nativeRequest(
                .fcmv1, payload: ["message": ["data": [idProperty: id]]], tags: tags, test: test, now: now)
        }
        var headers: [(name: String, value: String)] = [("apns-expiration", String(Int(expiry.timeIntervalSince1970)))]
        let aps: [String: Any]
        if let alert = p["secureAlert"], !alert.isEmpty {
            var visible: [String: Any] = ["alert": alert, "mutable-content": 1]
            if p["importance"] != Importance.minor.rawValue { visible["sound"] = "default" }
            aps = visible
            headers += [("apns-push-type", "alert"), ("apns-priority", p["priority"] ?? Importance.major.priority)]
            if let collapse = p["collapseId"], !collapse.isEmpty { headers.append(("apns-collapse-id", collapse)) }
        } else {
            // Apple allows background pushes only at priority 5.
            aps = ["content-available": 1]
            headers += [("apns-push-type", "background"), ("apns-priority", "5")]
        }
        return try client.nativeRequest(
            .apple, payload: ["aps": aps, idProperty: id], tags: tags, headers: headers, test: test, now: now)
    }
}
