import FeedParsing
import Foundation
import NewsPushModel

/// Why a `publish --at` time cannot be used.
public enum ScheduleTimeError: Error, Sendable, Equatable, CustomStringConvertible {
    case notADuration(String)
    case notATime(String)
    /// A time without a zone: read as UTC it would be hours off for an editor elsewhere.
    case noZone(String)
    case past(Date)
    case tooFar(Date)

    /// What is wrong with the time, and the forms that are accepted (the command line's words).
    public var description: String { said(option: "--at") }

    /// The same, naming the time as `option` does (`at` on the desk's form).
    public func said(option: String) -> String {
        switch self {
        case .notADuration(let text): return "\(option) '\(text)' is not +DURATION (e.g. +2h)"
        case .notATime(let text):
            return "\(option) '\(text)' is not a time: give an RFC 3339 time with its zone (2026-11-23T18:00:00Z) or "
                + "+DURATION"
        case .noZone(let text):
            return
                "\(option) '\(text)' has no time zone: give it (2026-11-23T18:00:00Z, or an offset such as "
                + "2026-11-23T18:00:00+01:00) or +DURATION"
        case .past(let time): return "\(option) \(FeedDates.format(time)) is not in the future"
        case .tooFar(let time):
            return "\(option) \(FeedDates.format(time)) is more than 7 days ahead: the hub schedules at most a week"
        }
    }
}

/// `publish --at`: an RFC 3339 time or `+DURATION`, in the future and at most 7 days ahead (the
/// hub's limit for scheduled sends).
public enum ScheduleTime {
    /// The time `text` names, as of `now`.
    public static func parse(_ text: String, now: Date) throws(ScheduleTimeError) -> Date {
        let time: Date
        if text.hasPrefix("+") {
            guard let seconds = Durations.parse(String(text.dropFirst())) else { throw .notADuration(text) }
            time = now.addingTimeInterval(seconds)
        } else {
            guard let date = FeedDates.parseISO8601(text) else { throw .notATime(text) }
            guard hasZone(text) else { throw .noZone(text) }
            time = date
        }
        guard time > now.addingTimeInterval(1) else { throw .past(time) }
        guard time <= now.addingTimeInterval(7 * 86400) else { throw .tooFar(time) }
        return time
    }

    /// Whether an RFC 3339 time ends with its zone: `Z` or a numeric offset.
    static func hasZone(_ text: String) -> Bool {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("Z") || trimmed.hasSuffix("z") { return true }
        return (try? #/[T t]\d{1,2}(:\d{2}){0,2}([.,]\d+)?\s*[+-]\d{2}(:?\d{2})?$/#.firstMatch(in: trimmed)) != nil
    }
}
