internal import CByteScan

/// The byte searches of the `CByteScan` target (`bytescan.h` says why they are C), and the only
/// Swift file that calls them. Each answers the index of the first byte it looks for in
/// `p[0..<n]`, or `n` when there is none. Tests compare every search with a byte-by-byte rule.
enum ByteScan {
    /// The first byte at or above 0x80.
    @inline(__always) static func nonASCII(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int { bytescan_non_ascii(p, n) }

    /// The start of the first ill-formed UTF-8 sequence.
    @inline(__always) static func utf8Invalid(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int {
        bytescan_utf8_invalid(p, n)
    }

    /// The first byte the feed repair may change: '&', 0xC2, a control character.
    @inline(__always) static func attention(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int { bytescan_attention(p, n) }

    /// As `attention`, past XML's five entities and the character references the repair keeps.
    @inline(__always) static func attentionPastEntities(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int {
        bytescan_attention_past_entities(p, n)
    }

    /// As `attention`, or '<' (where the repair looks for sections).
    @inline(__always) static func repair(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int { bytescan_repair(p, n) }

    /// As `repair`, past the references the repair keeps and a '<' that cannot open a section.
    @inline(__always) static func repairPastEntities(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int {
        bytescan_repair_past_entities(p, n)
    }

    /// The first byte that ends a run of plain text (white space other than single spaces
    /// between words; with `markup`, also '<' and '&').
    @inline(__always) static func textRun(_ p: UnsafePointer<UInt8>, _ n: Int, markup: Bool) -> Int {
        bytescan_text_run(p, n, markup ? 1 : 0)
    }

    /// The first '"', '\'', '<' or '>'.
    @inline(__always) static func tag(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int { bytescan_tag(p, n) }

    /// The '<' of the first `<img` start tag, in any case.
    @inline(__always) static func imgTag(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int { bytescan_img_tag(p, n) }

    /// The first start tag with more than `limit` attributes; `exact` reads tag by tag (the
    /// rule the fast search must agree with).
    static func attributeFlood(_ p: UnsafeBufferPointer<UInt8>, limit: Int, exact: Bool = false) -> Int {
        guard let base = p.baseAddress else { return 0 }
        return exact
            ? bytescan_attribute_flood_exact(base, p.count, limit) : bytescan_attribute_flood(base, p.count, limit)
    }

    /// `search` over a whole buffer (tests and callers without a pointer at hand).
    static func over(_ p: UnsafeBufferPointer<UInt8>, _ search: (UnsafePointer<UInt8>, Int) -> Int) -> Int {
        p.baseAddress.map { search($0, p.count) } ?? 0
    }
}
