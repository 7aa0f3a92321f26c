import Foundation
import NotificationHubs
import Synchronization
import Testing

@testable import NewsPushSessions

/// `api.hub_writes` (SPEC §9): at most that many installation writes at the hub at once, the
/// rest served in the order they came; past the queue a phone is turned away with the time to
/// come back; the hub's throttling pauses the writes and halves how many go at once.
@Suite("The hub write gate")
struct HubWriteGateTests {
    @Test func writesWaitTheirTurnInOrderAndNeverMoreThanTheLimitAtOnce() throws {
        let gate = HubWriteGate(writes: 2)
        let inside = Mutex(0)
        let most = Mutex(0)
        let order = Mutex<[Int]>([])
        try gate.enter()
        try gate.enter()
        // Four more queue up in turn, each started once the one before is waiting.
        let group = DispatchGroup()
        for n in 0..<4 {
            DispatchQueue.global().async(group: group) {
                guard (try? gate.enter()) != nil else { return }
                order.withLock { $0.append(n) }
                let now = inside.withLock { value -> Int in
                    value += 1
                    return value
                }
                most.withLock { $0 = max($0, now) }
                Thread.sleep(forTimeInterval: 0.01)
                inside.withLock { $0 -= 1 }
                gate.leave(.done)
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        gate.leave(.done)
        gate.leave(.done)
        group.wait()
        #expect(order.withLock { $0 } == [0, 1, 2, 3], "first come, first served")
        #expect(most.withLock { $0 } <= 2)
    }

    @Test func pastTheQueueAPhoneIsTurnedAwayWithTheTimeToComeBack() throws {
        let gate = HubWriteGate(writes: 1, queue: 0, patience: 5)
        try gate.enter()
        #expect(throws: HubWriteGate.Busy(retryAfter: 1)) { try gate.enter() }
        gate.leave(.done)
        try gate.enter()
        gate.leave(.done)
    }

    @Test func theHubsThrottlingPausesTheWrites() throws {
        let gate = HubWriteGate(writes: 4, patience: 5)
        try gate.enter()
        gate.leave(.refused(status: 429, detail: "", retryAfter: 0.3))
        let started = Date()
        try gate.enter()
        #expect(Date().timeIntervalSince(started) >= 0.25, "the next write waited for the hub's Retry-After")
        gate.leave(.done)
        // A wait longer than the patience is a Busy with the rest of the hub's pause.
        let impatient = HubWriteGate(writes: 4, patience: 0.2)
        try impatient.enter()
        impatient.leave(.refused(status: 429, detail: "", retryAfter: 30))
        #expect(throws: HubWriteGate.Busy.self) { try impatient.enter() }
        do { try impatient.enter() } catch { #expect(error.retryAfter >= 29) }
    }
}
