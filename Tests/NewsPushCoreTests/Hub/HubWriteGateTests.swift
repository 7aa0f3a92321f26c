import Foundation
import NotificationHubs
import Synchronization
import Testing

@testable import NewsPushSessions

/// `api.hub_writes` (SPEC §9): at most that many installation writes at the hub at once, the
/// rest waiting in order in a queue that holds no thread; past the queue a phone is turned away
/// at once with the time to come back; the hub's throttling pauses the writes and halves how
/// many go at once. Driven by events (what the gate holds), not by a clock, but for the hub's
/// pause, which is the gate's own clock.
@Suite("The hub write gate")
struct HubWriteGateTests {
    /// Waits (yielding, no clock) until `condition` holds.
    static func until(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    @Test func writesWaitTheirTurnInOrderAndNeverMoreThanTheLimitAtOnce() async throws {
        let gate = HubWriteGate(writes: 2)
        let order = Mutex<[Int]>([])
        try await gate.enter()
        try await gate.enter()
        // Four more queue up, each started once the one before is waiting.
        var turns: [Task<Void, any Error>] = []
        for n in 0..<4 {
            let turn = Task { @Sendable in
                try await gate.enter()
                order.withLock { $0.append(n) }
            }
            turns.append(turn)
            await Self.until { gate.load.waiting == n + 1 }
        }
        #expect(gate.load.inFlight == 2 && gate.load.waiting == 4, "two in flight, four waiting: \(gate.load)")
        gate.leave(.done)
        try await turns[0].value
        #expect(order.withLock { $0 } == [0] && gate.load.inFlight == 2, "one left, the first waiting went")
        gate.leave(.done)
        gate.leave(.done)
        try await turns[1].value
        try await turns[2].value
        for _ in 0..<2 { gate.leave(.done) }
        try await turns[3].value
        #expect(order.withLock { $0 } == [0, 1, 2, 3], "first come, first served")
        #expect(gate.load.inFlight <= 2)
    }

    @Test func pastTheQueueAPhoneIsTurnedAwayAtOnceWithTheTimeToComeBack() async throws {
        let gate = HubWriteGate(writes: 1, queue: 1, patience: 600)
        try await gate.enter()
        let waiting = Task { try await gate.enter() }
        await Self.until { gate.load.waiting == 1 }
        await #expect(throws: HubWriteGate.Busy(retryAfter: 1)) { try await gate.enter() }
        gate.leave(.done)
        try await waiting.value
        gate.leave(.done)
    }

    @Test func theHubsThrottlingPausesTheWritesAndAWaitPastThePatienceIsTurnedAway() async throws {
        let gate = HubWriteGate(writes: 4, patience: 600)
        try await gate.enter()
        gate.leave(.refused(status: 429, detail: "", retryAfter: 0.3))
        // The next write waits for the hub's Retry-After: it is queued, not let in, then let in.
        let next = Task { try await gate.enter() }
        await Self.until { gate.load.waiting == 1 }
        #expect(gate.load.inFlight == 0)
        try await next.value
        gate.leave(.done)
        // A wait longer than the patience is a Busy with the rest of the hub's pause.
        let impatient = HubWriteGate(writes: 4, patience: 0.2)
        try await impatient.enter()
        impatient.leave(.refused(status: 429, detail: "", retryAfter: 30))
        await #expect {
            try await impatient.enter()
        } throws: { error in
            (error as? HubWriteGate.Busy).map { $0.retryAfter >= 29 } ?? false
        }
    }
}
