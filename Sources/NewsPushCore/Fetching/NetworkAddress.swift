import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Which addresses are on the public internet: what a WebSub hub must be at unless
/// `watch.hubs.private: allow` (a feed names its own hub, so a hostile feed could otherwise
/// make the watcher post to the machine's own services or its network's).
public enum NetworkAddress {
    /// Whether `text` (an IPv4 or IPv6 address as libcurl prints it) is public: not
    /// unspecified, loopback, private (RFC 1918, RFC 4193), shared (RFC 6598), link-local,
    /// multicast, reserved, for documentation or benchmarks; an IPv4-mapped or NAT64 IPv6
    /// address is judged by its IPv4 address. Text that is no address is not public.
    public static func isPublic(_ text: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return isPublic(v4: withUnsafeBytes(of: &v4) { Array($0) }) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return false }
        return isPublic(v6: withUnsafeBytes(of: &v6) { Array($0) })
    }

    private static func isPublic(v4 b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _), (169, 254), (192, 168), (255, _): return false
        case (100, 64...127), (172, 16...31), (198, 18...19): return false
        case (192, 0) where b[2] == 0 || b[2] == 2: return false  // IETF protocol assignments, TEST-NET-1
        case (198, 51) where b[2] == 100, (203, 0) where b[2] == 113: return false  // TEST-NET-2, -3
        case (224...255, _): return false  // multicast, reserved
        default: return true
        }
    }

    private static func isPublic(v6 b: [UInt8]) -> Bool {
        let zeros = b[0..<10].allSatisfy { $0 == 0 }
        if zeros && b[10] == 0xff && b[11] == 0xff { return isPublic(v4: Array(b[12...])) }  // ::ffff:a.b.c.d
        if b[0...3] == [0, 0x64, 0xff, 0x9b] && b[4..<12].allSatisfy({ $0 == 0 }) {
            return isPublic(v4: Array(b[12...]))  // 64:ff9b::/96, NAT64
        }
        if zeros && b[10] == 0 && b[11] == 0 { return false }  // ::, ::1, IPv4-compatible
        if b[0] & 0xfe == 0xfc { return false }  // fc00::/7, unique local
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { return false }  // fe80::/10, link-local
        if b[0] == 0xfe && b[1] & 0xc0 == 0xc0 { return false }  // fec0::/10, site-local (deprecated)
        if b[0] == 0xff { return false }  // multicast
        if b[0...3] == [0x20, 0x01, 0x0d, 0xb8] { return false }  // documentation
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] < 0x02 { return false }  // Teredo, benchmarking
        return true
    }
}
