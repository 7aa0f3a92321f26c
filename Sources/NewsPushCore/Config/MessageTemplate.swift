import Foundation

/// The `{name}` placeholders of a push message and their rendering.
public enum MessageTemplate {
    /// The names inside `{…}` in `template`.
    public static func placeholders(in template: String) -> Set<String> {
        var names: Set<String> = []
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            let after = rest[rest.index(after: open)...]
            guard let close = after.firstIndex(of: "}") else { break }
            names.insert(String(after[..<close]))
            rest = after[after.index(after: close)...]
        }
        return names
    }

    /// `template` with each `{name}` replaced by `values[name]` ("" when absent).
    public static func render(_ template: String, _ values: [String: String]) -> String {
        var out = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            let after = rest[rest.index(after: open)...]
            guard let close = after.firstIndex(of: "}") else {
                out += rest[open...]
                return out
            }
            out += values[String(after[..<close])] ?? ""
            rest = after[after.index(after: close)...]
        }
        out += rest
        return out
    }
}
