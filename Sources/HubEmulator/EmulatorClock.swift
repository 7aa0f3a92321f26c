import Foundation

/// The emulator's clock: the wall clock plus an offset that tests (and demos) move forward
/// through `advanceClock(by:)` or `POST /_emulator/clock`. Everything that waits in the
/// emulator (a fault's delay, a scheduled send, a phone that is off) waits on this clock, so a
/// test moves time on instead of sleeping, and `settle()` tells it when the emulator has done
/// what came due.
extension HubEmulator {
    /// The emulator's time.
    public func now() -> Date { Date().addingTimeInterval(clockOffset) }

    /// Moves the emulator's time on by `seconds` and wakes everything that came due; returns
    /// the new time.
    @discardableResult
    public func advanceClock(by seconds: TimeInterval) -> Date {
        clockOffset += max(0, seconds)
        let due = waiters.filter { $0.value.due <= now() }.sorted { $0.value.due < $1.value.due }
        for (id, _) in due { wake(id) }
        return now()
    }

    /// Returns once no request and no timer is running: each has finished or waits for a time
    /// still to come. (After `advanceClock(by:)`, what came due has been done.)
    public func settle() async {
        guard busy > 0 else { return }
        await withCheckedContinuation { settleWaiters.append($0) }
    }

    /// Returns once something (a request held by a fault's delay, a scheduled send) waits for
    /// the emulator's time to move: a test knows its request has reached the hub.
    public func untilSomethingWaits() async {
        await untilWaiting(1)
    }

    /// Returns once at least `count` requests or timers wait for the emulator's time to move.
    public func untilWaiting(_ count: Int) async {
        while waiters.count < count {
            await withCheckedContinuation { waitingWatchers.append($0) }
        }
    }

    /// Waits until the emulator's time reaches `due`: woken by `advanceClock(by:)`, by the wall
    /// clock reaching it, or by cancellation.
    func sleep(until due: Date) async {
        guard now() < due else { return }
        let id = nextWaiter
        nextWaiter += 1
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiters[id] = Waiter(due: due, continuation: continuation)
                let told = waitingWatchers
                waitingWatchers.removeAll()
                for watcher in told { watcher.resume() }
                finishedWork()
                let wall = due.timeIntervalSince(now())
                Task { [weak self] in
                    try? await Task.sleep(nanoseconds: UInt64(max(0, wall) * 1e9))
                    await self?.wake(id)
                }
            }
        } onCancel: {
            Task { [weak self] in await self?.wake(id) }
        }
    }

    /// `sleep(until:)` for a span from now.
    func sleep(seconds: TimeInterval) async {
        await sleep(until: now().addingTimeInterval(seconds))
    }

    /// Counts a request or timer as running (`settle()` waits for it).
    func startedWork() { busy += 1 }

    /// Counts a request or timer as done (or waiting for a time to come).
    func finishedWork() {
        busy -= 1
        guard busy == 0 else { return }
        let waiting = settleWaiters
        settleWaiters = []
        for waiter in waiting { waiter.resume() }
    }

    private func wake(_ id: UInt64) {
        guard let waiter = waiters.removeValue(forKey: id) else { return }
        startedWork()
        waiter.continuation.resume()
    }

    /// A request or timer waiting for the emulator's time to reach `due`.
    struct Waiter {
        let due: Date
        let continuation: CheckedContinuation<Void, Never>
    }

    /// `POST /_emulator/clock` (`{"advance_seconds": 30}`) and `GET /_emulator/clock`: the
    /// emulator's time as JSON, `{"now": "2026-11-27T02:00:00Z"}`.
    func clockControl(_ request: EmulatorRequest) -> EmulatorResponse {
        if request.method == "POST" {
            struct Advance: Decodable {
                let advanceSeconds: Double
                enum CodingKeys: String, CodingKey { case advanceSeconds = "advance_seconds" }
            }
            guard let advance = try? JSONDecoder().decode(Advance.self, from: request.body), advance.advanceSeconds >= 0
            else {
                return EmulatorResponse(
                    status: 400, headers: [], body: Data(#"expected {"advance_seconds": 30} (not negative)"#.utf8))
            }
            advanceClock(by: advance.advanceSeconds)
        }
        let body = #"{"now": "\#(now().ISO8601Format())"}"#
        return EmulatorResponse(status: 200, headers: [("Content-Type", "application/json")], body: Data(body.utf8))
    }
}
