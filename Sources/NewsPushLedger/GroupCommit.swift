import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Group commit for one connection shared by many threads (`newspush api` on SQLite): the
/// writes that arrive while a transaction is being committed wait, and the next thread to go
/// commits them all in one transaction, each in a savepoint of its own, so one write's error
/// undoes that write only. Every caller still returns only after its write is committed (or
/// throws why not). A commit is what costs (the pages written to the write-ahead log, its
/// checkpoints); the registrations of one commit share it.
///
/// Written here because SQLite has no group commit of its own, and its connections are not
/// safe to share without taking turns.
final class GroupCommit: @unchecked Sendable {
    /// One write: runs its body in the batch's transaction and keeps what came of it.
    private final class Job {
        /// Let go of once run, so nothing holds the caller's closure after it returns.
        var body: (() throws -> Void)?
        var failure: (any Error)?
        var done = false
        /// Committed only once on the disk (the send journal's writes).
        let durable: Bool
        /// A thread's write waits here: woken when its batch is committed, or to commit the next one.
        let woken = DispatchSemaphore(value: 0)
        /// A task's write (`write(_:schedule:_:)`): told of its batch's commit here, no thread waiting.
        let resume: (@Sendable ((any Error)?) -> Void)?

        init(durable: Bool, resume: (@Sendable ((any Error)?) -> Void)? = nil, _ body: @escaping () throws -> Void) {
            self.durable = durable
            self.resume = resume
            self.body = body
        }
    }

    /// Runs a commit on a thread that may block (the back-end's), for the tasks' writes.
    typealias Schedule = @Sendable (_ commit: @escaping @Sendable () -> Void) -> Void

    /// The connection's turn: each read and each batch holds it (recursive: a read inside a
    /// write's body is the same turn).
    let turn = NSRecursiveLock()
    /// Guards `waiting`, `committing`, `committer` and `drain`. Each thread waits on its own
    /// job's semaphore, so a commit wakes the threads of its batch and the next committer, not
    /// every waiting thread (a broadcast woke all 32 of the back-end's threads at each commit).
    private let lock = NSLock()
    private var waiting: [Job] = []
    private var committing = false
    /// The thread committing a batch now: a write its jobs make runs inside their transaction.
    private var committer: pthread_t?
    /// Where the tasks' writes are committed when no thread of a write waits to: set by the
    /// first task's write, and whether a commit of them is scheduled already.
    private var drain: (schedule: Schedule, scheduled: Bool)?

    /// Runs `body` in a transaction of `db` shared with the writes waiting beside it;
    /// `durable`: that transaction waits for the disk (`synchronous = FULL`), as a run's send
    /// journal does, instead of the index's `NORMAL`. A write made inside another's body (on the
    /// committing thread) is a savepoint of that transaction, never a wait for itself.
    func write<T>(_ db: any LedgerDatabase, durable: Bool = false, _ body: () throws -> T) throws -> T {
        if isCommitter() { return try nested(db, body) }
        var value: T?
        try withoutActuallyEscaping(body) { body in
            let job = Job(durable: durable) { value = try body() }
            lock.lock()
            waiting.append(job)
            while !job.done {
                if committing {
                    lock.unlock()
                    job.woken.wait()
                    lock.lock()
                    continue
                }
                commitWaiting(db, own: job)
            }
            lock.unlock()
            if let failure = job.failure { throw failure }
        }
        guard let value else { throw CancellationError() }  // unreachable: done without a failure ran the body
        return value
    }

    /// `body` written as `write` writes it, from a task that holds no thread while it waits:
    /// its write joins the batch being gathered, and when no write's thread is there to commit
    /// it, `schedule` runs the commit on one of its threads (one per batch, not one per write:
    /// an alert's receipts from every phone at once otherwise held a thread each).
    func write<T: Sendable>(_ db: any LedgerDatabase, schedule: @escaping Schedule, _ body: @escaping () throws -> T)
        async throws -> T
    {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let value = Mutex<T?>(nil)
            let job = Job(
                durable: false,
                resume: { failure in
                    if let failure { return continuation.resume(throwing: failure) }
                    // Done without a failure ran the body.
                    guard let written = value.withLock({ $0 }) else {
                        return continuation.resume(throwing: CancellationError())
                    }
                    continuation.resume(returning: written)
                }
            ) {
                let written = try body()
                value.withLock { $0 = written }
            }
            lock.lock()
            waiting.append(job)
            if drain == nil { drain = (schedule, false) }
            let run = committing ? nil : scheduleDrain(db)
            lock.unlock()
            run?()
        }
    }

    /// Commits what is waiting (on the thread `schedule` lent), until a thread of a write takes
    /// over or nothing waits.
    private func drainWaiting(_ db: any LedgerDatabase) {
        lock.lock()
        drain?.scheduled = false
        while !committing, !waiting.isEmpty { commitWaiting(db, own: nil) }
        lock.unlock()
    }

    /// The commit of the tasks' writes to schedule, unless one is scheduled already. Called
    /// holding `lock`; the returned closure is run after it is let go.
    private func scheduleDrain(_ db: any LedgerDatabase) -> (() -> Void)? {
        guard let (schedule, scheduled) = drain, !scheduled else { return nil }
        drain?.scheduled = true
        let connection = Connection(db: db)
        return { schedule { self.drainWaiting(connection.db) } }
    }

    /// Commits every write waiting, as one batch, on this thread (whose write is `own`, if
    /// any); called holding `lock` with no batch being committed, returns holding it. Its
    /// threads are woken and its tasks resumed; then the next to commit: the first write's
    /// thread waiting, else a scheduled commit (or this one's next turn).
    private func commitWaiting(_ db: any LedgerDatabase, own: Job?) {
        committing = true
        committer = pthread_self()
        let batch = waiting
        waiting = []
        lock.unlock()
        let failure = commit(batch, db: db)
        for member in batch where member.resume != nil {
            member.resume?(member.failure ?? failure)
        }
        lock.lock()
        for member in batch {
            if member.failure == nil { member.failure = failure }
            member.done = true
            if member.resume == nil && member !== own { member.woken.signal() }
        }
        committing = false
        committer = nil
        // A scheduled commit (no write of its own) goes on with the next batch by itself.
        if let next = waiting.first(where: { $0.resume == nil }) {
            next.woken.signal()
        } else if own != nil, !waiting.isEmpty, let run = scheduleDrain(db) {
            lock.unlock()
            run()
            lock.lock()
        }
    }

    /// The shared connection handed to the thread that commits: used only holding `turn`.
    private struct Connection: @unchecked Sendable {
        let db: any LedgerDatabase
    }

    /// How many writes wait for the next batch (the tests' view).
    var waitingCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return waiting.count
    }

    private func isCommitter() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let committer else { return false }
        return pthread_equal(committer, pthread_self()) != 0
    }

    /// A write inside a job's body: a savepoint of the batch's transaction.
    private func nested<T>(_ db: any LedgerDatabase, _ body: () throws -> T) throws -> T {
        try db.run("SAVEPOINT nested_write", [])
        do {
            let value = try body()
            try db.run("RELEASE nested_write", [])
            return value
        } catch {
            if Self.isOpen(db) {
                try db.run("ROLLBACK TO nested_write", [])
                try db.run("RELEASE nested_write", [])
            }
            throw error
        }
    }

    /// Runs each job of `batch` in its own savepoint of one transaction; the transaction's
    /// failure (the commit's), if any. When SQLite rolls the whole transaction back by itself (a
    /// full disk, an I/O error), every job of the batch, done or not, fails with that error.
    private func commit(_ batch: [Job], db: any LedgerDatabase) -> (any Error)? {
        turn.lock()
        defer { turn.unlock() }
        let durable = batch.contains { $0.durable }
        do {
            // The level is a connection's setting, changed outside a transaction only.
            if durable { try db.run("PRAGMA synchronous = FULL", []) }
            defer { if durable { _ = try? db.run("PRAGMA synchronous = NORMAL", []) } }
            try db.transaction {
                for job in batch {
                    try db.run("SAVEPOINT one_write", [])
                    defer { job.body = nil }
                    do {
                        try job.body?()
                        try db.run("RELEASE one_write", [])
                    } catch {
                        job.failure = error
                        guard Self.isOpen(db) else { throw RolledBack(cause: error) }
                        try db.run("ROLLBACK TO one_write", [])
                        try db.run("RELEASE one_write", [])
                    }
                }
            }
            return nil
        } catch let rolledBack as RolledBack {
            return rolledBack.cause
        } catch {
            return error
        }
    }

    /// SQLite ended the batch's transaction by itself; `cause` is why.
    private struct RolledBack: Error {
        var cause: any Error
    }

    /// Whether the batch's transaction is still open.
    private static func isOpen(_ db: any LedgerDatabase) -> Bool {
        (db as? SQLiteDatabase)?.inTransaction ?? true
    }
}
