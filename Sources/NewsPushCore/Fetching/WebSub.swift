import Crypto
import FeedParsing
import Foundation
import NewsPushModel

extension WebSubLinks {
    /// The links a fetch found: the HTTP `Link` header first, then the document's own links
    /// (`<atom:link rel="hub">`), as the Recommendation orders them; nil without a hub.
    public static func discover(linkHeader: String?, documentLinks: [FeedLink], fetchedURL: String) -> WebSubLinks? {
        let header = linkHeader.map(parseLinkHeader) ?? []
        let document = documentLinks.map {
            (href: $0.href, rels: Set($0.rel.lowercased().split(separator: " ").map(String.init)))
        }
        for links in [header, document] {
            guard let hub = links.first(where: { $0.rels.contains("hub") })?.href, FeedURL.isHTTP(hub) else { continue }
            let topic = links.first(where: { $0.rels.contains("self") })?.href ?? fetchedURL
            return WebSubLinks(hub: hub, topic: topic)
        }
        return nil
    }

    /// An RFC 8288 `Link` header's targets and relations. Written by hand: neither Foundation nor
    /// swift-http-structured-headers reads this header (it is not a structured field), and
    /// WebSub needs only `<target>` and `rel` of each link.
    static func parseLinkHeader(_ value: String) -> [(href: String, rels: Set<String>)] {
        var links: [(href: String, rels: Set<String>)] = []
        var rest = Substring(value)
        while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
            let href = String(rest[rest.index(after: open)..<close]).trimmingCharacters(in: .whitespaces)
            let paramsEnd = rest[close...].firstIndex(of: "<") ?? rest.endIndex
            let params = rest[rest.index(after: close)..<paramsEnd]
            var rels = Set<String>()
            for param in params.split(separator: ";") {
                let pair = param.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "rel" else {
                    continue
                }
                let quoted = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: " \t,\""))
                rels.formUnion(quoted.lowercased().split(separator: " ").map(String.init))
            }
            links.append((href, rels))
            rest = rest[paramsEnd...]
        }
        return links
    }
}

/// `X-Hub-Signature` (WebSub §8): `method=hex` of an HMAC of the body with the subscription's
/// secret; sha256, sha384 and sha512 are accepted (sha1 is not: it is too weak for a push to
/// millions), and the comparison takes the same time whatever the bytes (swift-crypto's
/// `isValidAuthenticationCode`).
public enum WebSubSignature {
    /// The method a signature header names when it is one this watcher checks (`sha256`,
    /// `sha384`, `sha512`): a distribution without one is not even read.
    public static func method(of header: String) -> String? {
        guard let equals = header.firstIndex(of: "=") else { return nil }
        let method = header[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
        return ["sha256", "sha384", "sha512"].contains(method) ? method : nil
    }

    /// Whether `header` signs `body` with `secret`.
    public static func isValid(_ header: String?, body: Data, secret: String) -> Bool {
        guard let header, let equals = header.firstIndex(of: "=") else { return false }
        let method = header[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
        guard let code = Hex.bytes(header[header.index(after: equals)...].trimmingCharacters(in: .whitespaces)) else {
            return false
        }
        let key = SymmetricKey(data: Data(secret.utf8))
        switch method {
        case "sha256": return HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: body, using: key)
        case "sha384": return HMAC<SHA384>.isValidAuthenticationCode(code, authenticating: body, using: key)
        case "sha512": return HMAC<SHA512>.isValidAuthenticationCode(code, authenticating: body, using: key)
        default: return false
        }
    }
}
