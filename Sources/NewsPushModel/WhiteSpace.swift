import Foundation

extension String {
    /// `trimmingCharacters(in: .whitespacesAndNewlines)`, the same scalars trimmed, without its
    /// cost: Foundation's goes through NSString on Linux, and on each item's link and id it was
    /// a fifth of a dry run's CPU (docs/benchmarks.md). No copy when there is nothing to trim,
    /// as usual.
    public func trimmingWhiteSpace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.first, let last = scalars.last else { return self }
        if !Self.whiteSpace.contains(first) && !Self.whiteSpace.contains(last) { return self }
        guard let start = scalars.firstIndex(where: { !Self.whiteSpace.contains($0) }),
            let end = scalars.lastIndex(where: { !Self.whiteSpace.contains($0) })
        else { return "" }
        return String(scalars[start...end])
    }

    private static let whiteSpace = CharacterSet.whitespacesAndNewlines
}
