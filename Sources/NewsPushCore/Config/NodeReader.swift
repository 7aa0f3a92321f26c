import Foundation
import NewsPushModel
import Yams

/// Reads typed values out of a YAML node tree, recording a located problem for each mistake
/// instead of stopping at the first one.
final class NodeReader {
    let file: String
    let environment: [String: String]
    private(set) var problems: [ConfigProblem] = []

    init(file: String, environment: [String: String]) {
        self.file = file
        self.environment = environment
    }

    /// A mapping's keys, or nothing (with a problem recorded) when the node is not a mapping.
    struct MappingView {
        var present: Bool
        var values: [String: Node]
        subscript(key: String) -> Node? { values[key] }
    }

    /// Forgets the problems found since there were `count` (a section the command ignores).
    func dropProblems(after count: Int) {
        problems.removeSubrange(count...)
    }

    func report(_ node: Node, _ key: String, _ message: String) {
        problems.append(ConfigProblem(file: file, line: node.mark?.line ?? 0, key: key, message: message))
    }

    /// A value as the file writes it, for a message: what a `${VAR}` reference expands to may be
    /// a secret (fuzzing found the hub's connection string, key included, quoted back from a
    /// feed URL that referenced it), so messages quote the node's own text, never its
    /// expansion, and nothing is searched for and replaced afterwards.
    func written(_ node: Node) -> String {
        if case .scalar(let scalar) = node { return scalar.string }
        return describe(node)
    }

    /// Whether the node's value comes (in part) from the environment.
    func isExpanded(_ node: Node) -> Bool { written(node).contains("${") }

    enum Piece {
        case text(Substring)
        case reference(String)
    }

    /// `text` as literal runs and `${NAME}` references (names as written, not yet checked);
    /// `unterminated` when a `${` is never closed (what follows it is the last literal run).
    static func references(in text: String) -> (pieces: [Piece], unterminated: Bool) {
        var pieces: [Piece] = []
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                pieces.append(.text(rest))
                return (pieces, true)
            }
            pieces.append(.text(rest[..<start.lowerBound]))
            pieces.append(.reference(String(rest[start.upperBound..<end])))
            rest = rest[rest.index(after: end)...]
        }
        pieces.append(.text(rest))
        return (pieces, false)
    }

    private func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar(let s): return node.null != nil || s.string.isEmpty ? "empty" : "'\(s.string)'"
        case .alias: return "an alias"
        }
    }

    func mapping(_ node: Node, path: String, allowed: Set<String>) -> MappingView {
        guard case .mapping(let mapping) = node else {
            report(node, path, "must be a mapping of keys to values, not \(describe(node))")
            return MappingView(present: false, values: [:])
        }
        var values: [String: Node] = [:]
        for (keyNode, value) in mapping {
            let key = keyNode.scalar?.string ?? ""
            let full = path.isEmpty ? key : "\(path).\(key)"
            if !allowed.contains(key) {
                let hint = Self.closest(to: key, in: allowed).map { " (did you mean '\($0)'?)" } ?? ""
                report(keyNode, full, "unknown key\(hint); allowed here: \(allowed.sorted().joined(separator: ", "))")
                continue
            }
            values[key] = value
        }
        return MappingView(present: true, values: values)
    }

    func pairs(_ node: Node, path: String) -> [(Node, Node)] {
        guard case .mapping(let mapping) = node else {
            report(node, path, "must be a mapping, not \(describe(node))")
            return []
        }
        return mapping.map { ($0.key, $0.value) }
    }

    func elements(_ node: Node, path: String) -> [Node] {
        guard case .sequence(let sequence) = node else {
            report(node, path, "must be a list, not \(describe(node))")
            return []
        }
        return Array(sequence)
    }

    /// A scalar's text with `${VAR}` references expanded from the environment.
    func string(_ node: Node, path: String) -> String? {
        guard case .scalar(let scalar) = node else {
            report(node, path, "must be a single value, not \(describe(node))")
            return nil
        }
        if node.null != nil && scalar.style == .plain {
            report(node, path, "needs a value")
            return nil
        }
        return expand(scalar.string, node: node, path: path)
    }

    private func expand(_ text: String, node: Node, path: String) -> String? {
        guard text.contains("${") else { return text }
        let (pieces, unterminated) = Self.references(in: text)
        var out = ""
        var ok = true
        for piece in pieces {
            switch piece {
            case .text(let literal):
                out += literal
            case .reference(let name)
            where name.isEmpty || !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }):
                report(node, path, "'${\(name)}' is not a valid variable reference")
                ok = false
            case .reference(let name):
                if let value = environment[name] {
                    out += value
                } else {
                    report(node, path, "environment variable \(name) is not set")
                    ok = false
                }
            }
        }
        if unterminated { report(node, path, "unterminated ${ reference") }
        return ok && !unterminated ? out : nil
    }

    func integer(_ node: Node, path: String, range: ClosedRange<Int>) -> Int? {
        guard let text = string(node, path: path) else { return nil }
        guard let value = Int(text) else {
            report(node, path, "must be a whole number, not '\(written(node))'")
            return nil
        }
        guard range.contains(value) else {
            report(node, path, "must be between \(range.lowerBound) and \(range.upperBound), not \(written(node))")
            return nil
        }
        return value
    }

    /// Seconds from `500ms`, `20s`, `15m`, `3h`, `2d`, `1w` or combinations like `1h30m`.
    func duration(_ node: Node, path: String) -> Double? {
        guard let text = string(node, path: path) else { return nil }
        if let value = Self.parseDuration(text) { return value }
        report(node, path, "'\(written(node))' is not a duration (examples: 20s, 15m, 3h, 2d, 1h30m)")
        return nil
    }

    static func parseDuration(_ text: String) -> Double? {
        let units: [String: Double] = ["ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        var total = 0.0
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isLetter }
            guard let factor = units[unit.lowercased()] else { return nil }
            rest = rest.dropFirst(unit.count)
            total += value * factor
        }
        return total
    }

    /// Bytes from `512KB`, `10MB`, `1GB` (powers of 1024; KiB/MiB/GiB accepted) or a plain number.
    func size(_ node: Node, path: String) -> Int? {
        guard let text = string(node, path: path) else { return nil }
        if let value = Self.parseSize(text) { return value }
        report(node, path, "'\(written(node))' is not a size (examples: 512KB, 10MB)")
        return nil
    }

    static func parseSize(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let number = trimmed.prefix { $0.isNumber || $0 == "." }
        guard let value = Double(number), value >= 0 else { return nil }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces).uppercased()
        let factors: [String: Double] = [
            "": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024,
            "M": 1_048_576, "MB": 1_048_576, "MIB": 1_048_576,
            "G": 1_073_741_824, "GB": 1_073_741_824, "GIB": 1_073_741_824,
        ]
        guard let factor = factors[unit] else { return nil }
        return Int(value * factor)
    }

    /// Minutes after midnight from `HH:MM`.
    func clockTime(_ node: Node, path: String) -> Int? {
        guard let text = string(node, path: path) else { return nil }
        let parts = text.split(separator: ":")
        if parts.count == 2, let h = Int(parts[0]), let m = Int(parts[1]), (0..<24).contains(h), (0..<60).contains(m) {
            return h * 60 + m
        }
        report(node, path, "'\(written(node))' is not a time of day (HH:MM, e.g. \"23:00\")")
        return nil
    }

    func url(_ node: Node, path: String, schemes: Set<String>) -> String? {
        guard let text = string(node, path: path) else { return nil }
        let scheme = text.range(of: "://").map { text[..<$0.lowerBound].lowercased() } ?? ""
        let host = URLComponents(string: text)?.host ?? ""
        if !schemes.contains(scheme) || text.isEmpty || (scheme != "" && host.isEmpty && scheme != "file") {
            report(
                node, path,
                "'\(written(node))' is not a usable URL (\(schemes.filter { !$0.isEmpty }.sorted().joined(separator: ", ")))"
            )
            return nil
        }
        return text
    }

    /// A language tag (`fr`, `pt-BR`), lower-cased, with `_` for `-` so it can end a template
    /// property name (`messageParam_pt_br`).
    func language(_ node: Node, path: String) -> String? {
        guard let text = string(node, path: path) else { return nil }
        guard (try? #/[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?/#.wholeMatch(in: text)) != nil else {
            report(node, path, "'\(written(node))' is not a language code (examples: en, fr, pt-BR)")
            return nil
        }
        return Languages.normalized(text)
    }

    func category(_ node: Node, name: String, path: String) -> NewsCategory? {
        if let category = NewsCategory(rawValue: name) { return category }
        let names = NewsCategory.allCases.map(\.rawValue)
        let hint = Self.closest(to: name, in: Set(names)).map { " (did you mean \($0)?)" } ?? ""
        report(
            node, path, "unknown category '\(written(node))'\(hint); categories are \(names.joined(separator: ", "))")
        return nil
    }

    /// The allowed word nearest to a misspelling, when it is near enough to suggest.
    static func closest(to word: String, in candidates: Set<String>) -> String? {
        let lower = word.lowercased()
        var best: (word: String, distance: Int)?
        for candidate in candidates.sorted() {
            let distance = editDistance(lower, candidate.lowercased())
            if distance < best?.distance ?? Int.max { best = (candidate, distance) }
        }
        guard let best, best.distance <= max(2, lower.count / 3) else { return nil }
        return best.word
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(1, b.count) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
