import Foundation
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// What the app back-end's work on one installation is ordered by (SPEC §9, "A phone stays
/// registered"): its id, the digest of a handle it holds or takes, and its owner. Whoever
/// changes an installation at the hub and in the index holds the keys of everything the change
/// touches, from before it reads the index until it has written both, so two changes of one
/// id, one handle or one reader's devices never interleave, on any engine and across hosts.
public enum InstallationKey: Hashable, Sendable, Comparable {
    /// An installation id.
    case id(String)
    /// A push handle, by its digest.
    case handle(String)
    /// A signed-in reader (their registrations against a forget).
    case user(String)

    /// The lock this key takes: a 32-bit hash (FNV-1a, written here because the lock id needs
    /// no more than a spread of bits: two keys of one hash merely wait for each other).
    var slot: Int32 {
        let text: String
        switch self {
        case .id(let id): text = "i:" + id
        case .handle(let digest): text = "h:" + digest
        case .user(let name): text = "u:" + name
        }
        var hash: UInt32 = 2_166_136_261
        for byte in text.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: hash)
    }

    /// The order locks are taken in: by slot.
    public static func < (a: InstallationKey, b: InstallationKey) -> Bool { a.slot < b.slot }
}

extension Ledger {
    /// Runs `body` holding the locks of `keys`, taken in one order (their slots ascending) so
    /// two holders never wait for each other: PostgreSQL's session-level advisory locks on this
    /// ledger's connection (released with it when a host dies), or on SQLite a lock per slot
    /// among the process's threads and a byte-range lock on the ledger's `-keys` file between
    /// processes (`devices prune` beside `newspush api`). The locks are held across the hub's
    /// requests; the index's transactions inside `body` are short and separate.
    public func withKeys<T>(_ keys: Set<InstallationKey>, _ body: () throws -> T) throws -> T {
        let slots = Array(Set(keys.map(\.slot))).sorted()
        if let postgres = db as? PostgresDatabase {
            try Self.wrap(path, writing: true) { try postgres.advisoryLocks(slots, take: true) }
            defer { try? postgres.advisoryLocks(slots, take: false) }
            return try body()
        }
        let bytes = Array(Set(slots.map { $0 & 0x7fff_ffff })).sorted()
        let locks = try Self.wrap(path, writing: true) { try FileKeyLocks.of(path) }
        try Self.wrap(path, writing: true) { try locks.take(bytes) }
        defer { locks.release(bytes) }
        return try body()
    }
}

extension PostgresDatabase {
    /// Takes (or releases) the advisory locks of `slots`, in order, in one statement: each is
    /// keyed by the ledger's schema and the slot, so two ledgers in one database never meet.
    func advisoryLocks(_ slots: [Int32], take: Bool) throws(DatabaseError) {
        guard !slots.isEmpty else { return }
        let function = take ? "pg_advisory_lock" : "pg_advisory_unlock"
        let calls = slots.map { _ in "\(function)(hashtext(current_schema()), CAST(? AS INTEGER))" }
        _ = try query("SELECT " + calls.joined(separator: ", "), slots.map { .integer(Int64($0)) })
    }
}

/// The SQLite ledger's key locks: among the process's threads a set of held slots, between
/// processes a write lock on byte `slot` of `<ledger>-keys` (`fcntl`, which the kernel drops
/// when the process ends, however it ends). Written here because neither SQLite nor Foundation
/// has a lock per key that spans processes.
final class FileKeyLocks: @unchecked Sendable {
    private static let registry = NSLock()
    nonisolated(unsafe) private static var byPath: [String: FileKeyLocks] = [:]

    /// The locks of the ledger at `path` (one per process: closing any descriptor of the file
    /// would drop every lock the process holds on it, so the one descriptor stays open).
    static func of(_ path: String) throws -> FileKeyLocks {
        registry.lock()
        defer { registry.unlock() }
        if let locks = byPath[path] { return locks }
        let fd = open(path + "-keys", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw LedgerError.writeFailed(path: path + "-keys", reason: String(cString: strerror(errno)))
        }
        let locks = FileKeyLocks(fd: fd)
        byPath[path] = locks
        return locks
    }

    private let fd: Int32
    private let condition = NSCondition()
    private var held: Set<Int32> = []

    private init(fd: Int32) { self.fd = fd }

    /// Takes `slots` (byte offsets, ascending), waiting for each.
    func take(_ slots: [Int32]) throws {
        for (n, slot) in slots.enumerated() {
            condition.lock()
            while held.contains(slot) { condition.wait() }
            held.insert(slot)
            condition.unlock()
            if let error = fileLock(slot, type: F_WRLCK) {
                release(Array(slots[...n]))
                throw LedgerError.writeFailed(path: "the ledger's -keys file", reason: error)
            }
        }
    }

    /// Lets `slots` go.
    func release(_ slots: [Int32]) {
        for slot in slots {
            _ = fileLock(slot, type: F_UNLCK)
            condition.lock()
            held.remove(slot)
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Locks or unlocks byte `slot`, waiting; the error's words when it fails.
    private func fileLock(_ slot: Int32, type: Int32) -> String? {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(slot)
        lock.l_len = 1
        while fcntl(fd, F_SETLKW, &lock) != 0 {
            if errno != EINTR { return String(cString: strerror(errno)) }
        }
        return nil
    }
}
