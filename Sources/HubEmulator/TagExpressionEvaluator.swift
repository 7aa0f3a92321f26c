import NotificationHubs

/// A parsed tag expression (`a && !(b || c)`), evaluated against a device's tags the way the
/// service routes a send: `!` binds tighter than `&&`, which binds tighter than `||`.
public indirect enum TagPredicate: Sendable, Equatable {
    case tag(String)
    case not(TagPredicate)
    case and(TagPredicate, TagPredicate)
    case or(TagPredicate, TagPredicate)

    /// Parses an expression the client side already validated (`TagExpression.validate`).
    public init(parsing expression: String) throws(HubError) {
        try TagExpression.validate(expression)
        var parser = Parser(tokens: Self.tokenize(expression))
        self = parser.parseOr()
    }

    /// Whether a device with `tags` matches.
    public func matches(_ tags: Set<String>) -> Bool {
        switch self {
        case .tag(let name): return tags.contains(name)
        case .not(let inner): return !inner.matches(tags)
        case .and(let a, let b): return a.matches(tags) && b.matches(tags)
        case .or(let a, let b): return a.matches(tags) || b.matches(tags)
        }
    }

    enum Token: Equatable { case tag(String), and, or, not, open, close }

    static func tokenize(_ text: String) -> [Token] {
        var tokens: [Token] = []
        let chars = Array(text)
        var i = 0
        while i < chars.count {
            switch chars[i] {
            case " ", "\t": i += 1
            case "&": tokens.append(.and); i += 2
            case "|": tokens.append(.or); i += 2
            case "!": tokens.append(.not); i += 1
            case "(": tokens.append(.open); i += 1
            case ")": tokens.append(.close); i += 1
            default:
                var name = ""
                while i < chars.count, !" \t&|!()".contains(chars[i]) { name.append(chars[i]); i += 1 }
                tokens.append(.tag(name))
            }
        }
        return tokens
    }

    struct Parser {
        var tokens: [Token]
        var position = 0

        mutating func parseOr() -> TagPredicate {
            var left = parseAnd()
            while position < tokens.count, tokens[position] == .or {
                position += 1
                left = .or(left, parseAnd())
            }
            return left
        }

        mutating func parseAnd() -> TagPredicate {
            var left = parseUnary()
            while position < tokens.count, tokens[position] == .and {
                position += 1
                left = .and(left, parseUnary())
            }
            return left
        }

        mutating func parseUnary() -> TagPredicate {
            guard position < tokens.count else { return .tag("") }
            let token = tokens[position]
            position += 1
            switch token {
            case .not: return .not(parseUnary())
            case .open:
                let inner = parseOr()
                if position < tokens.count, tokens[position] == .close { position += 1 }
                return inner
            case .tag(let name): return .tag(name)
            default: return .tag("")
            }
        }
    }
}
