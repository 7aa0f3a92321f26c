import Foundation
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// The byte-level pre-pass that makes real-world feed bytes safe for libxml2 (FEED-QUIRKS.md):
/// settles the encoding and transcodes to UTF-8, drops junk before the first `<` and the XML
/// declaration, rewrites named entities that XML does not define into numeric references and
/// escapes bare `&`, and removes characters XML forbids. libxml2 alone silently loses text in
/// each of these cases, and no library does this repair, so it is written here.
enum FeedBytes {
    struct Prepared {
        /// The bytes a parse reads: the fetched ones themselves when they are UTF-8 and need no
        /// repair (most feeds: no copy of the document is made), else a converted copy.
        fileprivate enum Storage {
            case source(Data)
            case converted([UInt8])
        }
        private let storage: Storage
        /// The document from its first element (or other markup): past junk and the XML declaration.
        private let range: Range<Int>
        /// The encoding the bytes were read as.
        var encoding: String
        var problems: [String]
        /// Whether `repairMarkup` has been applied (bytes that need no repair for a strict parse
        /// are left as they are; a recovering parse needs it anyway).
        var repaired: Bool
        /// Whether every reference is numeric, XML's five entities' too (the repair for a
        /// strict parse keeps those as written: escaped HTML is full of them).
        private let allNumeric: Bool

        fileprivate init(
            _ storage: Storage, range: Range<Int>, encoding: String, problems: [String], repaired: Bool,
            allNumeric: Bool = false
        ) {
            self.storage = storage
            self.range = range
            self.encoding = encoding
            self.problems = problems
            self.repaired = repaired
            self.allNumeric = allNumeric
        }

        /// Calls `body` with the document's UTF-8 bytes.
        func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
            switch storage {
            case .source(let data):
                return try data.withUnsafeBytes { raw in
                    try body(UnsafeBufferPointer(rebasing: raw.assumingMemoryBound(to: UInt8.self)[range]))
                }
            case .converted(let bytes):
                return try bytes.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[range])) }
            }
        }

        /// Calls `body` with the bytes every reference of which is numeric, as a recovering
        /// parse needs them.
        func withRepairedBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
            if allNumeric { return try withBytes(body) }
            return try withBytes { FeedBytes.repairMarkup($0) }.withUnsafeBufferPointer(body)
        }
    }

    static func prepare(_ data: Data, httpContentType: String? = nil, alwaysRepair: Bool = false) -> Prepared {
        var problems: [String] = []
        return data.withUnsafeBytes { rawBytes in
            let raw = rawBytes.assumingMemoryBound(to: UInt8.self)
            let (decoded, encoding) = decode(raw, httpContentType: httpContentType, problems: &problems)
            func prepared(_ text: UnsafeBufferPointer<UInt8>, storage: @autoclosure () -> Prepared.Storage) -> Prepared
            {
                var start = 0
                // Junk before the first '<' (blank lines, PHP notices, a stray BOM).
                if let first = text.firstIndex(of: UInt8(ascii: "<")), first > 0 {
                    let skipped = text[..<first].contains { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }
                    if skipped { problems.append("\(first) bytes of junk before the document were skipped") }
                    start = first
                }
                // The declaration's encoding no longer applies: the bytes are UTF-8 now.
                if text[start...].starts(with: "<?xml".utf8), let end = indexAfter("?>", in: text, from: start + 5) {
                    start = end
                }
                // Most documents need no repair for a strict parse: then no copy is made.
                if !alwaysRepair && readsTheSameUnrepaired(text, from: start) {
                    return Prepared(
                        storage(), range: start..<text.count, encoding: encoding, problems: problems, repaired: false)
                }
                let repaired = repairMarkup(UnsafeBufferPointer(rebasing: text[start...]), keepingPredefined: true)
                return Prepared(
                    .converted(repaired), range: 0..<repaired.count, encoding: encoding, problems: problems,
                    repaired: true)
            }
            if let decoded {
                return decoded.withUnsafeBufferPointer { prepared($0, storage: .converted(decoded)) }
            }
            return prepared(raw, storage: .source(data))
        }
    }

    /// True when a strict libxml2 parse reads `bytes` exactly as it would read them repaired:
    /// every `&` outside CDATA sections, comments and processing instructions starts one of
    /// XML's five entities or a character reference `repairMarkup` keeps, and there is no
    /// control character XML forbids and no C1 control character outside those sections.
    static func readsTheSameUnrepaired(_ p: UnsafeBufferPointer<UInt8>, from: Int) -> Bool {
        let n = p.count
        var i = from
        guard let base = p.baseAddress else { return true }
        // Sections are only looked for when something needs repair outside them; `scanned` is
        // a position known to be outside every section (see `sectionEnd`).
        var scanned = from
        while i < n {
            // Sixteen bytes at a time up to the first that may matter ('&', 0xC2, a control
            // character), past the references the repair keeps as written.
            i += ByteScan.attentionPastEntities(base + i, n - i)
            guard i < n else { break }
            let b = p[i]
            if b == 0xC2, !(i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F) {
                i += 1
                continue
            }
            // The repair drops forbidden control characters everywhere; it leaves other bytes
            // of CDATA sections, comments and processing instructions as they are.
            guard b >= 0x20, let end = sectionEnd(p, containing: i, scannedFrom: &scanned) else { return false }
            i = end
        }
        return true
    }

    private static func sectionEnd(
        _ p: UnsafeBufferPointer<UInt8>, containing index: Int, scannedFrom scanned: inout Int
    ) -> Int? {
        let n = p.count
        guard let base = p.baseAddress else { return nil }
        var j = scanned
        while j < index, let found = memchr(base + j, Int32(UInt8(ascii: "<")), index - j) {
            let open = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
            j = open + 1
            guard let (bodyStart, terminator) = section(p, at: open) else { continue }
            let end = indexAfter(terminator, in: p, from: bodyStart) ?? n
            j = end
            if end > index {
                scanned = end
                return end
            }
        }
        scanned = max(scanned, index)
        return nil
    }

    /// A CDATA section, comment or processing instruction opening at `open` (a '<'): where its
    /// body starts and what ends it. The repair leaves these as they are.
    private static func section(_ p: UnsafeBufferPointer<UInt8>, at open: Int) -> (
        bodyStart: Int, terminator: StaticString
    )? {
        guard open + 1 < p.count, p[open + 1] == UInt8(ascii: "!") || p[open + 1] == UInt8(ascii: "?") else {
            return nil
        }
        let rest = UnsafeBufferPointer(rebasing: p[open...])
        if rest.starts(with: "<![CDATA[".utf8) { return (open + 9, "]]>") }
        if rest.starts(with: "<!--".utf8) { return (open + 4, "-->") }
        if p[open + 1] == UInt8(ascii: "?") { return (open + 2, "?>") }
        return nil
    }

    /// The index after the first `needle` at or after `from`, or nil. (Glibc's memmem is not
    /// visible from Swift; memchr finds the candidates.)
    static func indexAfter(_ needle: StaticString, in p: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        let count = needle.utf8CodeUnitCount
        guard let base = p.baseAddress, count > 0, from >= 0 else { return nil }
        var j = from
        while j + count <= p.count, let found = memchr(base + j, Int32(needle.utf8Start.pointee), p.count - j) {
            let at = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
            guard at + count <= p.count else { return nil }
            if memcmp(base + at, needle.utf8Start, count) == 0 { return at + count }
            j = at + 1
        }
        return nil
    }

    /// The digits of a character reference from `start` (after "&#" or "&#x"): the value they
    /// spell and the index after the last one (`start` when there is none).
    static func referenceDigits(_ p: UnsafeBufferPointer<UInt8>, from start: Int, hex: Bool, maxDigits: Int) -> (
        value: UInt32, end: Int
    ) {
        var j = start
        var value: UInt32 = 0
        while j < p.count, j - start < maxDigits {
            let c = p[j]
            if c >= 0x30 && c <= 0x39 {
                value = value &* (hex ? 16 : 10) &+ UInt32(c - 0x30)
            } else if hex, (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66 {
                value = value &* 16 &+ UInt32((c | 0x20) - 0x61 + 10)
            } else {
                break
            }
            j += 1
        }
        return (value, j)
    }

    // MARK: Encoding

    static func decode(_ raw: [UInt8], httpContentType: String?, problems: inout [String]) -> ([UInt8], String) {
        let (decoded, encoding) = raw.withUnsafeBufferPointer {
            decode($0, httpContentType: httpContentType, problems: &problems)
        }
        return (decoded ?? raw, encoding)
    }

    /// The document as UTF-8, nil when `raw` already is that (the usual case: nothing copied),
    /// and the encoding it was read as.
    static func decode(_ raw: UnsafeBufferPointer<UInt8>, httpContentType: String?, problems: inout [String]) -> (
        [UInt8]?, String
    ) {
        func after(_ count: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: raw[count...]) }
        if raw.starts(with: [0xEF, 0xBB, 0xBF]) {
            return (validUTF8OrCP1252(after(3), label: "utf-8", problems: &problems) ?? Array(after(3)), "utf-8")
        }
        if raw.starts(with: [0xFF, 0xFE]) { return (transcode(Array(after(2)), from: "UTF-16LE") ?? [], "utf-16le") }
        if raw.starts(with: [0xFE, 0xFF]) { return (transcode(Array(after(2)), from: "UTF-16BE") ?? [], "utf-16be") }
        if raw.starts(with: [0x3C, 0x00, 0x3F, 0x00]) {
            return (transcode(Array(raw), from: "UTF-16LE") ?? [], "utf-16le")
        }
        if raw.starts(with: [0x00, 0x3C, 0x00, 0x3F]) {
            return (transcode(Array(raw), from: "UTF-16BE") ?? [], "utf-16be")
        }

        let declared = declaredEncoding(raw)
        let fromHTTP = httpContentType.flatMap(charset(fromContentType:))
        if let type = httpContentType?.lowercased(), type.hasPrefix("text/plain") || type.hasPrefix("text/html") {
            problems.append("served as \(type.split(separator: ";")[0]), not as a feed type")
        }
        let ascii = { ByteScan.over(raw, ByteScan.nonASCII) == raw.count }
        // RFC 3023: text/*xml without a charset is us-ascii. Only the label follows the rule
        // when the bytes are ASCII anyway; other bytes are decoded as they are.
        if let type = httpContentType?.lowercased(), type.hasPrefix("text/"), type.contains("xml"),
            fromHTTP.map({
                !["utf-8", "utf8", "us-ascii", "iso-8859-1", "windows-1252", "utf-16"].contains($0.lowercased())
                    && transcode([], from: $0) == nil
            }) ?? true,
            ascii()
        {
            return (nil, "us-ascii")
        }
        let label = (fromHTTP ?? declared ?? "utf-8").lowercased()
        switch label {
        case "utf-8", "utf8", "us-ascii", "ascii", "utf-16", "utf-16le", "utf-16be":
            // "utf-16" declared without a BOM on 8-bit bytes is a lie the bytes disprove.
            let isUTF16 = label.hasPrefix("utf-16")
            return (
                validUTF8OrCP1252(raw, label: label, declared: fromHTTP != nil || declared != nil, problems: &problems),
                isUTF16 ? "utf-8" : label
            )
        case "iso-8859-1", "latin1", "latin-1", "iso8859-1", "iso_8859-1", "windows-1252", "cp1252", "x-cp1252":
            // Declared Latin-1 is cp1252 in practice; and some feeds declare it over UTF-8 bytes,
            // or mix both.
            if isValidUTF8(raw) && !ascii() {
                problems.append("declared \(label) but the bytes are UTF-8; read as UTF-8")
                return (nil, "utf-8")
            }
            let (decoded, keptUTF8) = mixedUTF8(raw)
            if keptUTF8 { problems.append("declared \(label) but parts are UTF-8; each part read as what it is") }
            return (decoded, label)
        default:
            if let converted = transcode(Array(raw), from: label) { return (converted, label) }
            problems.append("unknown encoding '\(label)'; read as UTF-8")
            return (validUTF8OrCP1252(raw, label: label, problems: &problems), "utf-8")
        }
    }

    /// Nil when `bytes` are valid UTF-8 (nothing to convert); else the bytes read as UTF-8 where
    /// they are and as Windows-1252 elsewhere.
    private static func validUTF8OrCP1252(
        _ bytes: UnsafeBufferPointer<UInt8>, label: String, declared: Bool = true, problems: inout [String]
    ) -> [UInt8]? {
        if isValidUTF8(bytes) { return nil }
        // Undeclared legacy bytes are read as Windows-1252, as browsers do; only a declared
        // encoding that the bytes contradict is worth a warning.
        if declared { problems.append("bytes are not valid \(label); invalid bytes read as windows-1252") }
        return mixedUTF8(bytes).bytes
    }

    /// Windows-1252 for 0x80–0x9F (where Latin-1 has control characters); Latin-1 above.
    static let cp1252High: [UInt32] = [
        0x20AC, 0xFFFD, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0xFFFD,
        0x017D, 0xFFFD,
        0xFFFD, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0xFFFD,
        0x017E, 0x0178,
    ]

    /// The character Windows-1252 gives `byte` as the WHATWG Encoding Standard reads it: its
    /// own character at 0x80–0x9F, the Latin-1 one elsewhere (also at its five unassigned
    /// positions, so text double-encoded through them can still be repaired: see `Mojibake`).
    static func windows1252(_ byte: UInt8) -> UInt32 {
        guard byte >= 0x80, byte < 0xA0 else { return UInt32(byte) }
        let mapped = cp1252High[Int(byte) - 0x80]
        return mapped == 0xFFFD ? UInt32(byte) : mapped
    }

    /// Text that mixes UTF-8 and Windows-1252 (a template in one, database text in the other):
    /// every valid UTF-8 sequence is kept, every other byte is read as Windows-1252. Neither
    /// iconv nor Foundation decodes such mixtures, hence this loop.
    static func mixedUTF8(_ bytes: [UInt8]) -> (bytes: [UInt8], keptUTF8: Bool) {
        bytes.withUnsafeBufferPointer { mixedUTF8($0) }
    }

    static func mixedUTF8(_ p: UnsafeBufferPointer<UInt8>) -> (bytes: [UInt8], keptUTF8: Bool) {
        var keptUTF8 = false
        var out: [UInt8] = []
        out.reserveCapacity(p.count + p.count / 8)
        guard let base = p.baseAddress else { return (out, false) }
        let n = p.count
        var i = 0
        while i < n {
            // Well-formed UTF-8 is copied in runs; the byte that ends a run is Windows-1252.
            let valid = ByteScan.utf8Invalid(base + i, n - i)
            if !keptUTF8, ByteScan.nonASCII(base + i, valid) < valid { keptUTF8 = true }
            out.append(contentsOf: UnsafeBufferPointer(start: base + i, count: valid))
            i += valid
            guard i < n else { break }
            let b = base[i]
            appendUTF8(windows1252(b), to: &out)
            i += 1
        }
        return (out, keptUTF8)
    }

    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { isValidUTF8($0) }
    }

    /// Well-formed UTF-8 (Unicode Table 3-7), checked without copying the document into a
    /// String as the standard library's validating initialiser would.
    static func isValidUTF8(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        ByteScan.over(buffer, ByteScan.utf8Invalid) == buffer.count
    }

    /// Converts with glibc's iconv; undecodable bytes are skipped. Nil when iconv lacks the encoding.
    static func transcode(_ bytes: [UInt8], from encoding: String) -> [UInt8]? {
        let cd = iconv_open("UTF-8//IGNORE", encoding)
        if cd == iconv_t(bitPattern: -1) { return nil }
        defer { iconv_close(cd) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: bytes.count * 4 + 16)
        let produced: Int = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                var inPointer: UnsafeMutablePointer<CChar>? = UnsafeMutableRawPointer(inBuffer.baseAddress)?
                    .assumingMemoryBound(to: CChar.self)
                var inLeft = inBuffer.count
                var outPointer: UnsafeMutablePointer<CChar>? = UnsafeMutableRawPointer(outBuffer.baseAddress)?
                    .assumingMemoryBound(to: CChar.self)
                var outLeft = outBuffer.count
                while inLeft > 0 {
                    if iconv(cd, &inPointer, &inLeft, &outPointer, &outLeft) == -1 {
                        // Skip one undecodable byte and carry on (EILSEQ); stop on a truncated tail.
                        if errno == EILSEQ, inLeft > 0 {
                            inPointer = inPointer.map { $0 + 1 }
                            inLeft -= 1
                            continue
                        }
                        break
                    }
                }
                return outBuffer.count - outLeft
            }
        }
        return Array(output.prefix(produced))
    }

    static func charset(fromContentType contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "charset" {
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    /// The `encoding="…"` of an XML declaration at the start (after optional junk).
    static func declaredEncoding(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let head = UnsafeBufferPointer(rebasing: bytes.prefix(1024))
        guard let afterOpen = indexAfter("<?xml", in: head, from: 0),
            let afterClose = indexAfter("?>", in: head, from: afterOpen - 5),
            let afterName = indexAfter("encoding", in: head, from: afterOpen), afterName < afterClose
        else { return nil }
        var i = afterName
        while i < afterClose, head[i] == 0x20 || head[i] == UInt8(ascii: "=") { i += 1 }
        guard i < afterClose, head[i] == UInt8(ascii: "\"") || head[i] == UInt8(ascii: "'") else { return nil }
        let quote = head[i]
        let valueStart = i + 1
        guard let valueEnd = head[valueStart..<afterClose].firstIndex(of: quote), valueEnd > valueStart else {
            return nil
        }
        return String(decoding: head[valueStart..<valueEnd], as: UTF8.self)
    }

    // MARK: Markup repair

    /// XML's five predefined entities.
    private static func predefinedEntity(_ name: UnsafeBufferPointer<UInt8>) -> UInt32? {
        func equals(_ literal: StaticString) -> Bool {
            guard let base = name.baseAddress else { return literal.utf8CodeUnitCount == 0 }
            return name.count == literal.utf8CodeUnitCount && memcmp(base, literal.utf8Start, name.count) == 0
        }
        if equals("amp") { return 38 }
        if equals("lt") { return 60 }
        if equals("gt") { return 62 }
        if equals("quot") { return 34 }
        if equals("apos") { return 39 }
        return nil
    }

    /// Rewrites entity references outside CDATA, comments and processing instructions so every
    /// one is numeric (libxml2's recover mode drops named ones after any error), escapes bare
    /// `&`, and drops control characters XML does not allow. Reads `input` from `from`.
    static func repairMarkup(_ input: [UInt8], from: Int = 0) -> [UInt8] {
        input.withUnsafeBufferPointer { repairMarkup(UnsafeBufferPointer(rebasing: $0[from...])) }
    }

    /// `keepingPredefined`: references to XML's five entities stay as written, which is all a
    /// strict parse needs (the rest is as above).
    static func repairMarkup(_ buffer: UnsafeBufferPointer<UInt8>, keepingPredefined: Bool = false) -> [UInt8] {
        guard buffer.count > 0, let p = buffer.baseAddress else { return [] }
        var repair = MarkupRepair(buffer: buffer, p: p, keepingPredefined: keepingPredefined)
        repair.run()
        return repair.out
    }

    /// One pass of `repairMarkup`: runs of good bytes are copied whole; references, C1 controls
    /// and forbidden control characters are rewritten or dropped; comments, CDATA sections and
    /// processing instructions are copied as they are (less forbidden control characters).
    private struct MarkupRepair {
        let buffer: UnsafeBufferPointer<UInt8>
        let p: UnsafePointer<UInt8>
        let keepingPredefined: Bool
        var out: [UInt8] = []
        var i = 0
        var runStart = 0
        var n: Int { buffer.count }

        init(buffer: UnsafeBufferPointer<UInt8>, p: UnsafePointer<UInt8>, keepingPredefined: Bool) {
            self.buffer = buffer
            self.p = p
            self.keepingPredefined = keepingPredefined
            out.reserveCapacity(buffer.count + buffer.count / 16)
        }

        mutating func run() {
            while i < n {
                // References to XML's five entities, when kept, stay in the run.
                i += keepingPredefined ? ByteScan.repairPastEntities(p + i, n - i) : ByteScan.repair(p + i, n - i)
                guard i < n else { break }
                switch p[i] {
                case UInt8(ascii: "<"):
                    if let (bodyStart, terminator) = section(buffer, at: i) {
                        i = bodyStart
                        skipUntil(terminator)
                    } else {
                        i += 1
                    }
                case UInt8(ascii: "&"):
                    flush()
                    i = rewriteReference(buffer, at: i, into: &out, keepingPredefined: keepingPredefined)
                    runStart = i
                case 0xC2:
                    c1Control()
                default:
                    // A control character XML forbids.
                    flush()
                    i += 1
                    runStart = i
                }
            }
            flush()
        }

        private mutating func flush() {
            if runStart < i { out.append(contentsOf: UnsafeBufferPointer(start: p + runStart, count: i - runStart)) }
        }

        /// C1 control characters (U+0080–U+009F) stand for Windows-1252 punctuation in feeds.
        private mutating func c1Control() {
            guard i + 1 < n, p[i + 1] >= 0x80, p[i + 1] <= 0x9F else {
                i += 1
                return
            }
            flush()
            appendUTF8(windows1252(p[i + 1]), to: &out)
            i += 2
            runStart = i
        }

        private func startsWith(_ s: StaticString, at index: Int) -> Bool {
            let count = s.utf8CodeUnitCount
            guard index + count <= n else { return false }
            return memcmp(p + index, s.utf8Start, count) == 0
        }

        /// Moves `i` past `terminator`, copying (less forbidden control characters).
        private mutating func skipUntil(_ terminator: StaticString) {
            let first = terminator.utf8Start.pointee
            while i < n {
                let b = p[i]
                if b == first, startsWith(terminator, at: i) {
                    i += terminator.utf8CodeUnitCount
                    return
                }
                if b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D {
                    flush()
                    i += 1
                    runStart = i
                    continue
                }
                i += 1
            }
        }
    }

    static func appendUTF8(_ value: UInt32, to out: inout [UInt8]) {
        UTF8.encode(Unicode.Scalar(value) ?? "\u{FFFD}") { out.append($0) }
    }

    /// Handles the `&` at `start`; returns the index after what it consumed.
    private static func rewriteReference(
        _ input: UnsafeBufferPointer<UInt8>, at start: Int, into out: inout [UInt8], keepingPredefined: Bool
    ) -> Int {
        var j = start + 1
        let n = input.count
        if j < n && input[j] == UInt8(ascii: "#") {
            j += 1
            let hex = j < n && (input[j] == UInt8(ascii: "x") || input[j] == UInt8(ascii: "X"))
            if hex { j += 1 }
            let digitsStart = j
            let value: UInt32
            (value, j) = referenceDigits(input, from: digitsStart, hex: hex, maxDigits: 8)
            if j > digitsStart, j < n, input[j] == UInt8(ascii: ";") {
                // References to 128–159 name Windows-1252 characters in practice (HTML5 does the same).
                let mapped = (0x80...0x9F).contains(value) ? windows1252(UInt8(value)) : value
                // Kept as written when XML reads it the same ("&#X41;" it does not).
                if mapped == value, xmlAllowed(value), input[start + 2] != UInt8(ascii: "X") {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: input[start...j]))
                } else {
                    appendCharacterReference(xmlAllowed(mapped) ? mapped : 0xFFFD, to: &out)
                }
                return j + 1
            }
            out.append(contentsOf: "&amp;".utf8)
            return start + 1
        }
        while j < n, j - start <= 32,
            (input[j] >= 0x61 && input[j] <= 0x7A) || (input[j] >= 0x41 && input[j] <= 0x5A)
                || (input[j] >= 0x30 && input[j] <= 0x39)
        { j += 1 }
        if j > start + 1, j < n, input[j] == UInt8(ascii: ";") {
            let name = UnsafeBufferPointer(rebasing: input[(start + 1)..<j])
            if keepingPredefined, predefinedEntity(name) != nil {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: input[start...j]))
                return j + 1
            }
            if let value = predefinedEntity(name) ?? HTMLEntities.codePoint(name) {
                appendCharacterReference(value, to: &out)
                return j + 1
            }
        }
        // A bare '&' or an entity nobody defines: keep it as literal text.
        out.append(contentsOf: "&amp;".utf8)
        return start + 1
    }

    private static func appendCharacterReference(_ value: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "&"))
        out.append(UInt8(ascii: "#"))
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { d in
            repeat {
                d[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            for k in stride(from: count - 1, through: 0, by: -1) { out.append(d[k]) }
        }
        out.append(UInt8(ascii: ";"))
    }

    static func xmlAllowed(_ value: UInt32) -> Bool {
        value == 0x9 || value == 0xA || value == 0xD || (0x20...0xD7FF).contains(value)
            || (0xE000...0xFFFD).contains(value) || (0x10000...0x10FFFF).contains(value)
    }
}
