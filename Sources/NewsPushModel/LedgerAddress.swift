import Foundation

/// Where the config's `state:` puts the ledger: a SQLite file (one host), or a PostgreSQL
/// database shared by several hosts (`postgres://` or `postgresql://`).
public enum LedgerAddress: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(PostgresAddress)

    /// The address `state:` names; a PostgreSQL URL that cannot be used is an error.
    public init(configured: String) throws(PostgresAddress.Problem) {
        self =
            PostgresAddress.isPostgres(configured)
            ? .postgres(try PostgresAddress(configured)) : .sqlite(path: configured)
    }
}

/// A PostgreSQL ledger's database: `postgres://user[:${VAR}]@host[:port]/database[?sslmode=…]`.
///
/// The password is never part of the value: the URL may only name the environment variable
/// that holds it (`${VAR}` in the password's place), else it comes from `PGPASSWORD` or a
/// password file when connecting. What `description` prints names user, host, port and
/// database only. Parsed by hand: URLComponents refuses `${…}` in the password's place.
public struct PostgresAddress: Sendable, Equatable, CustomStringConvertible {
    /// How the connection uses TLS, as libpq's `sslmode` says.
    public enum TLSMode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// A URL that cannot be used, and why.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong, in a sentence (never the password).
        public let message: String
        /// The message.
        public var description: String { message }
    }

    /// The database user.
    public var user: String
    /// The server's host name or address.
    public var host: String
    /// The server's port (5432 unless given).
    public var port: Int
    /// The database that holds the ledger.
    public var database: String
    /// TLS as `sslmode` says (libpq's default: `prefer`).
    public var tls: TLSMode
    /// The environment variable named in the password's place (`${NAME}`), if any.
    public var passwordVariable: String?
    /// Seconds to wait for the server to answer a connection (`connect_timeout`).
    public var connectTimeout: Double

    /// Whether `state:` names a PostgreSQL database rather than a SQLite file.
    public static func isPostgres(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// What messages name: user, host, port and database, never a password.
    public var description: String { "postgres://\(user)@\(hostAndPort)/\(database)" }

    /// `url` with whatever stands in the password's place replaced by `***` (for messages about
    /// a URL that could not be parsed).
    public static func redacting(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else {
            return url
        }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }

    /// `host:port`, with an IPv6 address in brackets.
    public var hostAndPort: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `url`; a literal password, an unknown parameter or a bad port is a problem.
    public init(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(Problem)
    {
        guard let schemeEnd = url.range(of: "://") else { throw Problem(message: "'\(url)' is not a postgres:// URL") }
        var rest = Substring(url[schemeEnd.upperBound...])
        var query = ""
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        var path = ""
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[rest.index(after: slash)...])
            rest = rest[..<slash]
        }
        var userInfo: Substring = ""
        if let at = rest.lastIndex(of: "@") {
            userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
        }
        let (user, variable) = try Self.userAndPassword(userInfo)
        let (host, port) = try Self.hostAndPort(rest)
        self.user = user ?? environment["PGUSER"] ?? NSUserName()
        self.host = host ?? environment["PGHOST"] ?? "localhost"
        self.port = port ?? environment["PGPORT"].flatMap { Int($0) } ?? 5432
        passwordVariable = variable
        database = path.removingPercentEncoding ?? path
        if database.isEmpty { database = environment["PGDATABASE"] ?? self.user }
        tls = .prefer
        connectTimeout = 10
        try readParameters(query)
    }

    /// The user and the password's variable from `user[:${VAR}]`.
    private static func userAndPassword(_ userInfo: Substring) throws(Problem) -> (String?, String?) {
        guard !userInfo.isEmpty else { return (nil, nil) }
        guard let colon = userInfo.firstIndex(of: ":") else {
            return (String(userInfo).removingPercentEncoding ?? String(userInfo), nil)
        }
        let user = String(userInfo[..<colon])
        let password = userInfo[userInfo.index(after: colon)...]
        let name = password.hasPrefix("${") && password.hasSuffix("}") ? password.dropFirst(2).dropLast() : ""
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw Problem(
                message:
                    "the URL holds a literal password: secrets never live in the file; write ${VARIABLE} in its place, "
                    + "or use PGPASSWORD or a PGPASSFILE (the value was not used)")
        }
        return (user.removingPercentEncoding ?? user, String(name))
    }

    /// The host and port from `host[:port]` or `[v6]:port`.
    private static func hostAndPort(_ text: Substring) throws(Problem) -> (String?, Int?) {
        var host = text
        var portText: Substring?
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let after = host[host.index(after: close)...]
            portText = after.hasPrefix(":") ? after.dropFirst() : nil
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        var port: Int?
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw Problem(message: "'\(portText)' is not a port number")
            }
            port = number
        }
        return (host.isEmpty ? nil : String(host), port)
    }

    /// `sslmode`, `connect_timeout` and `application_name` (accepted, not used).
    private mutating func readParameters(_ query: String) throws(Problem) {
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let key = String(parts[0])
            let value = parts.count > 1 ? String(parts[1]).removingPercentEncoding ?? String(parts[1]) : ""
            switch key {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw Problem(
                        message: "sslmode '\(value)' is not one of "
                            + TLSMode.allCases.map(\.rawValue).joined(separator: ", "))
                }
                tls = mode
            case "connect_timeout":
                guard let seconds = Double(value), seconds > 0 else {
                    throw Problem(message: "connect_timeout '\(value)' is not a number of seconds")
                }
                connectTimeout = seconds
            case "application_name":
                continue
            default:
                throw Problem(
                    message: "unknown parameter '\(key)' (newspush reads sslmode, connect_timeout, application_name)")
            }
        }
    }
}
