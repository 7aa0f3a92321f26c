import FeedParsing
import Foundation

/// How long a feed's server says its answer stays fresh (RFC 9111 §4.2.1): `Cache-Control:
/// max-age` less the answer's `Age`, else `Expires` against the server's own `Date` (so a
/// machine whose clock is off reads it right). `no-cache`, `no-store` and `must-revalidate`
/// with no lifetime give nothing; `s-maxage` is for shared caches and not read. Written by
/// hand: a dozen lines of header reading no HTTP library here exposes on its own.
public enum HTTPFreshness {
    /// The longest freshness taken: a longer one is more likely a misconfigured server (as
    /// `Retry-After`, which the fetcher also honours up to a day).
    public static let longest: TimeInterval = 86_400

    /// Seconds from now the answer with `headers` (names lower-cased) stays fresh, or nil.
    public static func lifetime(_ headers: [String: String]) -> TimeInterval? {
        let directives = (headers["cache-control"] ?? "").lowercased().split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if directives.contains(where: { $0 == "no-store" || $0 == "no-cache" }) { return nil }
        let age = headers["age"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        if let maxAge = directives.first(where: { $0.hasPrefix("max-age=") }) {
            guard
                let seconds = Double(
                    maxAge.dropFirst("max-age=".count).trimmingCharacters(in: .init(charactersIn: "\"")))
            else {
                return nil
            }
            return clamp(seconds - age)
        }
        guard let expiresText = headers["expires"] else { return nil }
        // An Expires that is not a date (often "0" or "-1") means already stale.
        guard let expires = FeedDates.parse(expiresText) else { return nil }
        let served = headers["date"].flatMap(FeedDates.parse)
        return clamp(expires.timeIntervalSince(served ?? Date()) - age)
    }

    private static func clamp(_ seconds: TimeInterval) -> TimeInterval? {
        seconds > 0 ? min(seconds, longest) : nil
    }
}
