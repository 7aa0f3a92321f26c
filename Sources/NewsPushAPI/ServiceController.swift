import Foundation
import HTTPTypes
import Hummingbird
import NewsPushHTTP
import NewsPushSessions

/// `GET /openapi.json` and `GET /healthz` (and HEAD of each: GET without the body, RFC 9110;
/// the guard drops the body).
struct ServiceController: Sendable {
    let backend: ApiBackend

    func addDocument(to router: some RouterMethods<ApiContext>) {
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/openapi.json", method: method) { _, _ in ApiDocument.response() }
        }
    }

    func addHealth(to group: some RouterMethods<ApiContext>) {
        for method in [HTTPRequest.Method.get, .head] {
            group.on("/healthz", method: method, use: health)
        }
    }

    /// 200 when the ledger answers and the hub takes the key; 503 otherwise. From a check at
    /// most 30 s old (one hub request per 30 s, however often it is asked) that answers within
    /// `probeLimit` (a hub that holds its requests is unavailable, not a hung health check);
    /// what is wrong is told only to this machine and to senders, anyone else hears `ok` or
    /// `unavailable`.
    @Sendable func health(_ request: Request, context: ApiContext) async throws -> Response {
        let backend = backend
        let problem = await backend.health.problem {
            await Self.firstOf(limit: Self.probeLimit) {
                do { return try await backend.withSession { try $0.probe() } } catch {
                    return ApiRoutes.describe(error)
                }
            }
        }
        guard let problem else { return ApiServer.answer(HealthAnswer(status: "ok")) }
        let told = context.caller.isSender || ClientNetwork.isLoopback(context.address)
        return ApiServer.answer(
            HealthAnswer(status: "unavailable", error: told ? problem : nil), status: .serviceUnavailable)
    }
}

extension ServiceController {
    /// How long the health check waits for the ledger and the hub.
    static let probeLimit: Double = 5

    /// `check`'s answer, or, when it takes longer than `limit` seconds, that it did not answer
    /// in time (the check goes on by itself, and is not waited for).
    static func firstOf(limit: Double, _ check: @escaping @Sendable () async -> String?) async -> String? {
        let first = FirstProblem()
        let checking = Task { await first.give(await check()) }
        let timer = Task {
            try await Task.sleep(for: .milliseconds(Int(limit * 1000)))
            await first.give("the ledger or the hub did not answer within \(Int(limit)) s")
        }
        let answer = await first.value
        checking.cancel()
        timer.cancel()
        return answer
    }
}

/// The first answer given, awaited once.
actor FirstProblem {
    private var given: String??
    private var waiting: CheckedContinuation<String?, Never>?

    func give(_ problem: String?) {
        guard given == nil else { return }
        given = .some(problem)
        waiting?.resume(returning: problem)
        waiting = nil
    }

    var value: String? {
        get async {
            if let given { return given }
            return await withCheckedContinuation { waiting = $0 }
        }
    }
}

/// `GET /healthz`'s answer, checked at most once per `maxAge` however many ask: one check in
/// flight, the others wait for it.
actor HealthCheck {
    static let maxAge: Double = 30
    private var last: (problem: String?, at: ContinuousClock.Instant)?
    private var running: Task<String?, Never>?

    /// What is wrong (nil: nothing) as `check` last found it, checked again when stale.
    func problem(_ check: @escaping @Sendable () async -> String?) async -> String? {
        if let last, ContinuousClock.now - last.at < .seconds(Self.maxAge) { return last.problem }
        if let running { return await running.value }
        let task = Task { await check() }
        running = task
        let problem = await task.value
        last = (problem, ContinuousClock.now)
        running = nil
        return problem
    }
}
