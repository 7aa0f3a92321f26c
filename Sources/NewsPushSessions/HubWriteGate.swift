import Foundation
import NotificationHubs

/// The installation writes one `newspush api` instance has at the hub at once (SPEC §9,
/// `api.hub_writes`): the rest wait their turn, first come first served, and past the queue a
/// phone is told to come back (`503` with `Retry-After`) rather than wait. The hub's own
/// throttling slows the writes down: a `429` (or a `403` with `Retry-After`) pauses them for the
/// time it asks and halves how many go at once; each write it takes lets one more go again, up
/// to the setting. Written here because a counting semaphore neither queues in order nor
/// adapts to the hub.
public final class HubWriteGate: @unchecked Sendable {
    /// Why a write did not get its turn, and when to try again.
    public struct Busy: Error, Sendable, Equatable {
        /// Seconds for the phone to wait.
        public var retryAfter: Int
    }

    private let most: Int
    private let queueLimit: Int
    private let patience: Double
    private let condition = NSCondition()
    /// How many may be in flight now (halved by throttling, back up by each success).
    private var allowed: Int
    private var inFlight = 0
    /// The tickets waiting, in order.
    private var waiting: [UInt64] = []
    private var nextTicket: UInt64 = 0
    /// No write starts before this (the hub asked to wait).
    private var pausedUntil = Date.distantPast

    /// At most `writes` in flight, `queue` waiting, none waiting longer than `patience` seconds.
    public init(writes: Int, queue: Int? = nil, patience: Double = 20) {
        most = max(1, writes)
        allowed = most
        queueLimit = queue ?? most * 8
        self.patience = patience
    }

    /// Waits for a turn; `Busy` when the queue is full or the wait passes `patience`.
    public func enter() throws(Busy) {
        condition.lock()
        defer { condition.unlock() }
        let free = waiting.isEmpty && inFlight < allowed && Date() >= pausedUntil
        guard free || waiting.count < queueLimit else { throw Busy(retryAfter: retryAfter()) }
        let ticket = nextTicket
        nextTicket += 1
        waiting.append(ticket)
        let deadline = Date().addingTimeInterval(patience)
        while waiting.first != ticket || inFlight >= allowed || Date() < pausedUntil {
            if Date() >= deadline {
                waiting.removeAll { $0 == ticket }
                condition.broadcast()
                throw Busy(retryAfter: retryAfter())
            }
            // Woken by a write that ends or a ticket that leaves; by the clock when paused.
            _ = condition.wait(until: Date() < pausedUntil ? min(deadline, pausedUntil) : deadline)
        }
        waiting.removeFirst()
        inFlight += 1
        condition.broadcast()
    }

    /// A write is done; `outcome` is the hub's answer to it.
    public func leave(_ outcome: InstallationOutcome?) {
        condition.lock()
        defer { condition.unlock() }
        inFlight -= 1
        switch outcome {
        case .refused(let status, _, let wait)? where status == 429 || (status == 403 && wait != nil):
            pausedUntil = max(pausedUntil, Date().addingTimeInterval(wait ?? 1))
            allowed = max(1, allowed / 2)
        case .done?:
            allowed = min(most, allowed + 1)
        default:
            break
        }
        condition.broadcast()
    }

    /// The wait to tell a phone turned away: the hub's pause, at least a second.
    private func retryAfter() -> Int {
        max(1, Int(pausedUntil.timeIntervalSinceNow.rounded(.up)))
    }
}
