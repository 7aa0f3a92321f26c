import Foundation
import NewsPushModel

/// Links as feeds write them: relative ones made absolute against `xml:base` and the feed's
/// address.
public enum FeedURL {
    /// `reference` made absolute against `base` (RFC 3986); nil when it cannot be. Without a
    /// base (a feed read from a file) a relative reference stays relative.
    static func resolve(_ reference: String, against base: String?) -> String? {
        let trimmed = reference.trimmedASCIIWhitespace()
        if trimmed.isEmpty { return base }
        if trimmed.hasPrefix("http://") || trimmed.hasPrefix("https://") { return trimmed }
        guard let base, let baseURL = URL(string: base) else { return URL(string: trimmed) != nil ? trimmed : nil }
        guard
            let resolved = URL(string: trimmed, relativeTo: baseURL)
                ?? URL(
                    string: trimmed.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed) ?? trimmed,
                    relativeTo: baseURL)
        else {
            return trimmed
        }
        return resolved.absoluteString
    }

    /// Whether `url` is an absolute http or https URL with a host: the only links relative
    /// ones are resolved against, and the only ones a push may carry.
    /// Whether `url` is an absolute http(s) URL with a host.
    public static func isHTTP(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return true
    }
}
