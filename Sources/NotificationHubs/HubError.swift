/// Everything that can go wrong talking to a hub, worded so the user knows what to fix.
public enum HubError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidConnectionString(String)
    case invalidTagExpression(String, reason: String)
    case invalidPropertyName(String)
    case payloadTooLarge(bytes: Int, limit: Int, largest: String? = nil)
    case invalidPayload(String)

    /// What went wrong and what to check.
    public var description: String {
        switch self {
        case .invalidConnectionString(let why):
            return "invalid hub connection string: \(why)"
        case .invalidTagExpression(let expression, let reason):
            return "invalid tag expression '\(expression)': \(reason)"
        case .invalidPropertyName(let name):
            return "invalid template property name '\(name)': only letters, digits and _ are allowed (at most 120)"
        case .payloadTooLarge(let bytes, let limit, let largest):
            let culprit = largest.map { "; the largest part is \($0)" } ?? ""
            return "notification payload is \(bytes) bytes, over the limit of \(limit) bytes\(culprit): shorten it"
        case .invalidPayload(let why):
            return "invalid notification payload: \(why)"
        }
    }
}
