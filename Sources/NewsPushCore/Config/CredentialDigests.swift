import Crypto
import Foundation
import Synchronization

/// The keyed digests under which the app back-end's instances remember the Basic credentials
/// they found good, in the ledger (SPEC §9, "Abuse"): HMAC-SHA256 under a key derived (HKDF)
/// from the hub's connection string, a secret every instance holds and neither the ledger nor
/// the users file does. A digest covers the name, the password and the user's bcrypt hash, so a
/// new password never matches an old digest; the reader's own digest lets a forget find theirs.
public struct CredentialDigests: Sendable {
    private let digests: KeyedDigests
    /// How long a remembered credential spares a bcrypt check.
    public static let lifetime: Double = 30 * 86400

    /// The digests keyed by `secret` (the hub's connection string).
    public init(secret: String) { digests = KeyedDigests(secret: secret, purpose: "newspush remembered credentials") }

    /// The digest of `name`'s `password`, checked against their bcrypt `hash`.
    public func credential(name: String, password: String, hash: String) -> String {
        code("credential\u{0}\(name)\u{0}\(password)\u{0}\(hash)")
    }

    /// The digest a remembered credential of Basic user `name` is filed under.
    public func reader(_ name: String) -> String { code("reader\u{0}\(name)") }

    private func code(_ text: String) -> String { digests.code(text) }
}

/// HMAC-SHA256 codes, base64, under a key derived (HKDF) from a secret for one purpose: the
/// digests the ledger keeps and cannot reverse.
struct KeyedDigests: Sendable {
    private let key: SymmetricKey

    init(secret: String, purpose: String) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Data(secret.utf8)), info: Data(purpose.utf8), outputByteCount: 32)
    }

    func code(_ text: String) -> String {
        Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)).base64EncodedString()
    }
}

/// The keys that count an app's report of an alert once per installation, alert and kind
/// (SPEC §11): HMAC-SHA256 under a key derived (HKDF) from the hub's connection string, which
/// the ledger does not hold, so the kept digests name no installation; they are dropped when
/// events stop being taken (7 days).
public struct EventDigests: Sendable {
    private let digests: KeyedDigests

    /// The digests keyed by `secret` (the hub's connection string).
    public init(secret: String) { digests = KeyedDigests(secret: secret, purpose: "newspush alert events") }

    /// The digests keyed by `secret`, derived once for the process (the key's derivation cost
    /// an event 4 % of the back-end's time when each event derived it).
    public static func keyed(by secret: String) -> EventDigests {
        if let known = last.withLock({ $0 }), known.secret == secret { return known.digests }
        let digests = EventDigests(secret: secret)
        last.withLock { $0 = (secret, digests) }
        return digests
    }

    private static let last = Mutex<(secret: String, digests: EventDigests)?>(nil)

    /// The digest of `installation`'s `kind` of report of `alert`.
    public func event(alert: String, kind: String, installation: String) -> String {
        digests.code("\(alert)\u{0}\(kind)\u{0}\(installation)")
    }
}
