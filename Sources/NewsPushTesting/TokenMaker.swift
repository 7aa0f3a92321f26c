import Crypto
import Foundation

/// Bearer tokens as an identity provider signs them, made here with swift-crypto so a test can
/// also make the forgeries jwt libraries refuse to produce.
public struct TokenMaker: Sendable {
    /// The signing key (its public half is the key set's).
    public let key = P256.Signing.PrivateKey()
    /// The key's id in the set and in each token's header.
    public let kid: String
    /// The tokens' `iss`.
    public static let issuer = "https://id.newsroom.example/"
    /// The tokens' `aud`.
    public static let audience = "newsroom-app"

    /// A new key with id `kid`.
    public init(kid: String = "key-1") { self.kid = kid }

    /// The key set with this key (and `extra` keys' JSON).
    public func jwks(extra: [String] = []) -> String {
        let raw = key.publicKey.rawRepresentation
        let x = Self.base64url(raw.prefix(32)), y = Self.base64url(raw.suffix(32))
        let own = #"{"kty":"EC","crv":"P-256","kid":"\#(kid)","use":"sig","x":"\#(x)","y":"\#(y)"}"#
        return #"{"keys":[\#(([own] + extra).joined(separator: ","))]}"#
    }

    /// An ES256 token with these claims over the defaults (sub alice, valid for an hour).
    public func token(_ claims: [String: Any] = [:], header: [String: Any]? = nil, now: Date = Date()) -> String {
        var body: [String: Any] = [
            "sub": "alice", "iss": Self.issuer, "aud": Self.audience, "exp": Int(now.timeIntervalSince1970) + 3600,
            "iat": Int(now.timeIntervalSince1970),
        ]
        for (name, value) in claims { body[name] = value }
        let head = header ?? ["alg": "ES256", "typ": "JWT", "kid": kid]
        let input = Self.segment(head) + "." + Self.segment(body)
        let signature = (try? key.signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
        return input + "." + Self.base64url(signature)
    }

    /// A JSON object as a token's base64url segment.
    public static func segment(_ object: [String: Any]) -> String {
        base64url((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }

    /// Base64url without padding.
    public static func base64url(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }
}
