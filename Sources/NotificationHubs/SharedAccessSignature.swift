import Crypto
import Foundation
import Synchronization

/// Shared Access Signature tokens as the Notification Hubs service checks them (hub-api.md §2).
public enum SharedAccessSignature {
    /// The `Authorization` header value for `resourceURI`, valid until `expiry` (Unix seconds).
    ///
    /// `sr` is the lower-cased URI, percent-encoded with lower-case hex; the string to sign is
    /// `sr + "\n" + se`; the HMAC-SHA256 key is the UTF-8 bytes of the key text (not decoded);
    /// `sig` is the base64 digest, percent-encoded.
    public static func token(resourceURI: String, keyName: String, key: String, expiry: Int) -> String {
        let sr = percentEncode(resourceURI.lowercased(), lowercaseHex: true)
        let signature = sign(sr: sr, expiry: expiry, key: key)
        return
            "SharedAccessSignature sr=\(sr)&sig=\(percentEncode(signature, lowercaseHex: false))&se=\(expiry)&skn="
            + "\(keyName)"
    }

    /// The base64 HMAC-SHA256 of `sr + "\n" + expiry` under the UTF-8 bytes of `key`.
    public static func sign(sr: String, expiry: Int, key: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(sr)\n\(expiry)".utf8), using: SymmetricKey(data: Data(key.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// The resource URI newspush signs: the hub on its namespace host, `https://{host}/{hub}`.
    public static func hubResourceURI(host: String, hub: String) -> String {
        "https://\(host)/\(hub)"
    }

    /// RFC 3986 percent-encoding: unreserved characters stay, every other UTF-8 byte is escaped.
    /// Written by hand because Foundation's character sets keep `/`, `:` and `=` literal, which
    /// the signature format must escape.
    public static func percentEncode(_ text: String, lowercaseHex: Bool) -> String {
        let digits = Array((lowercaseHex ? "0123456789abcdef" : "0123456789ABCDEF").utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
                UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Percent-decoding, for reading tokens back (the emulator and tests verify them).
    public static func percentDecode(_ text: String) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "%"), bytes.count >= 2,
                let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
            {
                out.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The fields of an `Authorization` header value, or nil when it is not a SAS token.
    public static func fields(of header: String) -> [String: String]? {
        let prefix = "SharedAccessSignature "
        guard header.hasPrefix(prefix) else { return nil }
        var result: [String: String] = [:]
        for pair in header.dropFirst(prefix.count).split(separator: "&") {
            guard let eq = pair.firstIndex(of: "=") else { return nil }
            result[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        return result
    }
}

/// Issues tokens for one hub and reuses each until it is close to expiry.
public final class SASTokenProvider: Sendable {
    private let connection: HubConnectionString
    private let resourceURI: String
    private let lifetime: Int
    private let cached = Mutex<(token: String, expiry: Int)?>(nil)

    /// A provider signing `resourceURI` (default: the hub on the namespace host) for `lifetime` seconds.
    public init(connection: HubConnectionString, hub: String, resourceURI: String? = nil, lifetime: Int = 3600) {
        self.connection = connection
        self.resourceURI = resourceURI ?? SharedAccessSignature.hubResourceURI(host: connection.host, hub: hub)
        self.lifetime = lifetime
    }

    /// A token valid for at least five more minutes at `now`.
    public func authorization(now: Date = Date()) -> String {
        let nowSeconds = Int(now.timeIntervalSince1970)
        return cached.withLock { cached in
            if let cached, cached.expiry - nowSeconds > 300 { return cached.token }
            let expiry = nowSeconds + lifetime
            let token = SharedAccessSignature.token(
                resourceURI: resourceURI, keyName: connection.keyName, key: connection.key, expiry: expiry)
            cached = (token, expiry)
            return token
        }
    }
}
