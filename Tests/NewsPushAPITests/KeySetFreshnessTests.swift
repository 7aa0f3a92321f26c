import Testing

@testable import NewsPushAPI

/// How long a JWT key set is kept: its server's word read as a feed's is (`HTTPFreshness`), so
/// an `Age` added by a cache in front of it and an `Expires` count too.
struct KeySetFreshnessTests {
    @Test func theKeySetsServerIsReadAsAFeedsIs() {
        #expect(JWTKeys.maxAge(["cache-control": "public, max-age=300"]) == 300)
        #expect(JWTKeys.maxAge(["cache-control": "max-age=600", "age": "590"]) == 10, "a cache's Age counts")
        #expect(JWTKeys.maxAge(["cache-control": "max-age=1"]) == 1)
        #expect(JWTKeys.maxAge(["cache-control": "max-age=31536000"]) == 86_400, "at most a day")
        #expect(JWTKeys.maxAge(["cache-control": "no-store"]) == JWTKeys.refetchInterval)
        #expect(JWTKeys.maxAge(["cache-control": "max-age=0"]) == JWTKeys.refetchInterval, "stale already")
        #expect(JWTKeys.maxAge(["expires": "0"]) == JWTKeys.refetchInterval, "an Expires that is no date")
        let served = ["date": "Sun, 29 Nov 2026 10:00:00 GMT", "expires": "Sun, 29 Nov 2026 10:05:00 GMT"]
        #expect(JWTKeys.maxAge(served) == 300, "Expires against the server's own Date")
        #expect(JWTKeys.maxAge([:]) == JWTKeys.defaultMaxAge)
    }
}
