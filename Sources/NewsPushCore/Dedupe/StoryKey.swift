import Crypto
import Foundation

/// The identity of a story across runs: what the state file is keyed by.
public enum StoryKey {
    /// `guid:…` when the item has an id unique within its feed, else `link:…` (canonical link),
    /// else `hash:…` of title and date. Ids that are not URLs are scoped by the feed's host,
    /// because short ids like "12345" repeat across publishers.
    public static func key(for item: FeedItem, feedURL: String, idIsUnique: Bool) -> String {
        if let id = item.id?.trimmingCharacters(in: .whitespacesAndNewlines), !id.isEmpty, idIsUnique {
            if id.contains("://") || id.hasPrefix("urn:") || id.hasPrefix("tag:") { return "guid:\(id)" }
            return "guid:\(host(of: feedURL))/\(id)"
        }
        if let link = item.link, let canonical = canonicalLink(link) {
            return "link:\(canonical)"
        }
        let seed = "\(item.title ?? "")\n\(item.published.map(FeedDates.format) ?? "")\n\(item.summary ?? "")"
        let digest = SHA256.hash(data: Data(seed.utf8))
        return "hash:" + digest.prefix(12).map { String(format: "%02x", $0) }.joined()
    }

    /// Keys for every item of a feed, in order. Ids repeated within the feed are not trusted.
    public static func keys(for items: [FeedItem], feedURL: String) -> [String] {
        var counts: [String: Int] = [:]
        for item in items { if let id = item.id { counts[id, default: 0] += 1 } }
        return items.map { key(for: $0, feedURL: feedURL, idIsUnique: ($0.id.map { counts[$0] ?? 0 } ?? 0) == 1) }
    }

    private static let trackingParameters: Set<String> = [
        "fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "xtor", "igshid", "ocid", "cmpid", "ns_mchannel",
        "ns_source", "ns_campaign", "ns_linkname", "ns_fee", "at_medium", "at_campaign", "_ga", "ref_src",
    ]

    /// A link with scheme, `www.`, fragment and tracking parameters removed, host lower-cased and
    /// the remaining query parameters sorted: two spellings of one article compare equal.
    public static func canonicalLink(_ link: String) -> String? {
        guard var components = URLComponents(string: link.trimmingCharacters(in: .whitespacesAndNewlines)),
              var host = components.host?.lowercased(), !host.isEmpty else { return nil }
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

    static func host(of url: String) -> String {
        URLComponents(string: url)?.host?.lowercased() ?? url
    }
}
