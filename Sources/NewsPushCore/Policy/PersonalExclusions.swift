import Foundation
import NewsPushModel
import NotificationHubs

/// A story that went to some readers by name (`publish --user`) and then goes to everyone
/// reaches each of them once: the broadcast's expression excludes their tags
/// (`(World) && !username:alice`), as many as the hub's limit on an expression allows (6 tags
/// once it holds `&&`; one kept free for an id-only push's signed-in tag). The readers left
/// over would get it twice, and the plan says so.
public enum PersonalExclusions {
    /// Tags the hub takes in an expression that is not only `||`s (hub-api.md §3).
    static let maxTags = 6

    /// `expression` excluding `readers` (their user tags), and the readers who did not fit.
    public static func excluding(_ expression: String, readers: [String], format: PushFormat) -> (
        tags: String, twice: [String]
    ) {
        guard !readers.isEmpty, let parsed = try? TagExpression.parse(expression) else { return (expression, readers) }
        var room = maxTags - parsed.tags.count - (format == .idOnly ? 1 : 0)
        var excluded: [String] = []
        for reader in Set(readers).sorted() where room > 0 {
            excluded.append(reader)
            room -= 1
        }
        let twice = Set(readers).subtracting(excluded).sorted()
        guard !excluded.isEmpty else { return (expression, twice) }
        return ("(" + expression + ")" + excluded.map { " && !" + $0 }.joined(), twice)
    }

    /// `entry` (a story's push to everyone) with `readers` excluded; the readers who would get it twice.
    public static func apply(to entry: inout OutboxEntry, readers: [String]) -> [String] {
        guard [.push, .repeat].contains(entry.kind), !readers.isEmpty else { return [] }
        let (tags, twice) = excluding(entry.tags, readers: readers, format: entry.format)
        entry.tags = tags
        return twice
    }

    /// What the plan says of `twice`.
    public static func note(_ twice: [String]) -> String {
        let shown = twice.prefix(5).joined(separator: ", ") + (twice.count > 5 ? " and \(twice.count - 5) more" : "")
        return "\(twice.count) readers already got this story by name and get it again (the hub takes at most "
            + "\(maxTags) tags in an expression): \(shown)"
    }
}
