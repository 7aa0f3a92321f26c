import Foundation
import HTTPTypes
import NIOPosix
import NewsPushCore
import NewsPushHTTP
import NewsPushLedger
import NewsPushModel
import NewsPushSessions

/// What a desk action came to: the HTTP status, a sentence for the editor, and the JSON
/// document the API answers with.
struct DeskAnswer: Sendable {
    var status: HTTPResponse.Status
    var message: String
    var json: String

    /// An answer whose document is `{"error": message}`.
    static func error(_ status: HTTPResponse.Status, _ message: String) -> DeskAnswer {
        DeskAnswer(status: status, message: message, json: JSONText.encode(["error": message]))
    }
}

/// The desk's work: every page and action calls the same sessions as the command line (the
/// lock, the outbox, the same-story rules), on a thread pool of the desk's own so the server's
/// event loops never wait for the ledger or the hub.
public struct Desk: Sendable {
    /// The newsroom's config, logger and clock.
    public var context: SessionContext
    /// How long an action waits for a running job's lock before saying so.
    public var lockWait: Double = 15
    let signIns = DeskSignIns()
    let previews: PreviewCache
    let users: CurrentUsersFile<DeskRole>

    /// The desk of `context`'s newsroom; the preview is computed again when older than
    /// `previewAge` seconds.
    public init(context: SessionContext, previewAge: Double = 60) {
        self.context = context
        previews = PreviewCache(maxAge: previewAge)
        users = CurrentUsersFile(path: context.config.deskUsersPath)
    }

    /// The time by the newsroom's session clock (the one clock of the desk's pages and rules).
    func now() -> Date { context.clock.now() }

    /// The session of `token` as the users file says now (`DeskSignIns.session(_:now:users:)`).
    func session(_ token: String?) async -> SignedIn? {
        await signIns.session(token, now: now(), users: await users.current())
    }

    /// Runs blocking session work off the event loops.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await threads.run(body)
    }

    /// The threads session work runs on: more than the cores, since an approval may wait up to
    /// `lockWait` for a running job's lock and the pages must not wait behind it.
    private static let threads = BlockingThreads(count: 16)

    // MARK: Reading

    /// The held pushes, oldest first.
    func waiting() async throws -> [HeldPush] {
        let context = context
        return try await Self.blocking { try ReviewSession(context: context).list() }
    }

    /// The pushes on record as `filter` selects, and the decisions about them.
    func history(_ filter: PushHistoryFilter) async throws -> (pushes: [OutboxEntry], audit: [AuditRecord]) {
        let context = context
        return try await Self.blocking { try ReviewSession(context: context).pushes(filter) }
    }

    /// The alerts of the last 30 days with what the apps reported (the Reports page).
    func reports() async throws -> [AlertReport] {
        let context = context
        return try await Self.blocking { try ReportSession(context: context).alerts(since: 30 * 86400, limit: 1000) }
    }

    /// The ledger's change mark (pages reload when it moves).
    func changeMark() async throws -> String {
        let context = context
        return try await Self.blocking { try ReviewSession(context: context).changeMark() }
    }

    /// How many installations of the app back-end's index each tag expression reaches (SPEC §9);
    /// empty when the index cannot be read (a ledger of an older schema, or none yet).
    func reach(_ expressions: [String]) async -> [String: Int] {
        let context = context
        let unique = Array(Set(expressions))
        return
            (try? await Self.blocking { () -> [String: Int] in
                let session = try DeviceSession.open(context: context, reading: true)
                var counts: [String: Int] = [:]
                for expression in unique { counts[expression] = try? session.count(expression: expression) }
                return counts
            }) ?? [:]
    }

    /// What the hub says it delivered of `notificationId` (Standard tier).
    func telemetry(_ notificationId: String) async throws -> HubStatusRow? {
        let context = context
        return try await Self.blocking {
            try HubSession(context: context).status(notificationId: notificationId, last: nil).rows.first
        }
    }

    // MARK: Deciding

    /// Approves held push `id` as `editor`, edited if asked.
    func approve(_ id: String, edit: ReviewEdit, editor: String) async -> DeskAnswer {
        let (context, wait) = (context, lockWait)
        return await answer { () throws(SessionError) -> ReviewOutcome in
            try ReviewSession(context: context, editor: editor).approve(id, edit: edit, wait: wait)
        } render: {
            Self.answer($0)
        }
    }

    /// Rejects held push `id` as `editor`.
    func reject(_ id: String, reason: String, editor: String) async -> DeskAnswer {
        guard !reason.allSatisfy(\.isWhitespace) else { return .error(.badRequest, "say why it is rejected") }
        let (context, wait) = (context, lockWait)
        return await answer { () throws(SessionError) -> ReviewOutcome in
            try ReviewSession(context: context, editor: editor).reject(id, reason: reason, wait: wait)
        } render: {
            Self.answer($0)
        }
    }

    /// Publishes (or, for a dry run, plans) `request` as `editor`.
    func publish(_ request: PublishRequest, editor: String) async -> (DeskAnswer, PublishOutput?) {
        var request = request
        request.editor = editor
        request.wait = lockWait
        if let problem = request.problem(now: context.clock.now()) {
            return (.error(.badRequest, problem.formDescription), nil)
        }
        let (context, asked) = (context, request)
        var document: PublishOutput?
        let answer = await answer { () throws(SessionError) -> PublishOutcome in
            try PublishSession(context: context).publish(asked)
        } render: { outcome in
            document = PublishOutput(outcome, dryRun: request.dryRun)
            return Self.answer(outcome, document: document)
        }
        return (answer, document)
    }

    /// Cancels scheduled send `notificationId` as `editor`.
    func cancel(_ notificationId: String, editor: String) async -> DeskAnswer {
        let (context, wait) = (context, lockWait)
        return await answer { () throws(SessionError) -> HubCancelOutcome in
            try HubSession(context: context).cancel(notificationId, wait: wait, editor: editor)
        } render: { outcome in
            switch outcome {
            case .cancelled:
                return DeskAnswer(
                    status: .ok, message: "scheduled send \(notificationId) cancelled",
                    json: JSONText.encode(["status": "cancelled", "notification_id": notificationId]))
            case .refused(let answer):
                return .error(.conflict, "the hub did not cancel \(notificationId): \(answer)")
            case .notRecorded(let error):
                return .error(.internalServerError, "cancelled at the hub, but not recorded: \(error)")
            }
        }
    }

    /// Runs `work` off the event loops and renders its outcome; a session error becomes its
    /// HTTP answer (one place: `Desk.answer(_: SessionError)`).
    private func answer<T: Sendable>(
        _ work: @escaping @Sendable () throws(SessionError) -> T, render: (T) -> DeskAnswer
    ) async -> DeskAnswer {
        do {
            return render(try await Self.blocking { () throws -> T in try work() })
        } catch let error as SessionError {
            return Self.answer(error)
        } catch {
            return .error(.serviceUnavailable, "the desk is shutting down")
        }
    }

    // MARK: Answers

    static func answer(_ error: SessionError) -> DeskAnswer {
        switch error {
        case .ledger(.locked):
            return .error(
                .serviceUnavailable,
                "a run is sending right now and holds the ledger; nothing was done: try again in a minute")
        case .usage, .request, .unknownStory: return .error(.badRequest, error.description)
        case .config, .missingConfig, .connectionString: return .error(.internalServerError, error.description)
        case .ledger, .unreadable, .cannotWrite, .clockSkew: return .error(.internalServerError, error.description)
        }
    }

    static func answer(_ outcome: ReviewOutcome) -> DeskAnswer {
        let message = outcome.sentence
        switch outcome {
        case .approved(let entry, let result, _):
            let status: HTTPResponse.Status =
                result.status == .sent ? .ok : result.status == .pending ? .accepted : .badGateway
            let document: [String: String?] = [
                "status": "approved", "id": entry.id, "push": result.status.rawValue,
                "notification_id": result.notificationId, "message": message,
            ]
            return DeskAnswer(status: status, message: message, json: JSONText.encode(document))
        case .rejected(let entry):
            return DeskAnswer(
                status: .ok, message: message,
                json: JSONText.encode(["status": "rejected", "id": entry.id, "message": message]))
        case .notHeld(let id, let why):
            return DeskAnswer(
                status: .conflict, message: message,
                json: JSONText.encode(["status": "conflict", "id": id, "error": why]))
        }
    }

    static func answer(_ outcome: PublishOutcome, document: PublishOutput?) -> DeskAnswer {
        let json = document.map { JSONText.encode($0) } ?? "{}"
        switch outcome {
        case .refused(_, let refusal):
            return DeskAnswer(status: .conflict, message: "not sent: \(refusal.description)", json: json)
        case .dryRun:
            return DeskAnswer(status: .ok, message: "preview: nothing sent", json: json)
        case .notConfirmed:
            return DeskAnswer(status: .conflict, message: "not confirmed; nothing sent", json: json)
        case .attempted(let plan, let result):
            let outcome = result.outcome
            guard let reason = outcome.notSentReason(trial: plan.push.isTrial) else {
                let id = outcome.notificationId.map { " (notification \($0))" } ?? ""
                let message = outcome.status == .scheduled ? "scheduled\(id): cancel it under Sent" : "sent\(id)"
                return DeskAnswer(status: .ok, message: message, json: json)
            }
            return DeskAnswer(status: outcome.status == .pending ? .accepted : .badGateway, message: reason, json: json)
        }
    }
}

/// The latest preview (`preview --format json`): computed again when older than `maxAge`, one
/// computation at a time however many pages ask.
actor PreviewCache {
    let maxAge: Double
    private var latest: (report: RunReport, at: Date)?
    private var running: Task<(report: RunReport, at: Date), any Error>?

    init(maxAge: Double) { self.maxAge = maxAge }

    /// The preview, computed now when `fresh` or when the last is too old; a page that asks
    /// while one is computed gets that one, with its own time.
    func report(context: SessionContext, fresh: Bool = false) async throws -> (report: RunReport, at: Date) {
        let now = context.clock.now()
        if !fresh, let latest, now.timeIntervalSince(latest.at) < maxAge { return latest }
        if let running { return try await running.value }
        let task = Task { () -> (report: RunReport, at: Date) in
            let report = try await Desk.blocking {
                try RunSession(context: context).run(RunRequest(dryRun: true)).report
            }
            return (report, context.clock.now())
        }
        running = task
        defer { running = nil }
        let computed = try await task.value
        latest = computed
        return computed
    }

    /// The last preview computed, if any (pages show it without waiting).
    func last() -> (report: RunReport, at: Date)? { latest }
}
