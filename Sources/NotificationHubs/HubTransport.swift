import Foundation

/// One HTTP request to the hub, fully formed.
public struct HubRequest: Sendable, Equatable {
    /// GET, POST or DELETE.
    public var method: String
    /// The full URL, query included.
    public var url: String
    /// Header fields in the order they are sent.
    public var headers: [(name: String, value: String)]
    /// The body (empty for GET and DELETE).
    public var body: Data

    /// A request ready to go out.
    public init(method: String, url: String, headers: [(name: String, value: String)], body: Data) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The first value of a header field, matched without regard to case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Same method, URL, headers and body.
    public static func == (lhs: HubRequest, rhs: HubRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    /// The request as text, exactly as it would go out, with the token's signature hidden.
    public func redactedDescription() -> String {
        var lines = ["\(method) \(url)"]
        for (name, value) in headers {
            lines.append("\(name): \(name.lowercased() == "authorization" ? Self.redactSignature(value) : value)")
        }
        lines.append("")
        lines.append(String(decoding: body, as: UTF8.self))
        return lines.joined(separator: "\n")
    }

    /// Replaces the `sig=` value of a SAS token with `<redacted>`.
    public static func redactSignature(_ token: String) -> String {
        guard let range = token.range(of: "sig=") else { return token }
        let end = token[range.upperBound...].firstIndex(of: "&") ?? token.endIndex
        return token.replacingCharacters(in: range.upperBound..<end, with: "<redacted>")
    }
}

/// What the hub answered.
public struct HubResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// Header fields with lower-cased names.
    public var headers: [String: String]
    /// The body.
    public var body: Data
    /// The status line's reason phrase: the service words some errors only there (`401 40103:
    /// Invalid authorization token signature`, with an empty body).
    public var reason: String

    /// A response as the transport received it.
    public init(status: Int, headers: [String: String], body: Data, reason: String = "") {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.body = body
        self.reason = reason
    }
}

/// Why a request got no HTTP answer, split by whether the hub may have received it.
public enum HubTransportError: Error, Sendable, Equatable {
    /// The request cannot have reached the hub (DNS, connection refused, TLS handshake).
    case notSent(String)
    /// The request may have been delivered but no answer came back (timeout, reset after sending).
    case outcomeUnknown(String)
}

/// Carries hub requests over HTTP. newspush supplies a libcurl implementation; tests may
/// supply their own.
public protocol HubTransport: Sendable {
    func perform(_ request: HubRequest) -> Result<HubResponse, HubTransportError>
}
