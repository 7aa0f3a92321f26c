import Crypto
import Foundation

/// A signed-in editor or viewer.
public struct SignedIn: Sendable, Equatable {
    /// The user's name: what the ledger's audit records as the editor.
    public var name: String
    /// What the user may do.
    public var role: DeskRole
    /// The token every form and `POST` of this session carries.
    public var csrf: String
    /// After this the session is over.
    public var expires: Date
    /// The bcrypt hash the user signed in against (in memory only): a new password in the users
    /// file ends the session.
    var passwordHash: String
}

/// The desk's sessions and its guard against guessing: in memory, so restarting the desk signs
/// everyone out (nothing about a session is ever written to disk).
actor DeskSignIns {
    /// How long a session lasts after sign-in: a duty shift.
    static let lifetime: Double = 12 * 3600
    /// Failed sign-ins counted per user and per address over this window.
    static let window: Double = 15 * 60
    /// Failures allowed in a window for one user name, and from one address.
    static let perUser = 5
    static let perAddress = 20

    private var sessions: [String: SignedIn] = [:]
    private var failures: [String: [Date]] = [:]
    private var flashes: [String: DeskPages.Flash] = [:]

    /// Keeps `flash` for the next page the session of `token` shows.
    func keep(_ flash: DeskPages.Flash, for token: String?) {
        if let token { flashes[token] = flash }
    }

    /// The message waiting for the session of `token`, once.
    func takeFlash(_ token: String?) -> DeskPages.Flash? {
        guard let token else { return nil }
        defer { flashes[token] = nil }
        return flashes[token]
    }

    /// A new session for `name`; returns its cookie token.
    func start(name: String, user: DeskUsers.User, now: Date) -> (token: String, session: SignedIn) {
        sessions = sessions.filter { $0.value.expires > now }
        let session = SignedIn(
            name: name, role: user.role, csrf: Self.randomToken(), expires: now.addingTimeInterval(Self.lifetime),
            passwordHash: user.password)
        let token = Self.randomToken()
        sessions[token] = session
        return (token, session)
    }

    /// The session of `token`, if it is one and has not expired.
    func session(_ token: String?, now: Date) -> SignedIn? {
        guard let token, let session = sessions[token] else { return nil }
        guard session.expires > now else {
            sessions[token] = nil
            return nil
        }
        return session
    }

    /// The session of `token` as the users file says now (`users`: nil when it cannot be read):
    /// the user's current role; ended, and nil, when the user was removed, has a new password,
    /// or the file cannot be read (nobody's word can be checked).
    func session(_ token: String?, now: Date, users: DeskUsers?) -> SignedIn? {
        guard var session = session(token, now: now) else { return nil }
        guard let user = users?.users[session.name], user.password == session.passwordHash else {
            end(token)
            return nil
        }
        session.role = user.role
        return session
    }

    /// Ends the session of `token`.
    func end(_ token: String?) {
        if let token {
            sessions[token] = nil
            flashes[token] = nil
        }
    }

    /// Seconds until `name` may try again from `address`; nil when a try is allowed now.
    func retryAfter(name: String, address: String, now: Date) -> Int? {
        let keys = [("user:\(name)", Self.perUser), ("address:\(address)", Self.perAddress)]
        var wait: Double?
        for (key, limit) in keys {
            let recent = (failures[key] ?? []).filter { now.timeIntervalSince($0) < Self.window }
            failures[key] = recent
            if recent.count >= limit, let oldest = recent.first {
                wait = max(wait ?? 0, Self.window - now.timeIntervalSince(oldest))
            }
        }
        return wait.map { max(1, Int($0.rounded(.up))) }
    }

    /// Counts a failed sign-in of `name` from `address`. The counters stay bounded: each keeps
    /// only the failures of the window (at most its limit matters), and keys whose failures
    /// all ended are dropped once there are many (a stream of made-up names fills nothing).
    func failed(name: String, address: String, now: Date) {
        for (key, limit) in [("user:\(name)", Self.perUser), ("address:\(address)", Self.perAddress)] {
            var recent = (failures[key] ?? []).filter { now.timeIntervalSince($0) < Self.window }
            recent.append(now)
            failures[key] = Array(recent.suffix(limit))
        }
        if failures.count > Self.maxCounters {
            failures = failures.filter { $0.value.contains { now.timeIntervalSince($0) < Self.window } }
        }
    }

    /// How many keys the counters hold before the ended ones are dropped.
    static let maxCounters = 10_000

    /// 32 random bytes, base64url.
    static func randomToken() -> String {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        return bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Compares two tokens in time that does not depend on where they differ.
    static func sameToken(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
