import Foundation
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// The network an address belongs to, as rate limits count clients: an IPv4 address's first
/// `api.rate.ipv4_prefix` bits (all 32 by default), an IPv6 address's first
/// `api.rate.ipv6_prefix` (64: a subscriber picks any address of their /64 at will). An
/// IPv4-mapped IPv6 address counts as its IPv4 address; text that is no address is its own key.
public enum ClientNetwork {
    /// The key of `address`'s network.
    public static func key(_ address: String, ipv4Prefix: Int, ipv6Prefix: Int) -> String {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return "4:" + masked(withUnsafeBytes(of: &v4) { Array($0) }, prefix: ipv4Prefix)
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return "?:" + String(address.prefix(64)) }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return "4:" + masked(Array(bytes[12...]), prefix: ipv4Prefix)
        }
        return "6:" + masked(bytes, prefix: ipv6Prefix)
    }

    /// Whether `address` is this machine's (127.0.0.0/8 or ::1).
    public static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.") || address.hasPrefix("::ffff:127.")
    }

    /// The first `prefix` bits of `bytes`, the rest zero, in hex, with the prefix length.
    private static func masked(_ bytes: [UInt8], prefix: Int) -> String {
        var kept = bytes
        for index in kept.indices {
            let bits = prefix - index * 8
            if bits <= 0 {
                kept[index] = 0
            } else if bits < 8 {
                kept[index] &= UInt8(0xff << (8 - bits) & 0xff)
            }
        }
        return Hex.string(kept) + "/" + String(prefix)
    }
}
