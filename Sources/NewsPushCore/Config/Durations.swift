import Foundation

/// Durations as the config writes them (`20s`, `3h`, `1h30m`), for flags that take one too.
public enum Durations {
    /// Seconds, or nil when `text` is not a duration.
    public static func parse(_ text: String) -> Double? { NodeReader.parseDuration(text) }
}
