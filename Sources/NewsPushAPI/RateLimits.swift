import Foundation
import NewsPushCore
import Synchronization

/// `api.rate`: a token bucket per client address and per user, in this instance's memory (a
/// limit is the instance's own: N instances behind a balancer let N times as much through).
final class RateLimits: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: Date
    }

    private let buckets = Mutex<[String: Bucket]>([:])

    /// Takes one request from `key`'s bucket; nil when allowed, else the seconds until it would be.
    func take(_ key: String, limit: ApiSettings.RateLimit, now: Date) -> Int? {
        let rate = Double(limit.count) / limit.period
        return buckets.withLock { buckets in
            if buckets.count > 200_000 { buckets = buckets.filter { now.timeIntervalSince($0.value.at) < 3600 } }
            var bucket = buckets[key] ?? Bucket(tokens: Double(limit.count), at: now)
            bucket.tokens = min(Double(limit.count), bucket.tokens + max(0, now.timeIntervalSince(bucket.at)) * rate)
            bucket.at = now
            defer { buckets[key] = bucket }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }
}
