import Crypto
import Foundation
import HubEmulator
import NewsPushAPI
import NewsPushTesting
import Testing

/// Identity and limits of `newspush api`.
@Suite("The app back-end: identity and limits")
struct ApiIdentityTests {
    static let register = #"{"platform":"fcmv1","pushChannel":"token-of-a-phone","topics":["World"]}"#

    // JWT attacks, each 401 with WWW-Authenticate and nothing registered: alg none, HS256 signed
    // with the public key as the secret, wrong iss, wrong aud, expired, not yet valid, unknown
    // kid (one refetch of the key set, then 401), a tampered payload. A good token registers
    // with the user's tag; a token 30 s past exp is within the leeway.
    @Test func forgedAndWrongTokensAreRefusedAndNeverAnonymous() async throws {
        let maker = TokenMaker()
        let keys = try await LocalHTTPServer.start { _ in CannedResponse(text: maker.jwks()) }
        defer { keys.stop() }
        let fixture = try await ApiFixture.start(
            api: """
                  jwt: {issuer: "\(TokenMaker.issuer)", audience: \(TokenMaker.audience), jwks: "\(keys.baseURL)/jwks.json"}
                """)
        defer { fixture.stop() }
        let now = Date()
        let good = maker.token(now: now)
        let parts = good.split(separator: ".").map(String.init)
        let tamperedBody = TokenMaker.segment([
            "sub": "bob", "iss": TokenMaker.issuer, "aud": TokenMaker.audience,
            "exp": Int(now.timeIntervalSince1970) + 3600,
        ])
        let publicKeyPEM = Data(maker.key.publicKey.pemRepresentation.utf8)
        let hsInput = TokenMaker.segment(["alg": "HS256", "typ": "JWT", "kid": maker.kid]) + "." + parts[1]
        let hsSignature = HMAC<SHA256>.authenticationCode(
            for: Data(hsInput.utf8), using: SymmetricKey(data: publicKeyPEM))
        let attacks: [(String, String)] = [
            ("unknown kid", TokenMaker(kid: "key-9").token(now: now)),
            ("unknown kid again", TokenMaker(kid: "key-8").token(now: now)),
            ("alg none", TokenMaker.segment(["alg": "none", "typ": "JWT", "kid": maker.kid]) + "." + parts[1] + "."),
            ("HS256 with the public key", hsInput + "." + TokenMaker.base64url(Data(hsSignature))),
            ("wrong iss", maker.token(["iss": "https://evil.example/"], now: now)),
            ("wrong aud", maker.token(["aud": "another-app"], now: now)),
            ("expired", maker.token(["exp": Int(now.timeIntervalSince1970) - 120], now: now)),
            ("not yet valid", maker.token(["nbf": Int(now.timeIntervalSince1970) + 600], now: now)),
            ("tampered payload", parts[0] + "." + tamperedBody + "." + parts[2]),
            ("not a token", "abc.def"),
        ]
        for (index, (name, token)) in attacks.enumerated() {
            let answer = await fixture.send(
                "PUT /api/installations/attack-\(index)", json: Self.register,
                headers: ["Authorization: Bearer \(token)"])
            #expect(answer.status == 401, "\(name): \(answer.status) \(answer.body)")
            #expect(answer.headers["www-authenticate"]?.contains("Bearer") == true, "\(name)")
        }
        #expect(await fixture.hub.emulator.allInstallations().isEmpty)
        // The first unknown kid fetched the key set; the second, within the minute, did not
        // fetch it again (nor did anything after: the set was known).
        let fetches = await keys.requests().count
        #expect(fetches == 1, "\(fetches) fetches of the key set")
        let accepted = await fixture.send(
            "PUT /api/installations/good", json: Self.register, headers: ["Authorization: Bearer \(good)"])
        #expect(accepted.status == 200, "\(accepted.body)")
        #expect(ApiFixture.object(accepted)["tags"] as? [String] == ["World", "username:alice", "newspush:signed-in"])
        // Minted now (a loaded machine may have taken a minute to get here since `now`).
        let late = maker.token(["exp": Int(Date().timeIntervalSince1970) - 30], now: Date())
        let lenient = await fixture.send(
            "PUT /api/installations/good", json: Self.register, headers: ["Authorization: Bearer \(late)"])
        #expect(lenient.status == 200, "30 s past exp is within the 60 s leeway: \(lenient.body)")
    }

    // A key the set marks for another algorithm, or a symmetric key, is never used.
    @Test func keysOfOtherAlgorithmsAreLeftOutOfTheSet() async throws {
        let maker = TokenMaker()
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let symmetric = #"{"kty":"oct","kid":"shared","k":"c2VjcmV0"}"#
        let jwks = try folder.write(
            "jwks.json",
            maker.jwks().replacingOccurrences(of: #""use":"sig""#, with: #""alg":"ES384""#)
                .replacingOccurrences(of: "]}", with: ",\(symmetric)]}"))
        let fixture = try await ApiFixture.start(
            api: "  jwt: {issuer: \"\(TokenMaker.issuer)\", audience: \(TokenMaker.audience), jwks: \(jwks)}\n")
        defer { fixture.stop() }
        let hsInput = TokenMaker.segment(["alg": "HS256", "kid": "shared"]) + "." + TokenMaker.segment(["sub": "x"])
        let hs = HMAC<SHA256>.authenticationCode(
            for: Data(hsInput.utf8), using: SymmetricKey(data: Data("secret".utf8)))
        for token in [maker.token(), hsInput + "." + TokenMaker.base64url(Data(hs))] {
            let answer = await fixture.send(
                "PUT /api/installations/x", json: Self.register, headers: ["Authorization: Bearer \(token)"])
            #expect(answer.status == 401, "\(answer.body)")
        }
    }

    // api.rate: the 4th request from one address in a minute is 429 with Retry-After; behind a
    // trusted proxy each client has its own count, and a client's own X-Forwarded-For is not
    // believed. Bodies over 64 KB are 413; malformed JSON is 400 naming the field.
    @Test func ratesBodiesAndMalformedJSONAreAnsweredAsTheSpecSays() async throws {
        let fixture = try await ApiFixture.start(
            api: "  rate: {per_address: 3/min, per_user: 100/min}\n  trusted_proxies: [127.0.0.2]\n")
        defer { fixture.stop() }
        for n in 0..<3 {
            let answer = await fixture.send(
                "PUT /api/installations/r\(n)", json: Self.register.replacingOccurrences(of: "token-of", with: "t\(n)"),
                headers: ["X-Forwarded-For: 198.51.100.\(n)"])
            #expect(answer.status == 200, "\(answer.body)")
        }
        let limited = await fixture.send("GET /healthz", headers: ["X-Forwarded-For: 198.51.100.77"])
        #expect(limited.status == 429, "an untrusted peer's X-Forwarded-For is not believed: \(limited.status)")
        let wait = Int(limited.headers["retry-after"] ?? "") ?? 0
        #expect((1...60).contains(wait), "\(limited.headers)")
        let big = String(repeating: "x", count: 70_000)
        let fresh = try await ApiFixture.start()
        defer { fresh.stop() }
        let tooLarge = await fresh.send(
            "PUT /api/installations/big", json: #"{"platform":"fcmv1","pushChannel":"\#(big)"}"#)
        #expect(tooLarge.status == 413, "\(tooLarge.status)")
        let malformed = [
            (#"{"platform":"fcmv1","pushChannel":7}"#, "'pushChannel' must be a string"),
            (#"{"platform":"fcmv1","pushChannel":"t","topics":"World"}"#, "'topics' must be an array of strings"),
            (#"{"pushChannel":"t"}"#, "'platform' is required"),
            (#"["platform"]"#, "a JSON object"),
            (#"{"platform":"fcmv1","#, "not valid JSON"),
        ]
        for (body, reason) in malformed {
            let answer = await fresh.send("PUT /api/installations/m", json: body)
            #expect(answer.status == 400 && answer.body.contains(reason), "\(body): \(answer.body)")
        }
        let method = await fresh.send("GET /api/installations/m")
        #expect(method.status == 405 && method.headers["allow"] == "PUT, DELETE", "\(method.status)")
    }

    // The trusted proxy's side: with 127.0.0.1 trusted, two clients behind it are counted apart.
    @Test func behindATrustedProxyEachClientHasItsOwnRate() async throws {
        let fixture = try await ApiFixture.start(
            api: "  rate: {per_address: 2/min, per_user: 100/min}\n  trusted_proxies: [127.0.0.1]\n")
        defer { fixture.stop() }
        for client in ["198.51.100.1", "198.51.100.2"] {
            for _ in 0..<2 {
                #expect(await fixture.send("GET /healthz", headers: ["X-Forwarded-For: \(client)"]).status == 200)
            }
        }
        #expect(await fixture.send("GET /healthz", headers: ["X-Forwarded-For: 198.51.100.1"]).status == 429)
    }

    // A signed-in reader is limited by name too (api.rate.per_user), whatever address each
    // request comes from; another reader is not held back by it.
    @Test func aReaderIsLimitedByNameFromEveryAddress() async throws {
        let fixture = try await ApiFixture.start(
            api: "  rate: {per_address: 1000/min, per_user: 3/min}\n  trusted_proxies: [127.0.0.1]\n")
        defer { fixture.stop() }
        func register(_ user: String, _ n: Int) async -> RawAnswer {
            await fixture.send(
                "PUT /api/installations/\(user)-\(n)", json: ApiAbuseTests.registration("\(user)-token-\(n)"),
                headers: [ApiFixture.basic(user), "X-Forwarded-For: 198.51.100.\(n + 1)"])
        }
        for n in 0..<3 {
            let answer = await register("alice", n)
            #expect(answer.status == 200, "alice's request \(n + 1), its own address: \(answer.status) \(answer.body)")
        }
        let fourth = await register("alice", 3)
        #expect(fourth.status == 429, "alice's fourth request in the minute, from a fourth address: \(fourth.status)")
        #expect((Int(fourth.headers["retry-after"] ?? "") ?? 0) >= 1, "with the time to come back")
        #expect(await register("bob", 0).status == 200, "bob is not held back by alice's limit")
    }
}
