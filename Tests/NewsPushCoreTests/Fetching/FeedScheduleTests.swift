import Foundation
import Testing

@testable import NewsPushCore

/// The watcher's schedule (SPEC §10), as values: bounds, the server's limits, adaptation to how
/// often a feed changes, backoff, jitter.
struct FeedScheduleTests {
    static let settings: WatchSettings = {
        var settings = WatchSettings()
        settings.interval = 60
        settings.minInterval = 15
        settings.maxInterval = 1800
        return settings
    }()

    /// Fetches every time the feed is due over `hours`; `changes` says whether the feed changed
    /// since the last fetch at a time. The number of fetches.
    static func fetches(over hours: Double, changeEvery period: TimeInterval) -> Int {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var schedule = FeedSchedule.first(at: start, settings: settings)
        var lastSeen = start
        var count = 0
        while schedule.due < start.addingTimeInterval(hours * 3600) {
            let now = schedule.due
            let changed = Int(now.timeIntervalSince(start) / period) > Int(lastSeen.timeIntervalSince(start) / period)
            lastSeen = now
            count += 1
            schedule = schedule.next(
                after: FetchOutcome(changed ? .changed : .unchanged), at: now, settings: settings, jitter: 1)
        }
        return count
    }

    @Test func aFeedThatChangesEveryMinuteIsPolledMoreOftenThanADailyOne() {
        let busy = Self.fetches(over: 24, changeEvery: 60)
        let daily = Self.fetches(over: 24, changeEvery: 86_400)
        #expect(busy > 10 * daily, "\(busy) against \(daily) fetches a day")
        // Within the bounds: never more than every 15 s, never less than every 30 min.
        #expect(busy <= 24 * 3600 / 15 + 1)
        #expect(daily >= 24 * 2 - 1)
    }

    @Test func theIntervalStaysWithinItsBounds() {
        let now = Date()
        var fast = FeedSchedule.first(at: now, settings: Self.settings)
        var slow = fast
        for step in 1...50 {
            let at = now.addingTimeInterval(Double(step))
            fast = fast.next(after: FetchOutcome(.changed), at: at, settings: Self.settings, jitter: 0.9)
            slow = slow.next(after: FetchOutcome(.unchanged), at: at, settings: Self.settings, jitter: 1.1)
            #expect(fast.due.timeIntervalSince(at) >= 15)
            #expect(slow.due.timeIntervalSince(at) <= 1800)
        }
        #expect(fast.interval == 15 && slow.interval == 1800)
    }

    @Test func theServersLimitIsNeverOvertakenEvenPastTheMaximum() {
        let now = Date()
        let schedule = FeedSchedule.first(at: now, settings: Self.settings)
        let cached = schedule.next(
            after: FetchOutcome(.changed, notBefore: now.addingTimeInterval(300)), at: now, settings: Self.settings,
            jitter: 1)
        #expect(cached.due == now.addingTimeInterval(300), "max-age=300: not sooner")
        let paused = schedule.next(
            after: FetchOutcome(.failed, notBefore: now.addingTimeInterval(7200)), at: now, settings: Self.settings,
            jitter: 1)
        #expect(paused.due == now.addingTimeInterval(7200), "a Retry-After of two hours, past max_interval")
    }

    @Test func failuresBackOffAndASuccessEndsTheBackoff() {
        let now = Date()
        var schedule = FeedSchedule.first(at: now, settings: Self.settings)
        var waits: [TimeInterval] = []
        for _ in 1...4 {
            schedule = schedule.next(after: FetchOutcome(.failed), at: now, settings: Self.settings, jitter: 1)
            waits.append(schedule.due.timeIntervalSince(now))
        }
        #expect(waits == [120, 240, 480, 960])
        schedule = schedule.next(after: FetchOutcome(.unchanged), at: now, settings: Self.settings, jitter: 1)
        #expect(schedule.failures == 0 && schedule.due.timeIntervalSince(now) == 90)
    }

    @Test func jitterSpreadsFeedsFetchedTogether() {
        let now = Date()
        let schedule = FeedSchedule.first(at: now, settings: Self.settings)
        let dues = (0..<20).map { _ in
            schedule.next(
                after: FetchOutcome(.unchanged), at: now, settings: Self.settings,
                jitter: Double.random(in: 0.9...1.1)
            ).due.timeIntervalSince(now)
        }
        #expect(Set(dues).count > 1 && dues.allSatisfy { (81...99).contains($0) }, "\(dues)")
    }

    // The server's freshness: max-age less Age, else Expires against the server's Date.
    @Test(
        arguments: [
            (["cache-control": "public, max-age=300"], 300.0),
            (["cache-control": "max-age=300", "age": "100"], 200.0),
            (["cache-control": "no-cache, max-age=300"], nil),
            (["cache-control": "s-maxage=600"], nil),
            (["expires": "Thu, 01 Jan 2026 00:10:00 GMT", "date": "Thu, 01 Jan 2026 00:00:00 GMT"], 600.0),
            (["expires": "0"], nil),
            (["cache-control": "max-age=999999"], 86_400.0),
        ] as [([String: String], Double?)])
    func freshnessIsReadFromTheHeaders(_ headers: [String: String], _ seconds: Double?) {
        #expect(HTTPFreshness.lifetime(headers) == seconds)
    }

    @Test func aFetchsOutcomeTakesTheLatestOfTheServersLimits() {
        let now = Date()
        var fetched = FetchedFeed(url: "u", status: .ok, body: Data(), finalURL: "u")
        fetched.freshUntil = now.addingTimeInterval(120)
        let outcome = FetchOutcome.of(fetched: fetched, failed: false, newItems: 2, ttlMinutes: 5, at: now)
        #expect(outcome == FetchOutcome(.changed, notBefore: now.addingTimeInterval(300)))
        let quiet = FetchOutcome.of(fetched: fetched, failed: false, newItems: 0, ttlMinutes: nil, at: now)
        #expect(quiet == FetchOutcome(.unchanged, notBefore: now.addingTimeInterval(120)))
    }
}
