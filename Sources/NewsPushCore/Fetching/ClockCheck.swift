import FeedParsing
import Foundation

/// What one server's clock said when its answer came: its `Date` header (plus its `Age`, for an
/// answer a cache kept) beside the machine's clock at that moment.
public struct ClockReading: Sendable, Equatable {
    /// The server's time.
    public var server: Date
    /// The machine's time when the answer came.
    public var local: Date

    /// A reading.
    public init(server: Date, local: Date) {
        self.server = server
        self.local = local
    }

    /// The reading of an answer with these headers (lower-cased names) that came at `local`;
    /// nil without a `Date` header.
    public init?(headers: [String: String], local: Date) {
        // The feed parser's RFC 822 reader (its fast path is this very form): no formatter per answer.
        guard let text = headers["date"], let date = FeedDates.parse(text) else { return nil }
        let age = headers["age"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        self.init(server: date.addingTimeInterval(max(0, age)), local: local)
    }
}

/// The machine's clock against the servers' (SPEC §6: freshness, budgets, quiet hours and expiry
/// are judged by it). A clock hours ahead records fresh news as stale for good; one behind pushes
/// old news as new: past `tolerance`, a run records no decision that depends on the clock.
public enum ClockCheck {
    /// How far the machine's clock may be off before nothing is decided by it: ten minutes (a
    /// server's `Date` has whole seconds, and a cache may add its age; ntp keeps clocks within
    /// a second).
    public static let tolerance: Double = 600

    /// How far the machine's clock runs ahead of the servers' (negative: behind), the median of
    /// the readings (one server with a wrong clock cannot decide); nil without readings.
    public static func offset(_ readings: [ClockReading]) -> Double? {
        let offsets = readings.map { $0.local.timeIntervalSince($0.server) }.sorted()
        guard !offsets.isEmpty else { return nil }
        let middle = offsets.count / 2
        return offsets.count.isMultiple(of: 2) ? (offsets[middle - 1] + offsets[middle]) / 2 : offsets[middle]
    }

    /// What is wrong with the machine's clock, in a sentence naming how far off it is and by
    /// whose word; nil when it is within `tolerance` (or nothing said the time).
    public static func problem(_ readings: [ClockReading], of whom: String) -> String? {
        guard let offset = offset(readings), abs(offset) > tolerance else { return nil }
        let minutes = Int((abs(offset) / 60).rounded())
        let amount = minutes >= 120 ? "\(minutes / 60) h \(minutes % 60) min" : "\(minutes) min"
        return "this machine's clock is \(amount) \(offset > 0 ? "ahead of" : "behind") the time \(whom) give "
            + "(the Date headers of \(readings.count) answer\(readings.count == 1 ? "" : "s")): freshness, budgets and "
            + "expiry would be judged wrong, so no decision that depends on the clock was recorded; set the clock "
            + "right (timedatectl set-ntp true) and run again"
    }
}
