import Crypto
import Foundation
import NotificationHubs

/// Authentication as the service does it: a SAS token present, signed with the key, not
/// expired, for this hub's audience.
extension HubEmulator {
    /// The 401/403 the service would answer, or nil when the token is good for this hub. A send
    /// needs the Send (or Manage) right; an installation's write Listen is enough for (which is
    /// why an app holding the Listen key can register any tag).
    func verifyToken(_ header: String?, hub: String, now: Date, trackingId: String, needsSend: Bool = true)
        -> EmulatorResponse?
    {
        guard let header, !header.isEmpty else {
            return .xmlError(401, "MissingToken: The authorization header was not provided", trackingId: trackingId)
        }
        guard let fields = SharedAccessSignature.fields(of: header), let sr = fields["sr"], let sig = fields["sig"],
            let seText = fields["se"], let se = Int(seText), let keyName = fields["skn"]
        else {
            return .xmlError(
                401,
                "MalformedToken: The credentials contained in the authorization header are not in the "
                    + "SharedAccessSignature format",
                trackingId: trackingId)
        }
        let policy: AccessPolicy
        if keyName == connection.keyName {
            policy = AccessPolicy(name: keyName, key: connection.key, canSend: true)
        } else if let other = registry.policies.first(where: { $0.name == keyName }) {
            policy = other
        } else {
            return .xmlError(
                401, "40103: Invalid authorization token signature (unknown key name '\(keyName)')",
                trackingId: trackingId)
        }
        // The service HMACs the sr string exactly as sent.
        let expected = SharedAccessSignature.sign(sr: sr, expiry: se, key: policy.key)
        guard SharedAccessSignature.percentDecode(sig) == expected else {
            return .xmlError(401, "InvalidSignature: The token has an invalid signature", trackingId: trackingId)
        }
        guard Double(se) > now.timeIntervalSince1970 else {
            return .xmlError(
                401, "ExpiredToken: The token is expired. Expiration time: '\(se)'", trackingId: trackingId)
        }
        let hosts =
            [connection.host]
            + (ownAddress.map { [$0, $0.replacingOccurrences(of: "127.0.0.1", with: "localhost")] } ?? [])
        guard hosts.contains(where: { Self.audienceCovers(sr: sr, host: $0, hub: hub) }) else {
            return .xmlError(
                401,
                "InvalidAudience: The token audience '\(SharedAccessSignature.percentDecode(sr))' does not cover "
                    + "this hub's messages",
                trackingId: trackingId)
        }
        guard policy.canSend || !needsSend else {
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
}
