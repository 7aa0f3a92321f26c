/// One thing wrong with a config file, located by file, line and key.
public struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    /// The config file.
    public var file: String
    /// The line of the problem (0 when it is the whole file).
    public var line: Int
    /// The key path, e.g. `feeds[2].category`.
    public var key: String
    /// What is wrong and what is expected.
    public var message: String

    /// A problem at `line` of `file`, under `key`.
    public init(file: String, line: Int, key: String, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    /// `file:line: key: message`.
    public var description: String {
        let place = line > 0 ? "\(file):\(line)" : file
        return key.isEmpty ? "\(place): \(message)" : "\(place): \(key): \(message)"
    }
}

/// A config that cannot be used; carries every problem found, not only the first.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// Every problem found, in the order of the file.
    public var problems: [ConfigProblem]

    /// A config with these problems.
    public init(problems: [ConfigProblem]) {
        self.problems = problems
    }

    /// The count and every problem, one a line.
    public var description: String {
        let count = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
        return "configuration error (\(count)):\n" + problems.map { "  \($0)" }.joined(separator: "\n")
    }
}
