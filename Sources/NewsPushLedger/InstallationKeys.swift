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
    /// How long a change waits for another change of the same keys (a hub write holds them for
    /// as long as the hub takes): past it the change gives up with `LedgerError.busy`, which a
    /// phone is told as 503 with Retry-After. Below PostgreSQL's answer timeout (20 s), so a
    /// wait never counts as a lost connection.
    public static let keyPatience: Double = 10

    /// Runs `body` holding the locks of `keys`, taken in one order (their slots ascending) so
    /// two holders never wait for each other: PostgreSQL's session-level advisory locks on this
    /// ledger's connection (released with it when a host dies), or on SQLite a lock per slot
    /// among the process's threads and an open-file-description lock on byte `slot` of the
    /// ledger's `-keys` file between processes (`devices prune` beside `newspush api`). The
    /// locks are held across the hub's requests; the index's transactions inside `body` are
    /// short and separate. `waiting` is called once when a key is held elsewhere, before the
    /// wait; a wait past `patience` seconds throws `LedgerError.busy` with nothing held.
    public func withKeys<T>(
        _ keys: Set<InstallationKey>, patience: Double = Ledger.keyPatience, waiting: () -> Void = {},
        _ body: () throws -> T
    ) throws -> T {
        let slots = Array(Set(keys.map(\.slot))).sorted()
        let deadline = Date().addingTimeInterval(patience)
        let busy = LedgerError.busy(path: path, seconds: Int(patience.rounded(.up)))
        if let postgres = db as? PostgresDatabase {
            let taken = try Self.wrap(path, writing: true) {
                try postgres.advisoryLocks(slots, until: deadline, waiting: waiting)
            }
            guard taken else { throw busy }
            // Released without waiting for the answer: nothing runs on the connection before it.
            defer { postgres.releaseAdvisoryLocks(slots) }
            return try body()
        }
        let bytes = Array(Set(slots.map { $0 & 0x7fff_ffff })).sorted()
        let locks = try Self.wrap(path, writing: true) { try FileKeyLocks.of(path) }
        let taken = try Self.wrap(path, writing: true) { try locks.take(bytes, until: deadline, waiting: waiting) }
        guard taken else { throw busy }
        defer { locks.release(bytes) }
        return try body()
    }
}

extension PostgresDatabase {
    /// Takes the advisory locks of `slots` in order, waiting until `deadline` at most: true
    /// when all are held, false (none held) when one stayed held elsewhere. Each is keyed by the
    /// ledger's schema and the slot, so two ledgers in one database never meet. One statement
    /// when none is held elsewhere (the usual case); otherwise the ones past the first refused
    /// are let go and taken in order, each waiting under `lock_timeout`.
    func advisoryLocks(_ slots: [Int32], until deadline: Date, waiting: () -> Void) throws(DatabaseError) -> Bool {
        guard !slots.isEmpty else { return true }
        let tries = slots.map { _ in "pg_try_advisory_lock(hashtext(current_schema()), CAST(? AS INTEGER))" }
        let row = try query("SELECT " + tries.joined(separator: ", "), slots.map { .integer(Int64($0)) }).first
        let granted = slots.indices.map { row?.int($0) == 1 }
        guard let refused = granted.firstIndex(of: false) else { return true }
        try advisoryLocks(slots.indices.filter { $0 > refused && granted[$0] }.map { slots[$0] }, take: false)
        waiting()
        for index in refused..<slots.count {
            let milliseconds = Int(deadline.timeIntervalSinceNow * 1000)
            do throws(DatabaseError) {
                guard milliseconds > 0 else { throw DatabaseError(kind: .busy, message: "no time left") }
                // The slot is an integer made here: nothing of a caller's text is in the block.
                _ = try run(
                    "DO $$BEGIN SET LOCAL lock_timeout = \(milliseconds); "
                        + "PERFORM pg_advisory_lock(hashtext(current_schema()), \(slots[index])); END$$", [])
            } catch {
                guard error.kind == .busy else { throw error }
                try advisoryLocks(Array(slots[..<index]), take: false)
                return false
            }
        }
        return true
    }

    /// Releases (or takes, waiting as long as it takes) the advisory locks of `slots`, in order,
    /// in one statement.
    func advisoryLocks(_ slots: [Int32], take: Bool) throws(DatabaseError) {
        guard !slots.isEmpty else { return }
        let locks = Self.advisoryLockCalls(slots, take: take)
        _ = try query(locks.sql, locks.arguments)
    }

    /// Releases the advisory locks of `slots` without waiting (`send`): a release that fails
    /// closes the connection, whose end releases them.
    func releaseAdvisoryLocks(_ slots: [Int32]) {
        guard !slots.isEmpty else { return }
        let locks = Self.advisoryLockCalls(slots, take: false)
        send(locks.sql, locks.arguments)
    }

    private static func advisoryLockCalls(_ slots: [Int32], take: Bool) -> SQLStatement {
        let function = take ? "pg_advisory_lock" : "pg_advisory_unlock"
        let calls = slots.map { _ in "\(function)(hashtext(current_schema()), CAST(? AS INTEGER))" }
        return ("SELECT " + calls.joined(separator: ", "), slots.map { .integer(Int64($0)) })
    }
}

/// The SQLite ledger's key locks: among the process's threads a set of held slots, between
/// processes a write lock on byte `slot` of `<ledger>-keys`, an open file description's lock
/// (`F_OFD_SETLK`), which the kernel drops when the process ends, however it ends. Not a
/// classic `fcntl` lock: those belong to the process, and the kernel's deadlock detection
/// then reports a false `EDEADLK` between two processes whose threads wait on each other's
/// slots in the one order. Taken without blocking, tried again until the deadline, so a wait
/// is bounded. Written here because neither SQLite nor Foundation has a lock per key that spans
/// processes.
final class FileKeyLocks: @unchecked Sendable {
    private static let registry = NSLock()
    nonisolated(unsafe) private static var byPath: [String: FileKeyLocks] = [:]
    /// Linux's `F_OFD_SETLK` (Glibc's Swift module does not export it; the same number on every
    /// architecture since Linux 3.15).
    private static let setOFDLock: Int32 = 37

    /// The locks of the ledger at `path` (one per process, whose one descriptor of the file
    /// carries the process's locks).
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

    /// Takes `slots` (byte offsets, ascending), waiting for each until `deadline` at most: true
    /// when all are held, false (none held) when one stayed held past it. `waiting` is called
    /// once, before the first wait.
    func take(_ slots: [Int32], until deadline: Date, waiting: () -> Void) throws -> Bool {
        var told = false
        func wait() {
            if !told { waiting() }
            told = true
        }
        for (n, slot) in slots.enumerated() {
            guard takeInProcess(slot, until: deadline, waiting: wait) else {
                release(Array(slots[..<n]))
                return false
            }
            switch lockFile(slot, until: deadline, waiting: wait) {
            case .taken: continue
            case .timedOut:
                release(Array(slots[...n]))
                return false
            case .failed(let error):
                release(Array(slots[...n]))
                throw LedgerError.writeFailed(path: "the ledger's -keys file", reason: error)
            }
        }
        return true
    }

    /// Lets `slots` go.
    func release(_ slots: [Int32]) {
        for slot in slots {
            var lock = Self.range(slot, type: F_UNLCK)
            _ = fcntl(fd, Self.setOFDLock, &lock)
            condition.lock()
            held.remove(slot)
            condition.broadcast()
            condition.unlock()
        }
    }

    /// The slot among this process's threads.
    private func takeInProcess(_ slot: Int32, until deadline: Date, waiting: () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while held.contains(slot) {
            waiting()
            guard condition.wait(until: deadline) || !held.contains(slot) else { return false }
        }
        held.insert(slot)
        return true
    }

    private enum FileLock {
        case taken, timedOut
        case failed(String)
    }

    /// The slot among processes: tried at once, then again after 1 ms, doubling to 20 ms.
    private func lockFile(_ slot: Int32, until deadline: Date, waiting: () -> Void) -> FileLock {
        var pause: UInt32 = 1000
        while true {
            var lock = Self.range(slot, type: F_WRLCK)
            if fcntl(fd, Self.setOFDLock, &lock) == 0 { return .taken }
            guard errno == EAGAIN || errno == EACCES || errno == EINTR else {
                return .failed(String(cString: strerror(errno)))
            }
            guard Date() < deadline else { return .timedOut }
            waiting()
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
    }

    /// Byte `slot` of the file, as an open-file-description lock (`l_pid` 0).
    private static func range(_ slot: Int32, type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(slot)
        lock.l_len = 1
        lock.l_pid = 0
        return lock
    }
}
