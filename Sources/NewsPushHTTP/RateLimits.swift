import Foundation
import Synchronization

/// Token buckets by key (a client network, a user), in this instance's memory: `api.rate` and
/// the watcher's listener take from them (a limit is the instance's own: N instances behind a
/// balancer let N times as much through).
public final class RateLimits: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: Date
    }

    private let buckets: Mutex<Generations<Bucket>>

    /// At most `2 × capacity` buckets are kept, whatever the number of clients.
    public init(capacity: Int = 100_000) {
        buckets = Mutex(Generations(capacity: capacity))
    }

    /// Takes one request from `key`'s bucket of `count` requests per `period` seconds; nil when
    /// allowed, else the seconds until it would be.
    public func take(_ key: String, count: Int, per period: Double, now: Date) -> Int? {
        let rate = Double(count) / period
        return buckets.withLock { buckets in
            var bucket = buckets.take(key) ?? Bucket(tokens: Double(count), at: now)
            bucket.tokens = min(Double(count), bucket.tokens + max(0, now.timeIntervalSince(bucket.at)) * rate)
            bucket.at = now
            defer { buckets.put(key, bucket) }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }

    /// Seconds until `key`'s bucket of `count` per `period` has a request again; nil when it has
    /// one now (nothing is taken).
    public func waiting(_ key: String, count: Int, per period: Double, now: Date) -> Int? {
        let rate = Double(count) / period
        return buckets.withLock { buckets in
            guard let bucket = buckets.peek(key) else { return nil }
            let tokens = min(Double(count), bucket.tokens + max(0, now.timeIntervalSince(bucket.at)) * rate)
            return tokens >= 1 ? nil : max(1, Int(((1 - tokens) / rate).rounded(.up)))
        }
    }

    /// How many buckets are kept now (for the tests' and the bench's memory checks).
    public var count: Int { buckets.withLock { $0.count } }
}

/// A map in bounded memory with O(1) work per use: keys go into the current generation; when
/// it is full it becomes the previous one and the previous is dropped. A key used in either
/// generation is kept, so only keys unused for a whole generation are forgotten (for a rate
/// limit: a client forgotten starts again with a full bucket, which it would soon have anyway).
/// Hand-written: no library here keeps a bounded map without a walk over it.
public struct Generations<Value> {
    /// Keys a generation holds before it is replaced.
    public let capacity: Int
    private var current: [String: Value] = [:]
    private var previous: [String: Value] = [:]

    /// An empty map keeping at most `2 × capacity` keys.
    public init(capacity: Int) { self.capacity = max(1, capacity) }

    /// The value of `key`, taken out (put it back with `put`).
    public mutating func take(_ key: String) -> Value? {
        current.removeValue(forKey: key) ?? previous.removeValue(forKey: key)
    }

    /// The value of `key`, left in place.
    public func peek(_ key: String) -> Value? { current[key] ?? previous[key] }

    /// Sets `key`'s value in the current generation.
    public mutating func put(_ key: String, _ value: Value) {
        current[key] = value
        if current.count >= capacity {
            previous = current
            current = [:]
        }
    }

    /// Keys held, in both generations.
    public var count: Int { current.count + previous.count }
}

extension Generations: Sendable where Value: Sendable {}
