internal import CLibXML2
import Foundation

// The bench's only file that talks to libxml2.

/// The yardstick of the parse benchmark: libxml2's SAX2 tokenizer over the same bytes with
/// callbacks that only count, so the cost of newspush's own work can be seen beside it.
enum BareSAXPass {
    /// Parses `data` with libxml2 (recover mode) and returns the number of elements seen.
    static func run(_ data: Data) -> Int {
        final class Counter { var elements = 0 }
        let counter = Counter()
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = { context, _, _, _, _, _, _, _, _ in
            guard let context else { return }
            Unmanaged<Counter>.fromOpaque(context).takeUnretainedValue().elements += 1
        }
        handler.characters = { _, _, _ in }
        handler.cdataBlock = { _, _, _ in }
        handler.serror = { _, _ in }
        let me = Unmanaged.passUnretained(counter).toOpaque()
        guard let context = xmlCreatePushParserCtxt(&handler, me, nil, 0, nil) else { return 0 }
        defer { xmlFreeParserCtxt(context) }
        xmlCtxtUseOptions(
            context,
            Int32(
                XML_PARSE_NONET.rawValue | XML_PARSE_RECOVER.rawValue | XML_PARSE_NOERROR.rawValue
                    | XML_PARSE_NOWARNING.rawValue | XML_PARSE_HUGE.rawValue))
        data.withUnsafeBytes { raw in
            let chars = raw.bindMemory(to: CChar.self)
            guard let start = chars.baseAddress else { return }
            var offset = 0
            while offset < chars.count {
                let length = min(1 << 20, chars.count - offset)
                xmlParseChunk(context, start + offset, Int32(length), 0)
                offset += length
            }
            xmlParseChunk(context, nil, 0, 1)
        }
        return counter.elements
    }
}
