import FeedParsing
import Foundation
import NewsPushModel
import NotificationHubs

/// Secure pushes (SPEC §9): an id-only push carries only its `secureId`; its texts wait in the
/// ledger until it expires, for the signed-in phone to fetch. Until it is sent, an id-only
/// outbox entry holds its texts like a template push (an editor reads and edits them on the
/// desk); just before its first request it is *sealed*: the texts move to the ledger under a
/// fresh id and the entry keeps only that id and the platforms it still has to reach.
public enum SecurePush {
    /// The platforms an id-only push goes to, each by a native send of its own, to the devices
    /// signed in to `newspush api` (they alone can fetch the text).
    public static let platforms: [PushFormat] = [.apple, .fcmv1, .wns]
    /// The property that holds a sealed entry's id.
    public static let idProperty = "secureId"
    /// The property that lists the platforms a sealed entry has still to reach.
    static let platformsProperty = "platforms"
    /// The property that lists the languages of a sealed entry's texts (so the generic alert
    /// fills every `messageParam_<lang>` a registration may show).
    static let languagesProperty = "languages"
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
        sealed.properties[platformsProperty] = platforms(of: entry).map(\.rawValue).joined(separator: ",")
        let languages = texts(of: entry).keys.filter { $0 != "default" }.sorted()
        if !languages.isEmpty { sealed.properties[languagesProperty] = languages.joined(separator: ",") }
        return sealed
    }

    /// The platforms a sealed entry has still to reach; for an unsealed one, every platform,
    /// and the template send of the generic alert to the devices that cannot read the text
    /// when the category has `secure_alert` (a push to one reader has none of those).
    public static func platforms(of entry: OutboxEntry) -> [PushFormat] {
        guard let listed = entry.properties[platformsProperty] else {
            let generic = entry.properties["secureAlert"]?.isEmpty == false && entry.kind != .personal
            return platforms + (generic ? [.template] : [])
        }
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

    /// The devices of `tags` that can fetch the text (signed in), or that cannot.
    public static func tags(_ tags: String, readers: Bool) -> String {
        "(\(tags)) && \(readers ? "" : "!")\(ApiSettings.readerTag)"
    }

    /// The request of one platform's send: only the id, as a background push (apple; with the
    /// category's `secure_alert`, a visible generic alert the app's notification extension
    /// replaces), as data (FCM v1) or as a raw notification (WNS), to the signed-in devices of
    /// `tags`; or the generic alert as a template send to the others. A dry run, before the id
    /// is drawn, shows `0`.
    static func request(
        platform: PushFormat, properties p: [String: String], tags: String, expiry: Date,
        client: NotificationHubClient, test: Bool, now: Date
    ) throws(HubError) -> HubRequest {
        let id = p[idProperty] ?? "0"
        let readers = Self.tags(tags, readers: true)
        // SPEC §9: the native sends carry the secure id and nothing else (no alert id either:
        // the generic alert's template properties do).
        switch platform {
        case .fcmv1:
            return try client.nativeRequest(
                .fcmv1, payload: ["message": ["data": [idProperty: id]]], tags: readers, test: test, now: now)
        case .wns:
            return try client.windowsRawRequest(
                body: #"{"\#(idProperty)":"\#(id)"}"#, tags: readers, test: test, now: now)
        case .template:
            return try client.templateRequest(
                properties: genericAlert(p, expiry: expiry), tags: Self.tags(tags, readers: false), test: test,
                now: now)
        default:
            return try appleRequest(
                id: id, properties: p, tags: readers, expiry: expiry, client: client, test: test, now: now)
        }
    }

    /// The Apple send: the id in a background push, or in the visible generic alert.
    private static func appleRequest(
        id: String, properties p: [String: String], tags: String, expiry: Date, client: NotificationHubClient,
        test: Bool, now: Date
    ) throws(HubError) -> HubRequest {
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

    /// The template properties of the generic alert: `secure_alert` as every message text,
    /// the alert's collapse id, priority and expiry, nothing of the story (no title, link or
    /// key), so a registration that shows them shows nothing.
    static func genericAlert(_ p: [String: String], expiry: Date) -> [String: String] {
        let alert = p["secureAlert"] ?? ""
        var properties = [
            "messageParam": alert, "title": "", "url": "", "source": "", "id": "", "image": "",
            "category": p["category"] ?? "", "collapseId": p["collapseId"] ?? "",
            "importance": p["importance"] ?? Importance.major.rawValue,
            "priority": p["priority"] ?? Importance.major.priority,
            "interruptionLevel": p["interruptionLevel"] ?? Importance.major.interruptionLevel,
            "expiry": FeedDates.format(expiry), PushRequests.alertIdProperty: p[PushRequests.alertIdProperty] ?? "",
        ]
        for language in (p[languagesProperty] ?? "").split(separator: ",") {
            properties["messageParam_\(language)"] = alert
        }
        return properties
    }
}
