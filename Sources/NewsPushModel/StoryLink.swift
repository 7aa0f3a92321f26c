import Foundation

/// How a story is recognised by its link whatever the spelling: the canonical form two
/// spellings of one article share.
public enum StoryLink {
    private static let trackingParameters: Set<String> = [
        "fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "xtor", "igshid", "ocid", "cmpid", "ns_mchannel",
        "ns_source", "ns_campaign", "ns_linkname", "ns_fee", "at_medium", "at_campaign", "_ga", "ref_src",
    ]

    /// A link with scheme, `www.`, fragment and tracking parameters removed, host lower-cased and
    /// the remaining query parameters sorted: two spellings of one article compare equal.
    public static func canonical(_ link: String) -> String? {
        guard var components = URLComponents(string: link.trimmingWhiteSpace()),
            var host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        if host.hasPrefix("www.") { host.removeFirst(4) }
        components.fragment = nil
        let kept = (components.queryItems ?? []).filter { item in
            let name = item.name.lowercased()
            return !name.hasPrefix("utm_") && !trackingParameters.contains(name)
        }.sorted { ($0.name, $0.value ?? "") < ($1.name, $1.value ?? "") }
        var path = components.percentEncodedPath
        if path.isEmpty { path = "/" }
        let port = components.port.map { ":\($0)" } ?? ""
        let query = kept.isEmpty ? "" : "?" + kept.map { "\($0.name)=\($0.value ?? "")" }.joined(separator: "&")
        return "\(host)\(port)\(path)\(query)"
    }
}
