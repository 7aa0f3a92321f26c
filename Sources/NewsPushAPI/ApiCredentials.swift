import Crypto
import Foundation
import JWTKit
import Logging
import NewsPushCore
import NewsPushDesk
import NewsPushSessions
import Synchronization

/// Why a credential was not taken (always 401, never anonymous).
struct CredentialRefusal: Error, Sendable {
    var reason: String
}

/// Who a request's `Authorization` header says is calling (SPEC §9): HTTP Basic against
/// `api.users`, or a bearer JWT against `api.jwt`'s key set; no header is anonymous.
final class ApiCredentials: Sendable {
    let settings: ApiSettings
    let users: CurrentUsersFile<ApiRole>
    let keys: JWTKeys?
    /// Basic credentials already checked against the users file as it was (its stamp): bcrypt
    /// costs 0.1 s a check, so each credential is checked once per file version. Keyed by an
    /// HMAC with a key of this process, so the cache holds no password.
    private let checked = Mutex<[String: (role: ApiRole, stamp: [Int])]>([:])
    private let cacheKey = SymmetricKey(size: .bits256)

    init(settings: ApiSettings, logger: Logger) {
        self.settings = settings
        users = CurrentUsersFile(path: settings.usersPath)
        keys = settings.jwt.map { JWTKeys(settings: $0, logger: logger) }
    }

    /// The caller, or why the credential is refused.
    func caller(authorization: String?, now: Date) async -> Result<Caller, CredentialRefusal> {
        guard let authorization, !authorization.isEmpty else { return .success(.anonymous) }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else {
            return .failure(CredentialRefusal(reason: "the Authorization header is malformed"))
        }
        let scheme = parts[0].lowercased()
        let value = String(parts[1]).trimmingCharacters(in: .whitespaces)
        switch scheme {
        case "basic": return await basic(value)
        case "bearer":
            guard let keys else {
                return .failure(CredentialRefusal(reason: "bearer tokens are not taken here (no api.jwt)"))
            }
            return await keys.verify(value, now: now)
        default:
            return .failure(CredentialRefusal(reason: "the Authorization scheme must be Basic or Bearer"))
        }
    }

    private func basic(_ value: String) async -> Result<Caller, CredentialRefusal> {
        guard let data = Data(base64Encoded: value), let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":")
        else { return .failure(CredentialRefusal(reason: "the Basic credential is not base64 of name:password")) }
        let name = String(text[..<colon])
        let password = String(text[text.index(after: colon)...])
        let (file, stamp) = await users.current(stamped: ())
        guard let file else { return .failure(CredentialRefusal(reason: "wrong user name or password")) }
        let key = ApiSettings.hex(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: cacheKey))
        if let known = checked.withLock({ $0[key] }), known.stamp == stamp {
            return .success(.user(name: name, sender: known.role == .sender))
        }
        let role = try? await ApiBackend.blocking { file.check(name, password: password) }
        guard let role = role ?? nil else { return .failure(CredentialRefusal(reason: "wrong user name or password")) }
        checked.withLock {
            if $0.count > 100_000 { $0.removeAll() }
            $0[key] = (role, stamp)
        }
        return .success(.user(name: name, sender: role == .sender))
    }

    /// The `WWW-Authenticate` challenge of a 401: the schemes this back-end takes.
    var challenge: String {
        settings.jwt == nil
            ? #"Basic realm="newspush", charset="UTF-8""#
            : #"Bearer realm="newspush", Basic realm="newspush", charset="UTF-8""#
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
    let logger: Logger
    /// Each key's verifier (a collection of that one key) and pinned algorithm, by `kid`.
    private var keys: [String: (collection: JWTKeyCollection, algorithm: String)] = [:]
    /// When the set was last read (an unknown `kid` reads it again at most once a minute, by
    /// the machine's monotonic clock: it protects the identity provider in real time).
    private var lastRead: ContinuousClock.Instant?
    static let leeway: Double = 60
    static let refetchInterval: Double = 60

    init(settings: ApiSettings.JWTSettings, logger: Logger) {
        self.settings = settings
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
        if keys[kid] == nil, lastRead.map({ ContinuousClock.now - $0 >= .seconds(Self.refetchInterval) }) ?? true {
            await read()
        }
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
        return .success(.user(name: subject, sender: scopes.contains("newspush:send")))
    }

    /// Reads the key set (a file, or a URL over libcurl) and pins each usable key's algorithm:
    /// RSA keys RS256, P-256 keys ES256; a key whose `alg` says otherwise, a symmetric key or
    /// another curve is left out. A set that cannot be read keeps the keys already known.
    private func read() async {
        lastRead = ContinuousClock.now
        let source = settings.jwks
        let data: Data
        do {
            data = try await ApiBackend.blocking { try Self.load(source) }
        } catch {
            logger.warning("api: the key set \(source) cannot be read: \(error)")
            return
        }
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

    private static func load(_ source: String) throws -> Data {
        guard source.lowercased().hasPrefix("http") else {
            return try Data(contentsOf: URL(fileURLWithPath: source))
        }
        switch DocumentFetch.get(source, timeout: 10) {
        case .success(let answer) where answer.status == 200: return answer.body
        case .success(let answer): throw CredentialRefusal(reason: "the key set's server answered \(answer.status)")
        case .failure(let failure): throw failure
        }
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
