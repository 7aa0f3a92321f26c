import Foundation
import NotificationHubs
import Synchronization

/// The installation writes one `newspush api` instance has at the hub at once (SPEC §9,
/// `api.hub_writes`): the rest wait their turn, first come first served, in a queue of their own
/// that holds no thread (a request waiting here is a suspended task, ahead of the back-end's
/// blocking threads, so the quick answers of unchanged registrations never queue behind hub
/// writes), and past the queue a phone is told to come back (`503` with `Retry-After`) at once
/// rather than wait. The hub's own throttling slows the writes down: a `429` (or a `403` with
/// `Retry-After`) pauses them for the time it asks and halves how many go at once; each write it
/// takes lets one more go again, up to the setting. Written here because a counting semaphore
/// neither queues in order, nor bounds its queue, nor adapts to the hub.
public final class HubWriteGate: Sendable {
    /// The gate's clock: seconds on a monotonic scale, and a sleep on it (the tests drive their own).
    public protocol Clock: Sendable {
        /// Seconds since some start.
        func now() -> Double
        /// Returns once this clock reads `deadline` or later (at once when it already does); throws
        /// when the task is cancelled first. A deadline, not a duration, so a sleep that starts
        /// late still ends on time.
        func sleep(until deadline: Double) async throws
    }

    /// The machine's monotonic clock.
    public struct MachineClock: Clock {
        private let start = ContinuousClock.now
        /// A clock from now.
        public init() {}
        /// Seconds since the clock was made.
        public func now() -> Double {
            let elapsed = ContinuousClock.now - start
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }
        /// `Task.sleep` for what is left.
        public func sleep(until deadline: Double) async throws {
            try await Task.sleep(for: .milliseconds(Int(max(0, deadline - now()) * 1000) + 1))
        }
    }

    /// Why a write did not get its turn, and when to try again.
    public struct Busy: Error, Sendable, Equatable {
        /// Seconds for the phone to wait.
        public var retryAfter: Int
    }

    private struct Waiter {
        var ticket: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        /// How many may be in flight now (halved by throttling, back up by each success).
        var allowed: Int
        var inFlight = 0
        /// The writes waiting, in order.
        var waiting: [Waiter] = []
        var nextTicket: UInt64 = 0
        /// No write starts before this time of the gate's clock (the hub asked to wait).
        var pausedUntil = -Double.infinity
        /// A wake-up is scheduled for the end of the pause.
        var wakeScheduled = false
        /// Those waiting for the load to change (`until`).
        var watchers: [CheckedContinuation<Void, Never>] = []
    }

    /// The longest the gate stops every write for the hub's throttling, whatever it asks.
    static let longestPause: Double = 60

    private let most: Int
    private let queueLimit: Int
    private let patience: Double
    private let state: Mutex<State>
    private let clock: any Clock

    /// At most `writes` in flight, `queue` waiting, none waiting longer than `patience` seconds
    /// of `clock`.
    public init(writes: Int, queue: Int? = nil, patience: Double = 20, clock: any Clock = MachineClock()) {
        most = max(1, writes)
        queueLimit = queue ?? most * 8
        self.patience = patience
        self.clock = clock
        state = Mutex(State(allowed: max(1, writes)))
    }

    /// Writes in flight and waiting now (the tests' and the metrics' view).
    public var load: (inFlight: Int, waiting: Int) { state.withLock { ($0.inFlight, $0.waiting.count) } }

    /// Returns once `condition` holds of the load, checked at each change (the tests wait on it
    /// instead of a clock).
    public func until(_ condition: @escaping @Sendable ((inFlight: Int, waiting: Int)) -> Bool) async {
        var holds = false
        while !holds {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if condition((state.inFlight, state.waiting.count)) { return true }
                    state.watchers.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
            holds = condition(load)
        }
    }

    /// Wakes those waiting for a change of the load.
    private func changed() {
        let watchers = state.withLock { state in
            defer { state.watchers = [] }
            return state.watchers
        }
        for watcher in watchers { watcher.resume() }
    }

    /// Waits for a turn; `Busy` at once when the queue is full, or when the wait passes
    /// `patience`.
    public func enter() async throws(Busy) {
        let now = clock.now()
        let admitted = state.withLock { state -> Result<UInt64?, Busy> in
            if state.waiting.isEmpty && state.inFlight < state.allowed && now >= state.pausedUntil {
                state.inFlight += 1
                return .success(nil)
            }
            guard state.waiting.count < queueLimit else { return .failure(Busy(retryAfter: retryAfter(state))) }
            defer { state.nextTicket += 1 }
            return .success(state.nextTicket)
        }
        guard case .success(let ticket?) = admitted else {
            if case .failure(let busy) = admitted { throw busy }
            changed()
            return
        }
        let deadline = now + patience
        let timeout = Task { [self] in
            try await clock.sleep(until: deadline)
            expire(ticket)
        }
        defer { timeout.cancel() }
        do {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.waiting.append(Waiter(ticket: ticket, continuation: continuation)) }
                changed()
                admit()
            }
        } catch let busy as Busy {
            throw busy
        } catch {
            throw Busy(retryAfter: 1)
        }
    }

    /// A write is done; `outcome` is the hub's answer to it (nil when it made none).
    public func leave(_ outcome: InstallationOutcome?) {
        state.withLock { state in
            state.inFlight -= 1
            switch outcome {
            case .refused(let status, _, let wait)? where status == 429 || (status == 403 && wait != nil):
                // The phone is told the hub's whole wait; the instance tries again within a minute.
                state.pausedUntil = max(state.pausedUntil, clock.now() + min(wait ?? 1, Self.longestPause))
                state.allowed = max(1, state.allowed / 2)
            case .done?:
                state.allowed = min(most, state.allowed + 1)
            default:
                break
            }
        }
        admit()
    }

    /// Lets the waiters go that may go now, in order; when the hub paused the writes, wakes up
    /// at the pause's end to do so.
    private func admit() {
        let now = clock.now()
        let (ready, pause) = state.withLock { state -> ([Waiter], Double?) in
            var ready: [Waiter] = []
            if now >= state.pausedUntil {
                while state.inFlight < state.allowed, !state.waiting.isEmpty {
                    ready.append(state.waiting.removeFirst())
                    state.inFlight += 1
                }
            }
            guard !state.waiting.isEmpty, now < state.pausedUntil, !state.wakeScheduled else { return (ready, nil) }
            state.wakeScheduled = true
            return (ready, state.pausedUntil)
        }
        for waiter in ready { waiter.continuation.resume() }
        changed()
        if let pause {
            Task { [self] in
                try? await clock.sleep(until: pause)
                state.withLock { $0.wakeScheduled = false }
                admit()
            }
        }
    }

    /// The waiter of `ticket` waited its patience out: told `Busy`, unless it got its turn.
    private func expire(_ ticket: UInt64) {
        let expired = state.withLock { state -> (Waiter, Busy)? in
            guard let index = state.waiting.firstIndex(where: { $0.ticket == ticket }) else { return nil }
            return (state.waiting.remove(at: index), Busy(retryAfter: retryAfter(state)))
        }
        if let (waiter, busy) = expired {
            waiter.continuation.resume(throwing: busy)
            changed()
        }
    }

    /// The wait to tell a phone turned away: the hub's pause, at least a second.
    private func retryAfter(_ state: State) -> Int {
        let left = state.pausedUntil - clock.now()
        return left > 1 ? Int(min(Self.longestPause, left).rounded(.up)) : 1
    }
}
