import Foundation
import NewsPushModel

/// The fetch loop on a thread of its own, filling a small buffer that the run pulls documents
/// from. The run's work on each feed (parse, ledger, classification, item log) then never holds
/// up a transfer: transfers in flight always run to their end, and a full buffer only keeps new
/// ones from starting, so at most `capacity` documents plus those in flight wait in memory.
/// `stop()` (the run failed, or is done) abandons what is still fetching.
final class FeedPull: @unchecked Sendable {
    // Guarded by `condition` (NSCondition: the consumer sleeps until a document or the end
    // arrives, which Mutex alone cannot do).
    private let condition = NSCondition()
    private var ready: [(index: Int, fetched: FetchedFeed)] = []
    private var finished = false
    private var stopping = false
    private let capacity: Int

    /// Starts fetching `feeds` (with `records`' validators and pauses) on a new thread; the
    /// documents in `delivered` (by URL) are read as they are.
    init(
        _ feeds: [FeedSettings], records: [String: FeedRecord], delivered: [String: FetchedFeed],
        settings: FetchSettings,
        baseFolder: String, now: Date, capacity: Int
    ) {
        self.capacity = max(1, capacity)
        let fetcher = FeedFetcher(settings: settings, baseFolder: baseFolder)
        let gate = FetchGate(
            mayStart: { [unowned self] in locked { ready.count < self.capacity && !stopping } },
            stopped: { [unowned self] in locked { stopping } })
        let thread = Thread { [self] in
            fetcher.fetchEach(feeds, records: records, delivered: delivered, now: now, gate: gate) { index, fetched in
                locked { ready.append((index, fetched)) }
                condition.signal()
            }
            locked { finished = true }
            condition.broadcast()
        }
        thread.name = "newspush-fetch"
        thread.start()
    }

    /// Waits for at least one document and takes every one that is ready; nil once the fetch
    /// loop has ended and everything was taken.
    func take() -> [(index: Int, fetched: FetchedFeed)]? {
        condition.lock()
        defer { condition.unlock() }
        while ready.isEmpty && !finished { condition.wait() }
        guard !ready.isEmpty else { return nil }
        let batch = ready
        ready = []
        return batch
    }

    /// Stops the fetch loop (transfers in flight are abandoned, the rest never start) and
    /// returns once its thread is done with the buffer.
    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopping = true
        while !finished { condition.wait() }
        ready = []
    }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}
