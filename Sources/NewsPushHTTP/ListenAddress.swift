/// Where a front end (`newspush desk`, `newspush api`) listens.
public struct ListenAddress: Sendable, Equatable {
    /// The address (or host name) to bind.
    public var host: String
    /// The port (0: any free one).
    public var port: Int

    /// `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:80`; nil when it is none of these.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.host = host
        self.port = port
    }

    /// Whether only this machine can reach it.
    public var isLoopback: Bool { host == "127.0.0.1" || host == "::1" || host == "localhost" }
}
