/// A growable byte buffer for the text the SAX callbacks deliver. libxml2 calls back once per
/// entity reference in escaped HTML, often for a single byte; an Array's uniqueness check and
/// generic append on each call were 4 % of a parse (perf), so the buffer is kept by hand.
struct ByteBuffer: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int = 1 << 14) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    /// The bytes so far; valid until the next change.
    var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        if count + bytes.count > capacity { grow(to: count + bytes.count) }
        if bytes.count <= 8 {
            // Most runs are a character or a word (escaped markup arrives a reference at a
            // time): a loop costs less than calling memmove.
            for k in 0..<bytes.count { base[count + k] = source[k] }
        } else {
            (base + count).initialize(from: source, count: bytes.count)
        }
        count += bytes.count
    }

    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(to: count + 1) }
        base[count] = byte
        count += 1
    }

    mutating func removeAll() { count = 0 }

    private mutating func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        bigger.initialize(from: base, count: count)
        base.deallocate()
        base = bigger
        capacity = newCapacity
    }
}
