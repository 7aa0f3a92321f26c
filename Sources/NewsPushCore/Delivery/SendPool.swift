import Foundation
import NewsPushModel
import Synchronization

/// A fixed set of threads that run blocking sends, at most `width` at once. The sends block in
/// libcurl, and Swift's cooperative pool has only as many threads as cores (two here) and must
/// not be blocked, so the sends get threads of their own: made once per drain of the outbox,
/// not one per push.
final class SendPool: Sendable {
    private struct Batch {
        var work: @Sendable (Int) -> Void
        var count: Int
        var next = 0
        var running = 0
        var stopped = false
        var reported = false
    }

    private struct State {
        var batch: Batch?
        var closed = false
    }

    let width: Int
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(width: Int) {
        self.width = max(1, width)
        for _ in 0..<self.width {
            Thread { [self] in self.serve() }.start()
        }
    }

    /// Runs `work` for 0..<count, `width` at a time, and returns when all have finished, or
    /// when those under way have finished after `stop()` (the rest never start).
    func run(count: Int, _ work: @escaping @Sendable (Int) -> Void) {
        guard count > 0 else { return }
        state.withLock { $0.batch = Batch(work: work, count: count) }
        for _ in 0..<min(width, count) { wake.signal() }
        finished.wait()
        state.withLock { $0.batch = nil }
    }

    /// No index of the current batch starts after this.
    func stop() {
        state.withLock { $0.batch?.stopped = true }
    }

    /// Lets the threads end. The pool cannot be used afterwards.
    func close() {
        state.withLock { $0.closed = true }
        for _ in 0..<width { wake.signal() }
    }

    private func serve() {
        while true {
            wake.wait()
            while let (index, work) = take() {
                work(index)
                complete()
            }
            if state.withLock({ $0.closed }) { return }
        }
    }

    private func take() -> (Int, @Sendable (Int) -> Void)? {
        state.withLock { state -> (Int, @Sendable (Int) -> Void)? in
            guard !state.closed, var batch = state.batch, !batch.stopped, batch.next < batch.count else { return nil }
            let index = batch.next
            batch.next += 1
            batch.running += 1
            state.batch = batch
            return (index, batch.work)
        }
    }

    private func complete() {
        let done = state.withLock { state -> Bool in
            guard var batch = state.batch else { return false }
            batch.running -= 1
            let over = batch.running == 0 && (batch.stopped || batch.next >= batch.count) && !batch.reported
            if over { batch.reported = true }
            state.batch = batch
            return over
        }
        if done { finished.signal() }
    }
}
