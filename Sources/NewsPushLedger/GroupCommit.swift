import Foundation

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

        init(durable: Bool, _ body: @escaping () throws -> Void) {
            self.durable = durable
            self.body = body
        }
    }

    /// The connection's turn: each read and each batch holds it (recursive: a read inside a
    /// write's body is the same turn).
    let turn = NSRecursiveLock()
    private let condition = NSCondition()
    private var waiting: [Job] = []
    private var committing = false

    /// Runs `body` in a transaction of `db` shared with the writes waiting beside it;
    /// `durable`: that transaction waits for the disk (`synchronous = FULL`), as a run's send
    /// journal does, instead of the index's `NORMAL`.
    func write<T>(_ db: any LedgerDatabase, durable: Bool = false, _ body: () throws -> T) throws -> T {
        var value: T?
        try withoutActuallyEscaping(body) { body in
            let job = Job(durable: durable) { value = try body() }
            condition.lock()
            waiting.append(job)
            while !job.done {
                if committing {
                    condition.wait()
                    continue
                }
                committing = true
                let batch = waiting
                waiting = []
                condition.unlock()
                let failure = commit(batch, db: db)
                condition.lock()
                for member in batch {
                    if member.failure == nil { member.failure = failure }
                    member.done = true
                }
                committing = false
                condition.broadcast()
            }
            condition.unlock()
            if let failure = job.failure { throw failure }
        }
        guard let value else { throw CancellationError() }  // unreachable: done without a failure ran the body
        return value
    }

    /// Runs each job of `batch` in its own savepoint of one transaction; the transaction's
    /// failure (the commit's), if any.
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
                        try db.run("ROLLBACK TO one_write", [])
                        try db.run("RELEASE one_write", [])
                    }
                }
            }
            return nil
        } catch {
            return error
        }
    }
}
