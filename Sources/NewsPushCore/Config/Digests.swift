import Crypto
import Foundation
import NewsPushModel

extension Hex {
    /// SHA-256 of `data` in lower-case hex.
    public static func sha256(_ data: Data) -> String {
        string(SHA256.hash(data: data))
    }
}
