/// Validation of tag expressions against the service's rules (hub-api.md §3) before sending,
/// so a bad expression is reported as a configuration problem rather than a 400 per push.
public enum TagExpression {
    /// Checks characters, tag length, `$` prefixes, operator syntax and the tag count limits
    /// (20 tags when the expression only uses `||`, otherwise 6).
    public static func validate(_ expression: String) throws(HubError) {
        func fail(_ reason: String) -> HubError { .invalidTagExpression(expression, reason: reason) }
        if expression.contains("\r") || expression.contains("\n") {
            throw fail("line breaks are not allowed")
        }
        enum Token: Equatable { case tag(String), and, or, not, open, close }
        var tokens: [Token] = []
        let chars = Array(expression.unicodeScalars)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c == " " || c == "\t" { i += 1; continue }
            if c == "&" || c == "|" {
                guard i + 1 < chars.count, chars[i + 1] == c else { throw fail("single '\(c)' (use '\(c)\(c)')") }
                tokens.append(c == "&" ? .and : .or)
                i += 2
                continue
            }
            if c == "!" { tokens.append(.not); i += 1; continue }
            if c == "(" { tokens.append(.open); i += 1; continue }
            if c == ")" { tokens.append(.close); i += 1; continue }
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
        if tokens.isEmpty { throw fail("it is empty") }
        // Grammar: expr := term (('&&'|'||') term)* ; term := '!' term | '(' expr ')' | tag
        var position = 0
        func parseTerm() throws(HubError) {
            guard position < tokens.count else { throw fail("it ends where a tag was expected") }
            switch tokens[position] {
            case .not:
                position += 1
                try parseTerm()
            case .open:
                position += 1
                try parseExpression()
                guard position < tokens.count, tokens[position] == .close else { throw fail("a '(' is not closed") }
                position += 1
            case .tag:
                position += 1
            default:
                throw fail("an operator stands where a tag was expected")
            }
        }
        func parseExpression() throws(HubError) {
            try parseTerm()
            while position < tokens.count, tokens[position] == .and || tokens[position] == .or {
                position += 1
                try parseTerm()
            }
        }
        try parseExpression()
        if position != tokens.count { throw fail("unexpected ')' or missing operator") }
        let tagCount = tokens.filter { if case .tag = $0 { return true } else { return false } }.count
        let onlyOr = !tokens.contains(.and) && !tokens.contains(.not)
        let limit = onlyOr ? 20 : 6
        if tagCount > limit {
            throw fail("\(tagCount) tags; the hub allows at most \(limit) \(onlyOr ? "in an OR-only expression" : "when && or ! is used")")
        }
    }

    static func isTagCharacter(_ c: Unicode.Scalar) -> Bool {
        switch c {
        case "A"..."Z", "a"..."z", "0"..."9", "_", "@", "#", ".", ":", "-": return true
        default: return false
        }
    }
}
