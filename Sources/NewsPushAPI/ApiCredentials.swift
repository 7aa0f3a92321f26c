import Crypto
import Foundation
import JWTKit
import Logging
import NewsPushCore
import NewsPushHTTP
import NewsPushModel
import NewsPushSessions
import Synchronization

/// Why a credential was not taken: 401, never anonymous; 429 with `retryAfter` when the name
/// had too many failed sign-ins (or this instance's password checks are all busy).
struct CredentialRefusal: Error, Sendable {
    var reason: String
    var retryAfter: Int? = nil
}

/// Who a request's `Authorization` header says is calling (SPEC §9): HTTP Basic against
/// `api.users` (through `PasswordCheck`, the one password check of every front end), or a
/// bearer JWT against `api.jwt`'s key set; no header is anonymous.
final class ApiCredentials: Sendable {
    let settings: ApiSettings
    let passwords: PasswordCheck<ApiRole>
    let keys: JWTKeys?

    init(settings: ApiSettings, logger: Logger, shared: (any SharedCredentialMemory)? = nil) {
        self.settings = settings
        passwords = PasswordCheck(
            usersPath: settings.usersPath, limits: .init(failures: settings.signInFailures), shared: shared)
        keys = settings.jwt.map { _ in JWTKeys(settings: settings, logger: logger) }
    }

    /// The users file, as it is now.
    var users: CurrentUsersFile<ApiRole> { passwords.users }

    /// The caller, or why the credential is refused.
    func caller(authorization: String?, network: String = "", now: Date) async -> Result<Caller, CredentialRefusal> {
        guard let authorization, !authorization.isEmpty else { return .success(.anonymous) }
        guard let (scheme, value) = BasicCredential.split(authorization) else {
            return .failure(CredentialRefusal(reason: "the Authorization header is malformed"))
        }
        switch scheme {
        case "basic": return await basic(value, network: network, now: now)
        case "bearer":
            guard let keys else {
                return .failure(CredentialRefusal(reason: "bearer tokens are not taken here (no api.jwt)"))
            }
            return await keys.verify(value, now: now)
        default:
            return .failure(CredentialRefusal(reason: "the Authorization scheme must be Basic or Bearer"))
        }
    }

    private func basic(_ value: String, network: String, now: Date) async -> Result<Caller, CredentialRefusal> {
        guard let (name, password) = BasicCredential.parse(value) else {
            return .failure(CredentialRefusal(reason: "the Basic credential is not base64 of name:password"))
        }
        let wrong = CredentialRefusal(reason: "wrong user name or password")
        guard !ApiSettings.isReservedName(name) else { return .failure(wrong) }
        switch await passwords.check(name: name, password: password, network: network, now: now) {
        case .signedIn(let role): return .success(.user(name: settings.basicUser(name), sender: role == .sender))
        case .wrong: return .failure(wrong)
        case .tooMany(let wait):
            return .failure(CredentialRefusal(reason: "too many failed sign-ins for \(name)", retryAfter: wait))
        case .busy: return .failure(CredentialRefusal(reason: "too many sign-ins being checked", retryAfter: 1))
        }
    }

    /// The `WWW-Authenticate` challenge of a 401: the schemes this back-end takes.
    var challenge: String {
        settings.jwt == nil
            ? #"Basic realm="newspush", charset="UTF-8""#
            : #"Bearer realm="newspush", Basic realm="newspush", charset="UTF-8""#
    }
}

/// The ledger as the instances' memory of good Basic credentials (`PasswordCheck`): after a
/// secure push every signed-in phone fetches its text at once, and a reader's first request at
/// an instance that restarted, or never saw them, is answered without a bcrypt check.
struct LedgerCredentialMemory: SharedCredentialMemory {
    let sessions: SessionPool
    let digests: CredentialDigests
    let logger: Logger

    func digest(name: String, password: String, hash: String) -> String {
        digests.credential(name: name, password: password, hash: hash)
    }

    func recalls(_ digest: String) async -> Bool {
        (try? await sessions.with { try $0.recallsCredential(digest) }) ?? false
    }

    func keeps(_ digest: String, name: String) async {
        do {
            try await sessions.with { try $0.keepCredential(digest, name: name) }
        } catch {
            logger.warning("api: a good credential is remembered by this instance only (the ledger: \(error))")
        }
    }
}

/// The key set of `api.jwt` and the checks of a bearer token: the signature with the key's own
/// algorithm (RS256 or ES256, pinned per key when the set is read: a token's `alg` must match,
/// so `none` and HS256 signed with a public key are refused), `iss` exact, `aud` containing
/// the audience, `exp` and `nbf` with at most 60 s of leeway, `sub` the user.
///
/// jwt-kit verifies the signature; choosing the key is done here, because jwt-kit falls back
/// to a default key for an unknown `kid` and takes the algorithm from the token when the key
/// does not name one, and neither is what SPEC §9 allows.
actor JWTKeys {
    let settings: ApiSettings.JWTSettings
    /// The back-end's settings: how a token's `sub` becomes a user's name.
    let names: ApiSettings
    let logger: Logger
    /// Each key's verifier (a collection of that one key) and pinned algorithm, by `kid`.
    private var keys: [String: (collection: JWTKeyCollection, algorithm: String)] = [:]
    /// When the set was last read, and until when it is fresh (its `Cache-Control` max-age,
    /// 10 minutes by default): past that it is read again before a token is checked, so a key
    /// removed from the set stops working. By the machine's monotonic clock: it protects the
    /// identity provider in real time.
    private var lastRead: ContinuousClock.Instant?
    private var freshUntil: ContinuousClock.Instant?
    /// The read in flight: every token that needs the set waits for this one read.
    private var reading: Task<Void, Never>?
    static let leeway: Double = 60
    /// An unknown `kid` reads the set again at most this often.
    static let refetchInterval: Double = 60
    /// How long a set is fresh when its answer does not say (and for a file).
    static let defaultMaxAge: Double = 600

    init(settings: ApiSettings, logger: Logger) {
        self.settings = settings.jwt ?? ApiSettings.JWTSettings(issuer: "", audience: "", jwks: "")
        names = settings
        self.logger = logger
    }

    /// The caller the token names, or why it is refused.
    func verify(_ token: String, now: Date) async -> Result<Caller, CredentialRefusal> {
        // jwt-kit's parser reads the header (unverified) to choose the key by.
        guard let header = try? DefaultJWTParser().parse(Array(token.utf8), as: BearerClaims.self).header else {
            return .failure(CredentialRefusal(reason: "the bearer token is not a JWT"))
        }
        guard let alg = header.alg, alg == "RS256" || alg == "ES256" else {
            return .failure(CredentialRefusal(reason: "the token's algorithm is not accepted (RS256 or ES256 only)"))
        }
        guard let kid = header.kid else {
            return .failure(CredentialRefusal(reason: "the token names no key (kid)"))
        }
        if needsRead(kid) { await refresh() }
        guard let key = keys[kid] else { return .failure(CredentialRefusal(reason: "the token's key is unknown")) }
        guard key.algorithm == alg else {
            return .failure(CredentialRefusal(reason: "the token's algorithm is not its key's"))
        }
        let claims: BearerClaims
        do { claims = try await key.collection.verify(token, as: BearerClaims.self) } catch {
            return .failure(CredentialRefusal(reason: "the token's signature or claims cannot be verified"))
        }
        return check(claims, now: now)
    }

    /// Whether the set must be read before `kid` is looked up: never read, no longer fresh, a
    /// read already under way for a key not known, or an unknown key a minute after the last read.
    private func needsRead(_ kid: String) -> Bool {
        let now = ContinuousClock.now
        guard let lastRead, let freshUntil, now < freshUntil else { return true }
        guard keys[kid] == nil else { return false }
        return reading != nil || now - lastRead >= .seconds(Self.refetchInterval)
    }

    /// Reads the set once however many tokens ask at the same time: the first starts the read,
    /// the others wait for it (none is refused for a key the read is about to bring).
    private func refresh() async {
        if let reading { return await reading.value }
        let task = Task { await self.read() }
        reading = task
        await task.value
        reading = nil
    }

    private func check(_ claims: BearerClaims, now: Date) -> Result<Caller, CredentialRefusal> {
        guard claims.iss?.value == settings.issuer else {
            return .failure(CredentialRefusal(reason: "the token is from another issuer"))
        }
        guard claims.aud?.value.contains(settings.audience) == true else {
            return .failure(CredentialRefusal(reason: "the token is for another audience"))
        }
        guard let exp = claims.exp?.value, now.timeIntervalSince(exp) <= Self.leeway else {
            return .failure(CredentialRefusal(reason: "the token has expired"))
        }
        if let nbf = claims.nbf?.value, nbf.timeIntervalSince(now) > Self.leeway {
            return .failure(CredentialRefusal(reason: "the token is not valid yet"))
        }
        guard let subject = claims.sub?.value, !subject.isEmpty, subject.count <= 256 else {
            return .failure(CredentialRefusal(reason: "the token names no user (sub)"))
        }
        let scopes = (claims.scope ?? "").split(separator: " ")
        return .success(.user(name: names.tokenUser(subject), sender: scopes.contains("newspush:send")))
    }

    /// Reads the key set (a file, or a URL over libcurl) and pins each usable key's algorithm:
    /// RSA keys RS256, P-256 keys ES256; a key whose `alg` says otherwise, a symmetric key or
    /// another curve is left out. A set that cannot be read keeps the keys already known.
    private func read() async {
        let started = ContinuousClock.now
        lastRead = started
        // A set that cannot be read keeps the keys known, and is tried again a minute later.
        freshUntil = started + .seconds(Self.refetchInterval)
        let source = settings.jwks
        let data: Data
        let maxAge: Double
        do {
            (data, maxAge) = try await ApiBackend.blocking { try Self.load(source) }
        } catch {
            logger.warning("api: the key set \(source) cannot be read: \(error)")
            return
        }
        freshUntil = started + .milliseconds(Int64(maxAge * 1000))
        guard let set = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            let list = set["keys"] as? [[String: Any]]
        else {
            logger.warning("api: \(source) is not a JWKS document ({\"keys\": [...]})")
            return
        }
        var found: [String: (JWTKeyCollection, String)] = [:]
        for var key in list {
            guard let kid = key["kid"] as? String, let algorithm = Self.pinnedAlgorithm(key) else { continue }
            key["alg"] = algorithm
            for secret in ["d", "p", "q", "dp", "dq", "qi", "k"] { key.removeValue(forKey: secret) }
            do {
                let json = try JSONSerialization.data(withJSONObject: key)
                let jwk = try JSONDecoder().decode(JWK.self, from: json)
                let collection = JWTKeyCollection()
                try await collection.add(jwk: jwk)
                found[kid] = (collection, algorithm)
            } catch {
                logger.warning("api: key \(kid) of \(source) cannot be used: \(error)")
            }
        }
        keys = found.mapValues { (collection: $0.0, algorithm: $0.1) }
    }

    /// RS256 for an RSA key, ES256 for a P-256 key, when its `alg` (if any) agrees.
    static func pinnedAlgorithm(_ key: [String: Any]) -> String? {
        let declared = key["alg"] as? String
        if let use = key["use"] as? String, use != "sig" { return nil }
        switch key["kty"] as? String {
        case "RSA" where declared == nil || declared == "RS256": return "RS256"
        case "EC" where (key["crv"] as? String) == "P-256" && (declared == nil || declared == "ES256"): return "ES256"
        default: return nil
        }
    }

    /// The set's bytes and how long they are fresh (seconds).
    private static func load(_ source: String) throws -> (Data, Double) {
        guard source.lowercased().hasPrefix("http") else {
            return (try Data(contentsOf: URL(fileURLWithPath: source)), defaultMaxAge)
        }
        switch DocumentFetch.get(source, timeout: 10) {
        case .success(let answer) where answer.status == 200:
            return (answer.body, maxAge(answer.headers))
        case .success(let answer): throw CredentialRefusal(reason: "the key set's server answered \(answer.status)")
        case .failure(let failure): throw failure
        }
    }

    /// How long a key set stays fresh: what its server says (`HTTPFreshness`, the reader of
    /// feeds' answers: `max-age` less `Age`, or `Expires`; at most a day), at least a second; a
    /// minute when it says not to keep it (`no-cache`, `no-store`, stale already); else the
    /// default ten minutes. `headers`: names lower-cased.
    static func maxAge(_ headers: [String: String]) -> Double {
        if let lifetime = HTTPFreshness.lifetime(headers) { return max(1, lifetime) }
        let cacheControl = (headers["cache-control"] ?? "").lowercased()
        let saysStale =
            ["no-cache", "no-store", "max-age"].contains { cacheControl.contains($0) } || headers["expires"] != nil
        return saysStale ? refetchInterval : defaultMaxAge
    }
}

/// The claims newspush reads of a bearer token; jwt-kit checks only the signature here, the
/// claims are judged by `JWTKeys.check` against the session clock.
struct BearerClaims: JWTPayload {
    var sub: SubjectClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?
    var exp: ExpirationClaim?
    var nbf: NotBeforeClaim?
    var scope: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
