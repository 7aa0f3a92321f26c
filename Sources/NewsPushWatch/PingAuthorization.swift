import Crypto
import Foundation
import NewsPushCore
import NewsPushHTTP

/// Who may ping a feed: whoever holds its token (`watch.ping_tokens`, `Bearer`), or a sender
/// of the app back-end (`Basic`, checked with bcrypt on threads of its own).
enum PingAuthorization {
    private static let bcryptThreads = BlockingThreads(count: 2)

    /// Whether `authorization` (the header) may ping `feed`.
    static func allows(_ authorization: String?, feed: FeedSettings, settings: WatchSettings, usersPath: String) async
        -> Bool
    {
        guard let authorization, let space = authorization.firstIndex(of: " ") else { return false }
        let scheme = authorization[..<space].lowercased()
        let credential = authorization[authorization.index(after: space)...].trimmingCharacters(in: .whitespaces)
        switch scheme {
        case "bearer":
            guard let token = settings.pingTokens[WatchFeeds.id(feed)] else { return false }
            return sameSecret(credential, token)
        case "basic":
            guard let decoded = Data(base64Encoded: credential).map({ String(decoding: $0, as: UTF8.self) }),
                let colon = decoded.firstIndex(of: ":")
            else { return false }
            let (name, password) = (String(decoded[..<colon]), String(decoded[decoded.index(after: colon)...]))
            let role = try? await bcryptThreads.run {
                (try? ApiUsers.load(path: usersPath))?.check(name, password: password)
            }
            return role == .sender
        default:
            return false
        }
    }

    /// Whether two secrets are equal, in a time that does not depend on where they differ (their
    /// digests are compared with swift-crypto's constant-time check).
    static func sameSecret(_ given: String, _ expected: String) -> Bool {
        let key = SymmetricKey(data: Data(expected.utf8))
        let code = HMAC<SHA256>.authenticationCode(for: Data(given.utf8), using: key)
        return HMAC<SHA256>.isValidAuthenticationCode(
            Data(code), authenticating: Data(expected.utf8), using: key)
    }
}
