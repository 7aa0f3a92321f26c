import Foundation
import NewsPushCore
import NewsPushModel
import NotificationHubs

/// The app back-end's rules as functions of values (SPEC §9): which ids, handles and tags are
/// taken, and who may change an installation.
public enum DeviceRules {
    /// Why a platform and handle are not taken.
    public struct Refusal: Error, Sendable, Equatable {
        /// The sentence for the app's developer.
        public var message: String
    }

    /// `[A-Za-z0-9._-]{1,64}`, and not dots alone (`.` and `..` are path steps).
    public static func isValidId(_ id: String) -> Bool {
        // `.` and `..` are path steps, not names (a request for them would reach the hub's own path).
        (1...64).contains(id.utf8.count) && !id.utf8.allSatisfy({ $0 == UInt8(ascii: ".") })
            && id.utf8.allSatisfy {
                isASCIIAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
    }

    /// The hub's platform and the handle as it is written to the hub, or why not: an APNs token
    /// is hex of any even length (upper case taken, written lower case); the description of an
    /// `NSData` that newer iOS SDKs print (`{length = 32, bytes = 0x…}`) is truncated and
    /// cannot be repaired; an FCM token is opaque; a WNS handle is an https URI.
    ///
    /// `strict` (`api.handle_shapes: strict`, the default) also checks each platform's shape, so
    /// that strings no push service issues cannot fill the hub's device quota: an APNs token of
    /// 32 to 100 bytes, an FCM registration token of 64 to 4096 of `A-Z a-z 0-9 _ : . -`, a WNS
    /// channel on a `notify.windows.com` host.
    public static func check(platform name: String, handle: String, strict: Bool = true) -> Result<
        (String, String), Refusal
    > {
        let checked = checkForm(platform: name, handle: handle)
        guard strict, case .success(let (platform, written)) = checked else { return checked }
        if let problem = shapeProblem(platform: platform, handle: written) {
            return .failure(Refusal(message: problem))
        }
        return checked
    }

    /// What is wrong with the shape of a handle of `platform` (nil: nothing).
    static func shapeProblem(platform: String, handle: String) -> String? {
        switch platform {
        case "apns":
            guard (64...200).contains(handle.utf8.count) else {
                return "an APNs device token is 32 to 100 bytes (64 to 200 hex digits); this one has "
                    + "\(handle.utf8.count) digits"
            }
        case "wns":
            let host = URLComponents(string: handle)?.host?.lowercased() ?? ""
            guard host == "notify.windows.com" || host.hasSuffix(".notify.windows.com") else {
                return "a WNS channel URI is on a notify.windows.com host (as the channel's Uri gives it)"
            }
        default:
            let allowed = handle.utf8.allSatisfy {
                isASCIIAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ":")
                    || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
            }
            guard allowed, (64...4096).contains(handle.utf8.count) else {
                return "an FCM registration token is 64 to 4096 of A-Z a-z 0-9 _ : . - (as Firebase gives it)"
            }
        }
        return nil
    }

    private static func checkForm(platform name: String, handle: String) -> Result<(String, String), Refusal> {
        if name.lowercased() == "mpns" {
            return .failure(Refusal(message: "mpns (Windows Phone) is retired: register as wns"))
        }
        guard let platform = HubInstallation.platform(forApp: name) else {
            return .failure(Refusal(message: "platform '\(name)' is not one of apns, fcmv1 (also gcm, fcm), wns"))
        }
        let trimmed = handle.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return .failure(Refusal(message: "the push handle is missing")) }
        guard trimmed.utf8.count <= 2048, trimmed.unicodeScalars.allSatisfy({ $0.value > 32 && $0.value < 127 }) else {
            return .failure(Refusal(message: "the push handle must be at most 2048 printable ASCII characters"))
        }
        switch platform {
        case "apns":
            let lower = trimmed.lowercased()
            if lower.hasPrefix("{length") || lower.contains("bytes=0x") || lower.contains("bytes = 0x") {
                return .failure(
                    Refusal(
                        message:
                            "the APNs token was sent as the description of NSData ({length = …, bytes = 0x…}), "
                            + "which newer iOS SDKs truncate: send the token's bytes as hex"))
            }
            guard isEvenHex(trimmed) else {
                return .failure(Refusal(message: "an APNs token is hex digits of even length"))
            }
            return .success((platform, lower))
        case "wns":
            guard let url = URLComponents(string: trimmed), url.scheme?.lowercased() == "https", url.host != nil else {
                return .failure(Refusal(message: "a WNS handle is the channel's https URI"))
            }
            return .success((platform, trimmed))
        default:
            return .success((platform, trimmed))
        }
    }

    /// The handle as digested: hex (an APNs token, whatever case the app sent) lower-cased.
    public static func normalized(_ handle: String) -> String {
        let trimmed = handle.trimmingCharacters(in: .whitespaces)
        return isEvenHex(trimmed) ? trimmed.lowercased() : trimmed
    }

    /// SHA-256 of the normalized handle, hex: what the index keeps instead of the handle.
    public static func digest(_ handle: String) -> String {
        Hex.sha256(Data(normalized(handle).utf8))
    }

    /// `en`, `fr`, `pt-BR`.
    public static func isLanguage(_ text: String) -> Bool {
        (try? #/[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?/#.wholeMatch(in: text)) != nil
    }

    /// A language as it ends a template property (`messageParam_pt_br`).
    static func propertySuffix(_ language: String) -> String {
        language.lowercased().replacingOccurrences(of: "-", with: "_")
    }

    /// The tags the back-end gives an installation: the topics asked for that `api.topics`
    /// lists (never one starting with `$` or `newspush:`, or shaped like a user's tag), at most
    /// `max_topics`, then, when signed in, the caller's user tag and the signed-in tag (the
    /// devices that can fetch a secure push's text). The rest is returned as ignored.
    public static func tags(asked: [String], caller: Caller, settings: ApiSettings) -> (
        tags: [String], ignored: [String]
    ) {
        let allowed = Set(settings.topics)
        var tags: [String] = []
        var ignored: [String] = []
        for topic in asked {
            if tags.contains(topic) { continue }
            let acceptable = allowed.contains(topic) && !settings.isReserved(topic) && ApiSettings.isTag(topic)
            if acceptable && tags.count < settings.maxTopics { tags.append(topic) } else { ignored.append(topic) }
        }
        if let name = caller.name { tags += [settings.tag(forUser: name), ApiSettings.readerTag] }
        return (tags, ignored)
    }

    /// Whether `caller` may write `record` over the installation its id has now: a new id, the
    /// owner (a signed-in user), or the device itself (the same handle; that is how a phone
    /// passes from one user to another). An anonymous owner is nobody: only the handle counts.
    public static func mayChange(_ current: InstallationRecord?, by caller: Caller, with record: InstallationRecord)
        -> Bool
    {
        guard let current else { return true }
        if current.handleDigest == record.handleDigest { return true }
        return current.owner != nil && current.owner == caller.name
    }

    /// A new id for `POST /api/register`: the hub's registration-id shape, two random numbers
    /// and a counter (`7260336227650468927-4200236381151834034-1`), digits and dashes only.
    public static func newRegistrationId() -> String {
        var random = SystemRandomNumberGenerator()
        let a = UInt64.random(in: 1_000_000_000_000_000...(UInt64(Int64.max)), using: &random)
        let b = UInt64.random(in: 1_000_000_000_000_000...(UInt64(Int64.max)), using: &random)
        return "\(a)-\(b)-1"
    }

    private static func isEvenHex(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count % 2 == 0 && text.utf8.allSatisfy { isHexDigit($0) }
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)
    }

    private static func isASCIIAlphanumeric(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
    }
}
