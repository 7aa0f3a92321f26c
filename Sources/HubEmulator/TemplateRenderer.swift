import Foundation

/// Renders a registration's body template with the properties of a template send, following
/// the Notification Hubs expression language (hub-api.md §4):
/// `$(p)`, `$(p,n)`, `.(p,n)`, `%(p)`, `#(p)`, and `{'literal' + $(p)}` composites. Expressions
/// count only when they are a whole JSON string value (or XML text / attribute value); text such
/// as `"Some text. $(message)"` stays literal, as it does in the service.
public enum TemplateRenderer {
    /// Why a template cannot be rendered.
    public enum RenderError: Error, Equatable, CustomStringConvertible {
        case notJSON(String)
        /// What is wrong with the template.
        public var description: String {
            switch self {
            case .notJSON(let why): return "template is not a JSON document: \(why)"
            }
        }
    }

    /// Renders a JSON template (apple, fcmv1 registrations).
    public static func renderJSON(_ template: String, properties: [String: String]) throws -> String {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(template.utf8), options: [.fragmentsAllowed])
        } catch {
            throw RenderError.notJSON("\(error)")
        }
        let lookup = Dictionary(properties.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        let rendered = render(object, lookup)
        let data = try JSONSerialization.data(
            withJSONObject: rendered, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    }

    /// Renders an XML template (windows registrations): expressions in text and attribute values.
    public static func renderXML(_ template: String, properties: [String: String]) -> String {
        let lookup = Dictionary(properties.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        var out = ""
        var rest = Substring(template)
        // Text between tags, and quoted attribute values inside tags.
        while let open = rest.firstIndex(of: "<") {
            out += xmlValue(String(rest[..<open]), lookup)
            guard let close = rest[open...].firstIndex(of: ">") else {
                out += rest[open...]
                return out
            }
            var tag = Substring(rest[open...close])
            var renderedTag = ""
            while let quote = tag.firstIndex(where: { $0 == "\"" || $0 == "'" }) {
                let q = tag[quote]
                renderedTag += tag[...quote]
                let after = tag[tag.index(after: quote)...]
                guard let end = after.firstIndex(of: q) else {
                    renderedTag += after
                    tag = ""
                    break
                }
                renderedTag += xmlValue(String(after[..<end]), lookup) + String(q)
                tag = after[after.index(after: end)...]
            }
            out += renderedTag + tag
            rest = rest[rest.index(after: close)...]
        }
        out += xmlValue(String(rest), lookup)
        return out
    }

    /// A text or attribute value: template text stays as written (it is already XML), a value an
    /// expression produced is escaped.
    private static func xmlValue(_ text: String, _ properties: [String: String]) -> String {
        let evaluated = evaluateText(text, properties)
        if evaluated == text { return text }
        return evaluated.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&apos;")
    }

    private static func render(_ value: Any, _ properties: [String: String]) -> Any {
        switch value {
        case let dictionary as [String: Any]:
            return dictionary.mapValues { render($0, properties) }
        case let array as [Any]:
            return array.map { render($0, properties) }
        case let string as String:
            return evaluate(string, properties)
        default:
            return value
        }
    }

    /// The value of a JSON string: an expression's result (a number for a numeric `#(p)`),
    /// or the string itself.
    static func evaluate(_ text: String, _ properties: [String: String]) -> Any {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("#("), trimmed.hasSuffix(")"), let (name, _) = arguments(trimmed.dropFirst(2).dropLast()) {
            let value = properties[name.lowercased()] ?? ""
            if let number = Double(value) {
                return value.contains(".") || value.contains("e")
                    ? number as Any : (Int(value).map { $0 as Any } ?? number as Any)
            }
            return value
        }
        return evaluateText(text, properties)
    }

    static func evaluateText(_ text: String, _ properties: [String: String]) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("{"), trimmed.hasSuffix("}") {
            return composite(trimmed.dropFirst().dropLast(), properties) ?? text
        }
        if let value = single(Substring(trimmed), properties) { return value }
        return text
    }

    /// `'a' + $(b) + "c"`, or nil when it is not a well-formed composite.
    private static func composite(_ body: Substring, _ properties: [String: String]) -> String? {
        var out = ""
        var rest = body.drop { $0 == " " }
        while !rest.isEmpty {
            if let q = rest.first, q == "'" || q == "\"" {
                let after = rest.dropFirst()
                guard let end = after.firstIndex(of: q) else { return nil }
                out += after[..<end]
                rest = after[after.index(after: end)...]
            } else {
                guard let close = rest.firstIndex(of: ")"), let value = single(rest[...close], properties) else {
                    return nil
                }
                out += value
                rest = rest[rest.index(after: close)...]
            }
            rest = rest.drop { $0 == " " }
            if rest.isEmpty { break }
            guard rest.first == "+" else { return nil }
            rest = rest.dropFirst().drop { $0 == " " }
        }
        return out
    }

    /// One expression `$(p)`, `$(p,n)`, `.(p,n)`, `%(p)`; nil when `text` is not one.
    private static func single(_ text: Substring, _ properties: [String: String]) -> String? {
        guard text.count >= 4, text.hasSuffix(")") else { return nil }
        let marker = text.prefix(2)
        guard ["$(", ".(", "%("].contains(String(marker)), let (name, limit) = arguments(text.dropFirst(2).dropLast())
        else { return nil }
        let value = properties[name.lowercased()] ?? ""
        switch marker {
        case "$(":
            guard let limit else { return value }
            return String(value.prefix(limit))
        case ".(":
            guard let limit else { return value }
            if value.count <= limit { return value }
            return String(value.prefix(max(0, limit - 3))) + "..."
        default:
            return value.addingPercentEncoding(
                withAllowedCharacters: CharacterSet(
                    charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()")) ?? value
        }
    }

    /// `name` or `name,n` (names: letters, digits, _).
    private static func arguments(_ inside: Substring) -> (String, Int?)? {
        let parts = inside.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
        let name = parts[0].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            return nil
        }
        if parts.count == 2 {
            guard let n = Int(parts[1].trimmingCharacters(in: .whitespaces)), n >= 0 else { return nil }
            return (name, n)
        }
        return (name, nil)
    }
}
