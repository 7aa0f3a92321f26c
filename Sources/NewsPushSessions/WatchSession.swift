import Foundation
import Logging
import NewsPushCore
import NewsPushLedger

/// Raised once (SIGTERM) to stop the watcher after the cycle in hand; its waits end at once.
public final class WatchStop: @unchecked Sendable {
    private let condition = NSCondition()
    private var raised = false

    /// A stop not raised yet.
    public init() {}

    /// Stops the watcher: a wait in progress ends now, a cycle in progress finishes first.
    public func raise() {
        condition.lock()
        raised = true
        condition.broadcast()
        condition.unlock()
    }

    /// Whether the watcher is to stop.
    public var isRaised: Bool {
        condition.lock()
        defer { condition.unlock() }
        return raised
    }

    /// Waits until `deadline` (the machine's time) or the stop, whichever comes first.
    func wait(until deadline: Date) {
        condition.lock()
        while !raised && condition.wait(until: deadline) {}
        condition.unlock()
    }
}

/// `newspush watch` (SPEC §10): the run's stages continuously, each feed fetched when it is due
/// on its own `FeedSchedule`. A cycle is a run of the due feeds by `RunSession`, the same code,
/// ledger promises and lock as `run` (it waits for a cron run, `publish` or an approval that
/// holds the lock), so they interleave with it.
public struct WatchSession: Sendable {
    /// The newsroom the watcher works for.
    public var context: SessionContext
    /// How long a cycle waits for another job's lock before trying again later.
    public var lockWait: Double = 30

    /// A watcher for `context`.
    public init(context: SessionContext) {
        self.context = context
    }

    /// Watches until `stop` is raised; `cycle` gets each cycle's result. A cycle that cannot
    /// take the lock in `lockWait`, or whose feeds' clocks are too far off, is logged and
    /// tried again; anything else that would stop a run stops the watcher (thrown).
    public func watch(until stop: WatchStop, cycle: (RunResult) -> Void) throws(SessionError) {
        let settings = context.config.watch
        let start = context.clock.now()
        var schedules = Dictionary(
            context.config.feeds.map { ($0.url, FeedSchedule.first(at: start, settings: settings)) },
            uniquingKeysWith: { first, _ in first })
        while !stop.isRaised {
            let now = context.clock.now()
            let due = schedules.filter { $0.value.due <= now }.map(\.key).sorted()
            guard !due.isEmpty else {
                let next = schedules.values.map(\.due).min() ?? now.addingTimeInterval(settings.interval)
                stop.wait(until: Date().addingTimeInterval(next.timeIntervalSince(now)))
                continue
            }
            guard let result = try runCycle(due, stop: stop) else { continue }
            // Each fetch was answered somewhere between the cycle's start and its end: the next is
            // counted from the end, and the server's limits (counted by the run from its start)
            // are moved by the cycle's length, so neither is ever overtaken.
            let ended = context.clock.now()
            for url in due {
                var outcome = result.fetches[url] ?? FetchOutcome(.failed)
                outcome.notBefore = outcome.notBefore?.addingTimeInterval(max(0, ended.timeIntervalSince(now)))
                schedules[url] = schedules[url]?.next(
                    after: outcome, at: ended, settings: settings, jitter: Double.random(in: 0.9...1.1))
            }
            cycle(result)
        }
    }

    /// One cycle over `due`; nil when it is to be tried again (the lock held too long, the
    /// feeds' clocks off), after a pause.
    private func runCycle(_ due: [String], stop: WatchStop) throws(SessionError) -> RunResult? {
        do {
            return try RunSession(context: context).run(RunRequest(feeds: due, lockWait: lockWait))
        } catch .ledger(.locked) {
            context.logger.warning(
                "watch: the ledger is still locked by another job after \(Int(lockWait)) s; trying again")
        } catch .clockSkew(let problem) {
            context.logger.error("watch: \(problem); nothing was decided this cycle")
            stop.wait(until: Date().addingTimeInterval(context.config.watch.minInterval))
        }
        return nil
    }
}
