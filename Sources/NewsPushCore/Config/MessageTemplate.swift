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

    /// Whether every push made with `template` could show nothing: rendered with a headline and
    /// a category (never blank: the run and `publish` refuse blank headlines) and without the
    /// values that may be empty (source, link, summary), nothing readable is left.
    public static func rendersBlank(_ template: String) -> Bool {
        AlertText.isBlank(render(template, ["title": "Headline", "category": "Category"]))
    }

    /// What a template with `unknown` placeholders is told (and which are known, when given).
    public static func unknownProblem(_ unknown: Set<String>, known: String? = nil) -> String {
        "unknown placeholder \(unknown.sorted().map { "{\($0)}" }.joined(separator: ", "))"
            + (known.map { " (known: \($0))" } ?? "")
    }

    /// What a blank template is told.
    public static let blankProblem =
        "renders blank: a push would show an empty alert; write words or {title} into it"
}
