import Foundation

/// Human and JSON views of the state file for `newspush state`.
public enum StateReport {
    public static func text(_ state: NewsPushState, path: String) -> String {
        var counts: [StoryRecord.Status: Int] = [:]
        for record in state.stories.values { counts[record.status, default: 0] += 1 }
        let summary = counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ")
        var lines = ["\(path): \(state.stories.count) stories (\(summary.isEmpty ? "none" : summary)), \(state.feeds.count) feeds, \(state.tombstones.count) tombstones"]
        for (key, record) in state.stories.sorted(by: { ($0.value.lastSeen, $0.key) > ($1.value.lastSeen, $1.key) }) {
            let pushed = record.pushedAt.map { " pushed \(FeedDates.format($0))" } ?? ""
            lines.append("\(record.status.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(record.category ?? "-") \(key)  \(record.title ?? "")\(pushed)")
        }
        return lines.joined(separator: "\n")
    }

    public static func json(_ state: NewsPushState) -> String {
        guard let data = try? StateStore.encoder.encode(state) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Inconsistencies a healthy state file does not have.
    public static func problems(_ state: NewsPushState) -> [String] {
        var problems: [String] = []
        for (key, record) in state.stories {
            if record.status == .pushed && record.pushedAt == nil { problems.append("\(key): pushed without a push time") }
            if record.lastSeen < record.firstSeen { problems.append("\(key): last seen before first seen") }
            if state.tombstones[key] != nil { problems.append("\(key): both a story and a tombstone") }
        }
        return problems
    }
}
