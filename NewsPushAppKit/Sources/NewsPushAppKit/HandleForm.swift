import Foundation

/// The forms of push handles the back-end takes (its `api.handle_shapes: strict`), checked on
/// the phone so that a wrong handle is a clear error in the app's log, not a 400 in the field.
enum HandleForm {
    /// What is wrong with `handle` for `platform` (nil: nothing).
    static func problem(_ handle: String, platform: PushPlatform) -> String? {
        guard handle.utf8.allSatisfy({ $0 > 32 && $0 < 127 }), (1...4096).contains(handle.utf8.count) else {
            return "a handle is 1 to 4096 printable ASCII characters without spaces"
        }
        switch platform {
        case .apns:
            guard handle.utf8.count % 2 == 0, handle.utf8.allSatisfy(\.isHexDigit) else {
                return "an APNs device token is hex digits of even length (pass the token's Data)"
            }
            guard (64...200).contains(handle.utf8.count) else {
                return "an APNs device token is 32 to 100 bytes; this one has \(handle.utf8.count / 2)"
            }
        case .fcmv1:
            guard (64...4096).contains(handle.utf8.count), handle.utf8.allSatisfy(\.isTokenCharacter) else {
                return "an FCM registration token is 64 to 4096 of A-Z a-z 0-9 _ : . -"
            }
        case .wns:
            let url = URLComponents(string: handle)
            let host = url?.host?.lowercased() ?? ""
            guard url?.scheme?.lowercased() == "https",
                host == "notify.windows.com" || host.hasSuffix(".notify.windows.com")
            else { return "a WNS channel is an https URI on a notify.windows.com host" }
        }
        return nil
    }

    /// An APNs device token as the back-end wants it: lower-case hex of its bytes.
    static func hex(_ token: Data) -> String {
        token.map { String(format: "%02x", $0) }.joined()
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self)
    }

    fileprivate var isTokenCharacter: Bool {
        (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self)
            || self == UInt8(ascii: "_") || self == UInt8(ascii: ":") || self == UInt8(ascii: ".")
            || self == UInt8(ascii: "-")
    }
}
