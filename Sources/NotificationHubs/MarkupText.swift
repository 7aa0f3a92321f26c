import Foundation

/// Text in XML or HTML markup: the one escaper of newspush (WNS toasts, the desk's pages).
public enum MarkupText {
    /// `&`, `<`, `>`, `"` and `'` as character references (safe in text and in quoted attributes).
    public static func escaped(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 38 || $0 == 60 || $0 == 62 || $0 == 34 || $0 == 39 }) else {
            return value
        }
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count + 16)
        for character in value.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
