/// Tag expressions (`World`, `a && !(b || c)`) parsed and checked against the service's rules
/// (hub-api.md §3) before sending, so a bad expression is reported as a configuration problem
/// rather than a 400 per push. The parsed form also evaluates an expression against a device's
/// tags (the emulator routes with it): `!` binds tighter than `&&`, which binds tighter than `||`.
public enum TagExpression {
    /// A parsed expression: a tag, or `!`, `&&`, `||` of expressions.
    public indirect enum Node: Sendable, Equatable {
        case tag(String)
        case not(Node)
        case and(Node, Node)
        case or(Node, Node)

        /// Whether a device with `tags` matches.
        public func matches(_ tags: Set<String>) -> Bool {
            switch self {
            case .tag(let name): return tags.contains(name)
            case .not(let inner): return !inner.matches(tags)
            case .and(let a, let b): return a.matches(tags) && b.matches(tags)
            case .or(let a, let b): return a.matches(tags) || b.matches(tags)
            }
        }
    }

    /// Checks characters, tag length, `$` prefixes, operator syntax and the tag count limits
    /// (20 tags when the expression only uses `||`, otherwise 6).
    public static func validate(_ expression: String) throws(HubError) {
        _ = try parse(expression)
    }

    /// The longest expression accepted: 20 tags of 120 characters with their operators fit.
    public static let maxLength = 3000
    /// The deepest nesting of parentheses and `!` accepted. The service allows 20 tags at most,
    /// so deeper nesting is never useful; bounding it keeps parsing and matching (both recursive)
    /// from exhausting the stack on hostile input.
    public static let maxDepth = 32

    /// Parses and checks an expression (see `validate`).
    public static func parse(_ expression: String) throws(HubError) -> Node {
        // The message never repeats a huge expression: its start is enough to find it.
        let shown = expression.utf8.count <= 200 ? expression : String(expression.prefix(60)) + "…"
        func fail(_ reason: String) -> HubError { .invalidTagExpression(shown, reason: reason) }
        if expression.utf8.count > maxLength {
            throw fail("it is \(expression.utf8.count) characters long; at most \(maxLength) are accepted")
        }
        if expression.contains("\r") || expression.contains("\n") {
            throw fail("line breaks are not allowed")
        }
        try checkDepth(expression, fail: fail)
        let tokens = try tokenize(expression, fail: fail)
        if tokens.isEmpty { throw fail("it is empty") }
        var parser = Parser(tokens: tokens, fail: fail)
        let node = try parser.parseOr()
        if parser.position != tokens.count { throw fail("unexpected ')' or missing operator") }
        let tagCount = tokens.filter { if case .tag = $0 { return true } else { return false } }.count
        let onlyOr = !tokens.contains(.and) && !tokens.contains(.not)
        let limit = onlyOr ? 20 : 6
        if tagCount > limit {
            throw fail(
                "\(tagCount) tags; the hub allows at most \(limit) "
                    + "\(onlyOr ? "in an OR-only expression" : "when && or ! is used")"
            )
        }
        return node
    }

    /// Nesting measured with a counter before anything recursive runs: open parentheses plus
    /// the `!` in front of the current operand.
    static func checkDepth(_ expression: String, fail: (String) -> HubError) throws(HubError) {
        var open = 0, nots = 0
        for byte in expression.utf8 {
            switch byte {
            case UInt8(ascii: "("): open += 1
            case UInt8(ascii: ")"):
                open -= 1
                nots = 0
            case UInt8(ascii: "!"): nots += 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"): continue
            default: nots = 0
            }
            if open + nots > maxDepth { throw fail("it nests deeper than \(maxDepth) levels of parentheses and '!'") }
        }
    }

    enum Token: Equatable { case tag(String), and, or, not, open, close }

    static func tokenize(_ expression: String, fail: (String) -> HubError) throws(HubError) -> [Token] {
        var tokens: [Token] = []
        let chars = Array(expression.unicodeScalars)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c == " " || c == "\t" {
                i += 1
                continue
            }
            if c == "&" || c == "|" {
                guard i + 1 < chars.count, chars[i + 1] == c else { throw fail("single '\(c)' (use '\(c)\(c)')") }
                tokens.append(c == "&" ? .and : .or)
                i += 2
                continue
            }
            if c == "!" {
                tokens.append(.not)
                i += 1
                continue
            }
            if c == "(" {
                tokens.append(.open)
                i += 1
                continue
            }
            if c == ")" {
                tokens.append(.close)
                i += 1
                continue
            }
            var tag = ""
            while i < chars.count, isTagCharacter(chars[i]) {
                tag.unicodeScalars.append(chars[i])
                i += 1
            }
            if tag.isEmpty {
                if chars[i] == "$" { throw fail("tags cannot start with '$'") }
                throw fail("character '\(chars[i])' is not allowed in a tag (letters, digits and _ @ # . : - only)")
            }
            if tag.count > 120 { throw fail("tag '\(tag.prefix(20))…' is longer than 120 characters") }
            tokens.append(.tag(tag))
        }
        return tokens
    }

    /// or := and ('||' and)* ; and := unary ('&&' unary)* ; unary := '!' unary | '(' or ')' | tag
    struct Parser {
        let tokens: [Token]
        let fail: (String) -> HubError
        var position = 0

        mutating func parseOr() throws(HubError) -> Node {
            var left = try parseAnd()
            while position < tokens.count, tokens[position] == .or {
                position += 1
                left = .or(left, try parseAnd())
            }
            return left
        }

        mutating func parseAnd() throws(HubError) -> Node {
            var left = try parseUnary()
            while position < tokens.count, tokens[position] == .and {
                position += 1
                left = .and(left, try parseUnary())
            }
            return left
        }

        mutating func parseUnary() throws(HubError) -> Node {
            guard position < tokens.count else { throw fail("it ends where a tag was expected") }
            let token = tokens[position]
            position += 1
            switch token {
            case .not:
                return .not(try parseUnary())
            case .open:
                let inner = try parseOr()
                guard position < tokens.count, tokens[position] == .close else { throw fail("a '(' is not closed") }
                position += 1
                return inner
            case .tag(let name):
                return .tag(name)
            default:
                throw fail("an operator stands where a tag was expected")
            }
        }
    }

    static func isTagCharacter(_ c: Unicode.Scalar) -> Bool {
        switch c {
        case "A"..."Z", "a"..."z", "0"..."9", "_", "@", "#", ".", ":", "-": return true
        default: return false
        }
    }
}

extension TagExpression.Node {
    /// The tags the expression names.
    public var tags: Set<String> {
        switch self {
        case .tag(let name): return [name]
        case .not(let inner): return inner.tags
        case .and(let a, let b), .or(let a, let b): return a.tags.union(b.tags)
        }
    }

    /// Whether some device can match both this expression and `other`, when the tags for which
    /// `absent` is true are carried by no such device (a user's own tag, say). A search over
    /// the tags the two name, cut short as soon as a partial choice decides: an expression has
    /// at most 20 tags, and the search is linear in practice.
    public func canOverlap(_ other: TagExpression.Node, absent: (String) -> Bool = { _ in false }) -> Bool {
        let both = TagExpression.Node.and(self, other)
        var known: [String: Bool] = [:]
        var open: [String] = []
        for tag in both.tags.sorted() {
            if absent(tag) { known[tag] = false } else { open.append(tag) }
        }
        return Self.satisfiable(both, known: &known, open: open[...])
    }

    private static func satisfiable(
        _ node: TagExpression.Node, known: inout [String: Bool], open: ArraySlice<String>
    ) -> Bool {
        if let value = node.value(known) { return value }
        guard let tag = open.first else { return false }
        for choice in [true, false] {
            known[tag] = choice
            if satisfiable(node, known: &known, open: open.dropFirst()) {
                known[tag] = nil
                return true
            }
        }
        known[tag] = nil
        return false
    }

    /// The expression's value when the tags in `known` are decided: nil when it depends on others.
    func value(_ known: [String: Bool]) -> Bool? {
        switch self {
        case .tag(let name): return known[name]
        case .not(let inner): return inner.value(known).map { !$0 }
        case .and(let a, let b):
            let x = a.value(known), y = b.value(known)
            if x == false || y == false { return false }
            return x == true && y == true ? true : nil
        case .or(let a, let b):
            let x = a.value(known), y = b.value(known)
            if x == true || y == true { return true }
            return x == false && y == false ? false : nil
        }
    }
}

extension TagExpression {
    /// An expression once some tag is decided: true or false whatever the others, or what is left.
    public enum Decided: Sendable, Equatable {
        case constant(Bool)
        case depends(Node)
    }
}

extension TagExpression.Node {
    /// The expression with `tag` decided (`value`), simplified: a constant when nothing else is
    /// left to decide (`username:alice` with alice's tag false is false: it reached her alone),
    /// else what is left (`World && !username:alice` with her tag false is `World`: what it meant
    /// for everyone else). What a forget leaves of a push's expression (SPEC §9).
    public func deciding(_ tag: String, as value: Bool) -> TagExpression.Decided {
        switch self {
        case .tag(let name): return name == tag ? .constant(value) : .depends(self)
        case .not(let inner):
            switch inner.deciding(tag, as: value) {
            case .constant(let constant): return .constant(!constant)
            case .depends(let node): return .depends(.not(node))
            }
        case .and(let a, let b):
            switch (a.deciding(tag, as: value), b.deciding(tag, as: value)) {
            case (.constant(false), _), (_, .constant(false)): return .constant(false)
            case (.constant(true), let other), (let other, .constant(true)): return other
            case (.depends(let x), .depends(let y)): return .depends(.and(x, y))
            }
        case .or(let a, let b):
            switch (a.deciding(tag, as: value), b.deciding(tag, as: value)) {
            case (.constant(true), _), (_, .constant(true)): return .constant(true)
            case (.constant(false), let other), (let other, .constant(false)): return other
            case (.depends(let x), .depends(let y)): return .depends(.or(x, y))
            }
        }
    }

    /// The expression as the hub reads it, with only the parentheses it needs (`!` binds tighter
    /// than `&&`, which binds tighter than `||`).
    public var text: String {
        switch self {
        case .tag(let name): return name
        case .not(let inner):
            if case .tag = inner { return "!" + inner.text }
            return "!(" + inner.text + ")"
        case .and(let a, let b): return [a, b].map { $0.isOr ? "(\($0.text))" : $0.text }.joined(separator: " && ")
        case .or(let a, let b): return a.text + " || " + b.text
        }
    }

    private var isOr: Bool {
        if case .or = self { return true }
        return false
    }
}
