import Foundation

/// A value of the small Python subset the feedparser suite's `Expect:` lines use.
indirect enum PyValue: Equatable {
    case none
    case bool(Bool)
    case int(Int)
    case str(String)
    case list([PyValue])
    case dict([String: PyValue])

    var truthy: Bool {
        switch self {
        case .none: return false
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .str(let s): return !s.isEmpty
        case .list(let l): return !l.isEmpty
        case .dict(let d): return !d.isEmpty
        }
    }
}

struct EvaluationError: Error, CustomStringConvertible {
    var description: String
}

/// Evaluates `Expect:` expressions (`not bozo and entries[0]['title'] == 'A'`, `ord(...)`,
/// `len(...)`, `.get(...)`, attribute access on dictionaries) against a result dictionary.
/// Test-only: the suite's expectations are Python, and this is the subset they need.
struct ExpectEvaluator {
    enum Token: Equatable { case name(String), str(String), int(Int), op(String) }

    let scope: [String: PyValue]
    /// How strings are compared: newspush outputs plain text, so both sides go through the same
    /// markup-to-text normalisation before `==`.
    let normalize: (String) -> String
    private var tokens: [Token] = []
    private var position = 0

    init(scope: [String: PyValue], normalize: @escaping (String) -> String = { $0 }) {
        self.scope = scope
        self.normalize = normalize
    }

    private func equal(_ a: PyValue, _ b: PyValue) -> Bool {
        // Either side may be newspush's plain text (already normalised) or the suite's HTML.
        if case .str(let x) = a, case .str(let y) = b {
            return x == y || x == normalize(y) || normalize(x) == y || normalize(x) == normalize(y)
        }
        return a == b
    }

    mutating func evaluate(_ source: String) throws -> Bool {
        tokens = try Self.tokenize(source)
        position = 0
        let value = try parseOr()
        guard position == tokens.count else {
            throw EvaluationError(description: "unparsed input at token \(position)")
        }
        return value.truthy
    }

    static func tokenize(_ source: String) throws -> [Token] {
        var tokens: [Token] = []
        let chars = Array(source.unicodeScalars)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c == " " || c == "\t" {
                i += 1
                continue
            }
            if CharacterSet.letters.contains(c) || c == "_" {
                var name = ""
                while i < chars.count, CharacterSet.alphanumerics.contains(chars[i]) || chars[i] == "_" {
                    name.unicodeScalars.append(chars[i])
                    i += 1
                }
                // String prefixes u'' b'' r''
                if ["u", "b", "r", "U"].contains(name), i < chars.count, chars[i] == "'" || chars[i] == "\"" {
                    continue
                }
                tokens.append(.name(name))
                continue
            }
            if CharacterSet.decimalDigits.contains(c) {
                var digits = ""
                while i < chars.count, CharacterSet.decimalDigits.contains(chars[i]) {
                    digits.unicodeScalars.append(chars[i])
                    i += 1
                }
                tokens.append(.int(Int(digits)!))
                continue
            }
            if c == "'" || c == "\"", i + 2 < chars.count, chars[i + 1] == c, chars[i + 2] == c {
                // A triple-quoted string: everything up to the closing triple quote, unescaped.
                i += 3
                var text = String.UnicodeScalarView()
                while i + 2 < chars.count, !(chars[i] == c && chars[i + 1] == c && chars[i + 2] == c) {
                    text.append(chars[i])
                    i += 1
                }
                i += 3
                tokens.append(.str(String(text)))
                continue
            }
            if c == "'" || c == "\"" {
                i += 1
                var text = String.UnicodeScalarView()
                while i < chars.count, chars[i] != c {
                    if chars[i] == "\\", i + 1 < chars.count {
                        let e = chars[i + 1]
                        func hex(_ n: Int) throws -> Unicode.Scalar {
                            guard i + 2 + n <= chars.count,
                                let v = UInt32(
                                    String(String.UnicodeScalarView(chars[(i + 2)..<(i + 2 + n)])), radix: 16),
                                let s = Unicode.Scalar(v)
                            else { throw EvaluationError(description: "bad escape") }
                            i += 2 + n
                            return s
                        }
                        switch e {
                        case "x":
                            text.append(try hex(2))
                            continue
                        case "u":
                            text.append(try hex(4))
                            continue
                        case "U":
                            text.append(try hex(8))
                            continue
                        case "n": text.append("\n")
                        case "t": text.append("\t")
                        case "r": text.append("\r")
                        default: text.append(e)
                        }
                        i += 2
                        continue
                    }
                    text.append(chars[i])
                    i += 1
                }
                i += 1
                tokens.append(.str(String(text)))
                continue
            }
            let two = i + 1 < chars.count ? String(String.UnicodeScalarView([c, chars[i + 1]])) : ""
            if ["==", "!=", "<=", ">="].contains(two) {
                tokens.append(.op(two))
                i += 2
                continue
            }
            if "[](),.<>:".unicodeScalars.contains(c) {
                tokens.append(.op(String(c)))
                i += 1
                continue
            }
            throw EvaluationError(description: "unexpected character \(c)")
        }
        return tokens
    }

    private var current: Token? { position < tokens.count ? tokens[position] : nil }

    private mutating func accept(_ token: Token) -> Bool {
        if current == token {
            position += 1
            return true
        }
        return false
    }

    private mutating func parseOr() throws -> PyValue {
        var left = try parseAnd()
        while accept(.name("or")) {
            let right = try parseAnd()
            left = left.truthy ? left : right
        }
        return left
    }

    private mutating func parseAnd() throws -> PyValue {
        var left = try parseNot()
        while accept(.name("and")) {
            let right = try parseNot()
            left = left.truthy ? right : left
        }
        return left
    }

    private mutating func parseNot() throws -> PyValue {
        if accept(.name("not")) { return .bool(!(try parseNot()).truthy) }
        return try parseComparison()
    }

    private mutating func parseComparison() throws -> PyValue {
        let left = try parsePostfix()
        if current == .op("==") {
            // Python chains comparisons: a == b == c
            var previous = left
            var result = true
            while accept(.op("==")) {
                let next = try parsePostfix()
                result = result && equal(previous, next)
                previous = next
            }
            return .bool(result)
        }
        if accept(.op("!=")) { return .bool(!equal(left, try parsePostfix())) }
        if accept(.name("in")) { return .bool(try contains(try parsePostfix(), left)) }
        if current == .name("not"), position + 1 < tokens.count, tokens[position + 1] == .name("in") {
            position += 2
            return .bool(!(try contains(try parsePostfix(), left)))
        }
        if accept(.op(">")) {
            if case .int(let a) = left, case .int(let b) = try parsePostfix() { return .bool(a > b) }
        }
        return left
    }

    private func contains(_ container: PyValue, _ item: PyValue) throws -> Bool {
        switch (container, item) {
        case (.str(let s), .str(let sub)): return s.contains(sub)
        case (.list(let l), _): return l.contains(item)
        case (.dict(let d), .str(let k)): return d[k] != nil
        default: throw EvaluationError(description: "bad 'in'")
        }
    }

    private mutating func parsePostfix() throws -> PyValue {
        var value = try parsePrimary()
        while true {
            if accept(.op("[")) {
                let index = try parseOr()
                guard accept(.op("]")) else { throw EvaluationError(description: "missing ]") }
                value = try item(value, index)
            } else if accept(.op(".")) {
                guard case .name(let name)? = current else { throw EvaluationError(description: "name expected") }
                position += 1
                if accept(.op("(")) {
                    var args: [PyValue] = []
                    while !accept(.op(")")) {
                        args.append(try parseOr())
                        _ = accept(.op(","))
                    }
                    value = try method(value, name, args)
                } else {
                    value = try item(value, .str(name))
                }
            } else {
                return value
            }
        }
    }

    private func method(_ value: PyValue, _ name: String, _ args: [PyValue]) throws -> PyValue {
        switch (value, name) {
        case (.dict(let d), "get"):
            guard case .str(let key)? = args.first else { throw EvaluationError(description: "get needs a key") }
            return d[key] ?? (args.count > 1 ? args[1] : .none)
        case (.dict(let d), "keys"): return .list(d.keys.sorted().map { .str($0) })
        case (.str(let s), "startswith"): if case .str(let p)? = args.first { return .bool(s.hasPrefix(p)) }
        case (.str(let s), "endswith"): if case .str(let p)? = args.first { return .bool(s.hasSuffix(p)) }
        case (.str(let s), "strip"): return .str(s.trimmingCharacters(in: .whitespacesAndNewlines))
        default: break
        }
        throw EvaluationError(description: "unsupported method \(name)")
    }

    private func item(_ value: PyValue, _ index: PyValue) throws -> PyValue {
        switch (value, index) {
        case (.dict(let d), .str(let key)):
            guard let v = d[key] else { throw EvaluationError(description: "no key '\(key)'") }
            return v
        case (.list(let l), .int(let i)):
            let j = i < 0 ? l.count + i : i
            guard l.indices.contains(j) else { throw EvaluationError(description: "index \(i) out of range") }
            return l[j]
        default:
            throw EvaluationError(description: "cannot subscript")
        }
    }

    private mutating func parsePrimary() throws -> PyValue {
        guard let token = current else { throw EvaluationError(description: "unexpected end") }
        position += 1
        switch token {
        case .str(var s):
            while case .str(let more)? = current {
                s += more
                position += 1
            }  // implicit concatenation
            return .str(s)
        case .int(let i): return .int(i)
        case .op("("):
            let value = try parseOr()
            if accept(.op(",")) {  // a tuple
                var items = [value]
                while !accept(.op(")")) {
                    items.append(try parseOr())
                    _ = accept(.op(","))
                }
                return .list(items)
            }
            guard accept(.op(")")) else { throw EvaluationError(description: "missing )") }
            return value
        case .op("["):
            var items: [PyValue] = []
            while !accept(.op("]")) {
                items.append(try parseOr())
                _ = accept(.op(","))
            }
            return .list(items)
        case .name("True"): return .bool(true)
        case .name("False"): return .bool(false)
        case .name("None"): return .none
        case .name(let name) where ["ord", "len", "str", "bool"].contains(name):
            guard accept(.op("(")) else { throw EvaluationError(description: "call expected") }
            let argument = try parseOr()
            guard accept(.op(")")) else { throw EvaluationError(description: "missing )") }
            switch (name, argument) {
            case ("ord", .str(let s)) where s.unicodeScalars.count == 1: return .int(Int(s.unicodeScalars.first!.value))
            case ("len", .str(let s)): return .int(s.count)
            case ("len", .list(let l)): return .int(l.count)
            case ("len", .dict(let d)): return .int(d.count)
            case ("bool", let v): return .bool(v.truthy)
            case ("str", .str(let s)): return .str(s)
            default: throw EvaluationError(description: "unsupported call \(name)")
            }
        case .name(let name):
            guard let value = scope[name] else { throw EvaluationError(description: "unknown name \(name)") }
            return value
        default:
            throw EvaluationError(description: "unexpected token \(token)")
        }
    }
}
