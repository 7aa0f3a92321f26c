import Crypto
import Foundation

/// Bearer tokens as an identity provider signs them, made here with swift-crypto so a test can
/// also make the forgeries jwt libraries refuse to produce.
public struct TokenMaker: Sendable {
    public let key = P256.Signing.PrivateKey()
    public let kid: String
    public static let issuer = "https://id.newsroom.example/"
    public static let audience = "newsroom-app"

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

    public static func segment(_ object: [String: Any]) -> String {
        base64url((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }

    public static func base64url(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }
}
