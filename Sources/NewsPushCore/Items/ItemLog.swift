import Foundation
import NewsPushModel
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A run's items, one chunk per feed, kept in an unlinked scratch file instead of memory: a run
/// of 10,000 feeds lists 300,000 items, and only the few its plan decides need to stay in
/// memory. The report, the ledger's record and the same-story question read the chunks back,
/// feed by feed, in the config's order (feeds finish fetching in any order).
///
/// Chunks are appended from one thread while feeds are read; afterwards the log only answers
/// reads (`pread`, safe from several threads: the desk renders one preview for many requests).
/// When no scratch file can be made or written (no writable temporary folder, a full disk),
/// chunks stay in memory: a run never fails for want of scratch space.
public final class ItemLog: @unchecked Sendable {
    private enum Place {
        case file(offset: Int, length: Int)
        case memory([UInt8])
    }

    private var chunks: [Place?]
    private var descriptor: Int32 = -1
    private var end = 0
    private let failure = Mutex<String?>(nil)

    /// Why a chunk could not be read back whole (a short or failed read of the scratch file),
    /// once one could not: that feed's items are missing, so the run must not record or report
    /// as if they were not there.
    public var readFailure: String? { failure.withLock { $0 } }

    /// A log for `feedCount` feeds, its scratch file in `folder` (the temporary folder, `TMPDIR`).
    public init(feedCount: Int, folder: String = NSTemporaryDirectory()) {
        chunks = Array(repeating: nil, count: feedCount)
        var template = Array((folder + "/newspush-items-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }
        if fd >= 0 {
            // Unlinked at once: the file goes with the process, however it ends.
            template.withUnsafeBufferPointer { buffer in _ = buffer.baseAddress.map { unlink($0) } }
            descriptor = fd
        }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Whether the chunks are in a scratch file (else in memory).
    public var isOnDisk: Bool { descriptor >= 0 }

    /// Keeps `items` as feed `feed`'s chunk.
    public func append(feed: Int, _ items: [ListedItem]) {
        var writer = ByteWriter()
        writer.int(items.count)
        for item in items { writer.item(item) }
        let bytes = writer.bytes
        if descriptor >= 0, Self.write(bytes, to: descriptor, at: end) {
            chunks[feed] = .file(offset: end, length: bytes.count)
            end += bytes.count
        } else {
            chunks[feed] = .memory(bytes)
        }
    }

    /// Feed `feed`'s items, in document order (none when it listed none).
    public func items(ofFeed feed: Int) -> [ListedItem] {
        guard feed < chunks.count, let place = chunks[feed] else { return [] }
        let bytes: [UInt8]
        switch place {
        case .memory(let kept): bytes = kept
        case .file(let offset, let length):
            guard let read = Self.read(length, from: descriptor, at: offset) else {
                let reason =
                    "the run's item log could not be read back (feed \(feed + 1): \(String(cString: strerror(errno))))"
                failure.withLock { $0 = $0 ?? reason }
                return []
            }
            bytes = read
        }
        var reader = ByteReader(bytes)
        let count = reader.int()
        var items: [ListedItem] = []
        items.reserveCapacity(count)
        for _ in 0..<count {
            guard let item = reader.item() else { break }
            items.append(item)
        }
        return items
    }

    /// How many feeds the log has room for.
    public var feedCount: Int { chunks.count }

    private static func write(_ bytes: [UInt8], to fd: Int32, at offset: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                buffer.baseAddress.map { pwrite(fd, $0 + done, bytes.count - done, off_t(offset + done)) } ?? -1
            }
            if n <= 0 { return false }
            done += n
        }
        return true
    }

    /// The chunk's bytes; nil on a failed or short read (never zeros in place of items).
    private static func read(_ length: Int, from fd: Int32, at offset: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: length)
        var done = 0
        while done < length {
            let n = bytes.withUnsafeMutableBytes { buffer in
                buffer.baseAddress.map { pread(fd, $0 + done, length - done, off_t(offset + done)) } ?? -1
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                if n == 0 { errno = EIO }
                return nil
            }
            done += n
        }
        return bytes
    }
}

// Written by hand: a fixed, private layout read back by the same process (no format library
// is needed, and Foundation's coders are several times slower over 300,000 items).
private struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func int(_ value: Int) {
        var v = UInt64(bitPattern: Int64(value))
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func double(_ value: Double) {
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ value: String?) {
        guard let value else { return int(-1) }
        let utf8 = value.utf8
        int(utf8.count)
        bytes.append(contentsOf: utf8)
    }

    mutating func date(_ value: Date?) {
        bytes.append(value == nil ? 0 : 1)
        if let value { double(value.timeIntervalSinceReferenceDate) }
    }

    mutating func item(_ item: ListedItem) {
        string(item.key)
        string(item.linkKey)
        string(item.title)
        string(item.link)
        date(item.published)
        date(item.updated)
        date(item.firstSeen)
        string(item.classification.category?.rawValue)
        double(item.classification.confidence)
        bytes.append((item.tombstoned ? 1 : 0) | (item.inBaselineFeed ? 2 : 0) | (item.previous != nil ? 4 : 0))
        if let previous = item.previous {
            string(previous.key)
            string(previous.title)
            string(previous.status.rawValue)
            string(previous.origin.rawValue)
        }
        string(item.decision?.rawValue)
        string(item.reason)
    }
}

private struct ByteReader {
    let bytes: [UInt8]
    var at = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func int() -> Int {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
        }
        return Int(Int64(bitPattern: value))
    }

    mutating func double() -> Double {
        guard at + 8 <= bytes.count else { return 0 }
        var bits: UInt64 = 0
        for i in 0..<8 { bits |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
        at += 8
        return Double(bitPattern: bits)
    }

    mutating func string() -> String? {
        let count = int()
        guard count >= 0, at + count <= bytes.count else { return nil }
        defer { at += count }
        return String(decoding: bytes[at..<at + count], as: UTF8.self)
    }

    mutating func date() -> Date? {
        guard at < bytes.count else { return nil }
        at += 1
        return bytes[at - 1] == 0 ? nil : Date(timeIntervalSinceReferenceDate: double())
    }

    mutating func item() -> ListedItem? {
        guard let key = string() else { return nil }
        let linkKey = string(), title = string(), link = string()
        let published = date(), updated = date(), firstSeen = date() ?? Date.distantPast
        let category = string().flatMap(NewsCategory.init(rawValue:))
        let confidence = double()
        let flags = at < bytes.count ? bytes[at] : 0
        at += 1
        var previous: ListedItem.KnownStory?
        if flags & 4 != 0 {
            let key = string() ?? "", title = string()
            let status = string().flatMap(StoryRecord.Status.init(rawValue:)) ?? .seen
            let origin = string().flatMap(StoryRecord.Origin.init(rawValue:)) ?? .run
            previous = ListedItem.KnownStory(key: key, title: title, status: status, origin: origin)
        }
        return ListedItem(
            key: key, linkKey: linkKey, title: title, link: link, published: published, updated: updated,
            firstSeen: firstSeen, classification: Classification(category: category, confidence: confidence),
            tombstoned: flags & 1 != 0, inBaselineFeed: flags & 2 != 0, previous: previous,
            decision: string().flatMap(ItemDecision.init(rawValue:)), reason: string())
    }
}
