/// The parts of a Notification Hubs connection string
/// (`Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=…;SharedAccessKey=…`).
///
/// The key never appears in `description`, so a connection string can be logged safely.
public struct HubConnectionString: Sendable, Equatable, CustomStringConvertible {
    /// The `Endpoint` part as given, e.g. `sb://contoso.servicebus.windows.net/`.
    public let endpoint: String
    /// The namespace host taken from the endpoint, e.g. `contoso.servicebus.windows.net`.
    public let host: String
    /// The name of the shared access policy (`SharedAccessKeyName`).
    public let keyName: String
    /// The shared access key, used verbatim as the HMAC key (it is not base64-decoded).
    public let key: String

    /// Parses a connection string. Each `;`-separated part is split on its *first* `=`, because
    /// base64 keys end in `=`.
    /// Errors name the part that is wrong (by position or name), never a value: a connection
    /// string holds the key.
    public init(parsing text: String) throws(HubError) {
        var parts: [String: String] = [:]
        let pieces = text.split(separator: ";", omittingEmptySubsequences: true).map { $0.trimmingWhitespace() }.filter
        { !$0.isEmpty }
        for (index, part) in pieces.enumerated() {
            guard let eq = part.firstIndex(of: "=") else {
                throw .invalidConnectionString(
                    "part \(index + 1) of \(pieces.count) has no '=' (expected Name=value; parts are separated by ';')")
            }
            let name = String(part[..<eq]).trimmingWhitespace()
            let known = ["endpoint", "sharedaccesskeyname", "sharedaccesskey", "entitypath"]
            guard known.contains(name.lowercased()) else {
                throw .invalidConnectionString(
                    "part \(index + 1) of \(pieces.count) has an unknown name (expected Endpoint, "
                        + "SharedAccessKeyName, SharedAccessKey)"
                )
            }
            parts[name.lowercased()] = String(part[part.index(after: eq)...]).trimmingWhitespace()
        }
        var missing: [String] = []
        let endpoint = parts["endpoint"] ?? ""
        let keyName = parts["sharedaccesskeyname"] ?? ""
        let key = parts["sharedaccesskey"] ?? ""
        // A missing ';' glues the next part, key included, onto a value that is shown
        // (`Endpoint=sb://ns/SharedAccessKey=…`): no endpoint or key name holds a '='.
        for (name, value) in [("Endpoint", endpoint), ("SharedAccessKeyName", keyName)] where value.contains("=") {
            throw .invalidConnectionString("\(name) holds a '=' (is a ';' missing before the next part?)")
        }
        if endpoint.isEmpty { missing.append("Endpoint") }
        if keyName.isEmpty { missing.append("SharedAccessKeyName") }
        if key.isEmpty { missing.append("SharedAccessKey") }
        if !missing.isEmpty {
            throw .invalidConnectionString("missing \(missing.joined(separator: ", "))")
        }
        guard let host = Self.host(of: endpoint) else {
            throw .invalidConnectionString("Endpoint has no host (expected sb://NAMESPACE.servicebus.windows.net/)")
        }
        self.endpoint = endpoint
        self.host = host
        self.keyName = keyName
        self.key = key
    }

    /// `https://{host}/`: the base of every request when no other endpoint is configured.
    public var httpsBase: String { "https://\(host)/" }

    /// Endpoint and key name, never the key.
    public var description: String {
        "Endpoint=\(endpoint);SharedAccessKeyName=\(keyName);SharedAccessKey=<redacted>"
    }

    private static func host(of endpoint: String) -> String? {
        var rest = Substring(endpoint)
        if let schemeEnd = rest.range(of: "://") { rest = rest[schemeEnd.upperBound...] }
        let host = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return host.isEmpty ? nil : String(host)
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) ?? first
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
