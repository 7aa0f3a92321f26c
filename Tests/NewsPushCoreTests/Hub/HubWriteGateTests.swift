import Foundation
import NotificationHubs
import Synchronization
import Testing

@testable import NewsPushSessions

/// `api.hub_writes` (SPEC §9): at most that many installation writes at the hub at once, the
/// rest waiting in order in a queue that holds no thread; past the queue a phone is turned away
/// at once with the time to come back; the hub's throttling pauses the writes and halves how
/// many go at once. Driven by events (what the gate holds, `until`) and by a clock the test
/// moves: nothing depends on how fast the machine is.
@Suite("The hub write gate")
struct HubWriteGateTests {
    /// A clock that moves only when the test says: sleepers wake when it passes their time.
    final class TestClock: HubWriteGate.Clock {
        private struct Sleeper {
            let id: UInt64
            let due: Double
            let continuation: CheckedContinuation<Void, any Error>
        }
        private let state = Mutex<(now: Double, next: UInt64, sleepers: [Sleeper])>((0, 0, []))

        func now() -> Double { state.withLock { $0.now } }

        func sleep(until deadline: Double) async throws {
            let id = state.withLock { state in
                defer { state.next += 1 }
                return state.next
            }
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let due = state.withLock { state -> Bool in
                        if Task.isCancelled { return true }
                        if deadline <= state.now { return true }
                        state.sleepers.append(Sleeper(id: id, due: deadline, continuation: continuation))
                        return false
                    }
                    if due { continuation.resume() }
                }
            } onCancel: {
                let gone = state.withLock { state -> Sleeper? in
                    guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.sleepers.remove(at: index)
                }
                gone?.continuation.resume(throwing: CancellationError())
            }
        }

        /// Moves the clock on by `seconds`, waking every sleeper whose time has come.
        func advance(by seconds: Double) {
            let woken = state.withLock { state -> [Sleeper] in
                state.now += seconds
                let due = state.sleepers.filter { $0.due <= state.now }
                state.sleepers.removeAll { $0.due <= state.now }
                return due
            }
            for sleeper in woken { sleeper.continuation.resume() }
        }
    }

    @Test func writesWaitTheirTurnInOrderAndNeverMoreThanTheLimitAtOnce() async throws {
        let gate = HubWriteGate(writes: 2, patience: 600)
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
            await gate.until { $0.waiting == n + 1 }
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
        await gate.until { $0.waiting == 1 }
        await #expect(throws: HubWriteGate.Busy(retryAfter: 1)) { try await gate.enter() }
        gate.leave(.done)
        try await waiting.value
        gate.leave(.done)
    }

    @Test func theHubsThrottlingPausesTheWritesAndAWaitPastThePatienceIsTurnedAway() async throws {
        let clock = TestClock()
        let gate = HubWriteGate(writes: 4, patience: 600, clock: clock)
        try await gate.enter()
        gate.leave(.refused(status: 429, detail: "", retryAfter: 30))
        // The next write waits for the hub's Retry-After: it is queued, not let in, then let in
        // when the pause is over.
        let next = Task { try await gate.enter() }
        await gate.until { $0.waiting == 1 }
        #expect(gate.load.inFlight == 0)
        clock.advance(by: 29)
        #expect(gate.load.inFlight == 0 && gate.load.waiting == 1, "still paused a second before its end")
        clock.advance(by: 1.1)
        try await next.value
        #expect(gate.load.inFlight == 1)
        gate.leave(.done)
        // A wait longer than the patience is a Busy with the rest of the hub's pause.
        let impatientClock = TestClock()
        let impatient = HubWriteGate(writes: 4, patience: 0.2, clock: impatientClock)
        try await impatient.enter()
        impatient.leave(.refused(status: 429, detail: "", retryAfter: 30))
        let turnedAway = Task { try await impatient.enter() }
        await impatient.until { $0.waiting == 1 }
        impatientClock.advance(by: 0.3)
        await #expect {
            try await turnedAway.value
        } throws: { error in
            (error as? HubWriteGate.Busy).map { $0.retryAfter >= 29 } ?? false
        }
    }
}
