/// One thing wrong with a config file, located by file, line and key.
public struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    /// The key path, e.g. `feeds[2].category`.
    public var key: String
    public var message: String

    public var description: String {
        key.isEmpty ? "\(file):\(line): \(message)" : "\(file):\(line): \(key): \(message)"
    }
}

/// A config that cannot be used; carries every problem found, not only the first.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public var problems: [ConfigProblem]

    public var description: String {
        let count = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
        return "configuration error (\(count)):\n" + problems.map { "  \($0)" }.joined(separator: "\n")
    }
}
