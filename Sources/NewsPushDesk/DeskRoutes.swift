import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NewsPushCore
import NewsPushHTTP
import NewsPushLedger
import NewsPushModel
import NewsPushSessions

/// The desk's pages, forms and JSON API. Forms answer 303 back to their page with a message
/// (so a reload never posts twice); the API answers JSON with the status of what happened.
struct DeskRoutes {
    let desk: Desk
    private var config: NewsPushConfig { desk.context.config }

    func register(on router: Router<DeskContext>) {
        router.getAndHead("/desk.js") { _, _ in
            var response = FrontEnd.answer(DeskAssets.script, type: "text/javascript")
            response.headers[.cacheControl] = "max-age=3600"
            return response
        }
        router.getAndHead("/login") { _, context in
            await desk.session(context.token) == nil
                ? DeskServer.html(DeskPages.login(flash: nil)) : DeskServer.redirect("/")
        }
        router.post("/login") { request, context in try await signIn(request, context: context) }
        router.post("/logout") { request, context in
            await desk.signIns.end(context.token)
            return DeskServer.redirect(
                "/login", cookie: DeskServer.sessionCookie("", maxAge: 0, secure: context.overTLS))
        }
        registerPages(on: router)
        registerReports(on: router)
        registerForms(on: router)
        registerAPI(on: router)
    }

    // MARK: Sign-in

    private func signIn(_ request: Request, context: DeskContext) async throws -> Response {
        let name = context.form["user"] ?? ""
        let password = context.form["password"] ?? ""
        let now = desk.now()
        if let wait = await desk.signIns.retryAfter(name: name, address: context.address, now: now) {
            var response = DeskServer.html(
                DeskPages.login(
                    flash: .init(
                        text: "Too many failed sign-ins: try again in \(DeskPages.duration(Double(wait))).", bad: true)),
                status: .tooManyRequests)
            response.headers[.retryAfter] = String(wait)
            return response
        }
        let path = config.deskUsersPath
        let checked = try await Desk.blocking { DeskUsers.signIn(path: path, name: name, password: password) }
        guard case .signedIn(let user) = checked else {
            await desk.signIns.failed(name: name, address: context.address, now: now)
            if case .unreadable(let error) = checked {
                desk.context.logger.error("desk: nobody can sign in: \(error)")
            } else if case .refused(let known) = checked {
                let who = known ? "user '\(name)'" : "an unknown user"
                desk.context.logger.notice("desk: failed sign-in for \(who) from \(context.address)")
            }
            return DeskServer.html(
                DeskPages.login(flash: .init(text: "Wrong user or password.", bad: true)), status: .unauthorized)
        }
        let (token, _) = await desk.signIns.start(name: name, user: user, now: now)
        return DeskServer.redirect(
            "/",
            cookie: DeskServer.sessionCookie(
                token, maxAge: Int(DeskSignIns.lifetime), secure: context.overTLS))
    }

    // MARK: Pages

    private func registerPages(on router: Router<DeskContext>) {
        router.getAndHead("/") { _, context in
            let user = try signedIn(context)
            let flash = await desk.signIns.takeFlash(context.token)
            let held = try await desk.waiting()
            // For an id-only push, also how many of those cannot read it (not signed in).
            let reach = await desk.reach(
                held.map(\.entry.tags)
                    + held.filter { $0.entry.format == .idOnly }.map { SecurePush.tags($0.entry.tags, readers: false) })
            return DeskServer.html(
                DeskPages.waiting(held, reach: reach, config: config, user: user, now: desk.now(), flash: flash))
        }
        router.getAndHead("/next") { request, context in
            let user = try signedIn(context)
            let flash = await desk.signIns.takeFlash(context.token)
            let fresh = FormFields.parse(request.uri.query ?? "")["fresh"] == "1"
            do {
                let (report, at) = try await desk.previews.report(context: desk.context, fresh: fresh)
                return DeskServer.html(
                    DeskPages.nextRun(report, at: at, error: nil, user: user, now: desk.now(), flash: flash))
            } catch {
                let last = await desk.previews.last()
                return DeskServer.html(
                    DeskPages.nextRun(
                        last?.report, at: last?.at, error: "\(error)", user: user, now: desk.now(), flash: flash))
            }
        }
        router.getAndHead("/sent") { request, context in
            let user = try signedIn(context)
            let flash = await desk.signIns.takeFlash(context.token)
            let query = FormFields.parse(request.uri.query ?? "")
            let (filter, since) = historyFilter(query)
            let (pushes, audit) = try await desk.history(filter)
            return DeskServer.html(
                DeskPages.sent(pushes, audit: audit, filter: filter, sinceText: since, user: user, flash: flash))
        }
        router.getAndHead("/delivery/:id") { _, context in
            let user = try signedIn(context)
            let id = try context.parameters.require("id")
            let row = try? await desk.telemetry(id)
            return DeskServer.html(DeskPages.delivery(row, id: id, user: user))
        }
        router.getAndHead("/publish") { request, context in
            let user = try signedIn(context)
            let flash = await desk.signIns.takeFlash(context.token)
            var fields = FormFields.parse(request.uri.query ?? "")
            fields = fields.filter { ["replace", "category", "title", "url"].contains($0.key) }
            return DeskServer.html(
                DeskPages.publish(
                    fields: fields, preview: nil, config: config, user: user, now: desk.now(), flash: flash))
        }
    }

    /// The Reports page (SPEC §11): what each alert of the last 30 days did.
    private func registerReports(on router: Router<DeskContext>) {
        router.getAndHead("/reports") { _, context in
            let user = try signedIn(context)
            let flash = await desk.signIns.takeFlash(context.token)
            let reports = try await desk.reports()
            return DeskServer.html(
                DeskReports.page(
                    reports, timeZone: config.policy.quietHours?.timeZone ?? .current, user: user, now: desk.now(),
                    flash: flash))
        }
    }

    // MARK: Forms

    private func registerForms(on router: Router<DeskContext>) {
        router.post("/review/:id/approve") { _, context in
            let user = try signedIn(context)
            let answer = await desk.approve(
                try context.parameters.require("id"), edit: try edit(context.form), editor: user.name)
            return await back("/", answer, context)
        }
        router.post("/review/:id/reject") { _, context in
            let user = try signedIn(context)
            let answer = await desk.reject(
                try context.parameters.require("id"), reason: context.form["reason"] ?? "", editor: user.name)
            return await back("/", answer, context)
        }
        router.post("/cancel/:id") { _, context in
            let user = try signedIn(context)
            let answer = await desk.cancel(try context.parameters.require("id"), editor: user.name)
            return await back("/sent", answer, context)
        }
        router.post("/publish") { _, context in
            let user = try signedIn(context)
            var request = try publishRequest(context.form)
            request.dryRun = context.form["action"] != "send"
            let (answer, document) = await desk.publish(request, editor: user.name)
            if request.dryRun || answer.status == .conflict || answer.status == .badRequest {
                // The form again, as filled, with the alert as a phone shows it (or why not).
                var reach: Int?
                if let tags = document?.tags { reach = await desk.reach([tags])[tags] }
                return DeskServer.html(
                    DeskPages.publish(
                        fields: context.form, preview: document, reach: reach, config: config, user: user,
                        now: desk.now(), flash: .init(text: answer.message, bad: answer.status.code >= 400)),
                    status: answer.status == .ok ? .ok : answer.status)
            }
            return await back("/sent", answer, context)
        }
    }

    /// 303 back to `page`, which shows `answer`'s message.
    private func back(_ page: String, _ answer: DeskAnswer, _ context: DeskContext) async -> Response {
        await desk.signIns.keep(.init(text: answer.message, bad: answer.status.code >= 400), for: context.token)
        return DeskServer.redirect(page)
    }

    // MARK: API

    private func registerAPI(on router: Router<DeskContext>) {
        router.getAndHead("/api/changes") { _, _ in
            DeskServer.json(JSONText.encode(["mark": try await desk.changeMark()], pretty: false))
        }
        router.getAndHead("/api/review") { _, _ in
            DeskServer.json(JSONText.encode(ReviewListOutput(held: try await desk.waiting().map(HeldOutput.init))))
        }
        router.post("/api/review/:id/approve") { _, context in
            let user = try signedIn(context)
            let answer = await desk.approve(
                try context.parameters.require("id"), edit: try edit(try bodyFields(context)), editor: user.name)
            return DeskServer.json(answer.json, status: answer.status)
        }
        router.post("/api/review/:id/reject") { _, context in
            let user = try signedIn(context)
            let answer = await desk.reject(
                try context.parameters.require("id"), reason: try bodyFields(context)["reason"] ?? "",
                editor: user.name)
            return DeskServer.json(answer.json, status: answer.status)
        }
        router.getAndHead("/api/history") { request, _ in
            let (filter, _) = historyFilter(FormFields.parse(request.uri.query ?? ""))
            let (pushes, audit) = try await desk.history(filter)
            return DeskServer.json(JSONText.encode(HistoryOutput(pushes: pushes, audit: audit)))
        }
        router.getAndHead("/api/preview") { request, _ in
            let fresh = FormFields.parse(request.uri.query ?? "")["fresh"] == "1"
            let (report, _) = try await desk.previews.report(context: desk.context, fresh: fresh)
            return DeskServer.json(report.jsonText())
        }
        router.post("/api/publish") { _, context in
            let user = try signedIn(context)
            let fields = try bodyFields(context)
            var request = try publishRequest(fields)
            request.dryRun = ["1", "true"].contains(fields["dry_run"] ?? "")
            let (answer, _) = await desk.publish(request, editor: user.name)
            return DeskServer.json(answer.json, status: answer.status)
        }
    }

    // MARK: Reading requests

    private func signedIn(_ context: DeskContext) throws -> SignedIn {
        guard let user = context.user else { throw HTTPError(.unauthorized) }
        return user
    }

    /// A JSON object's fields (numbers and booleans as text), or the form's.
    private func bodyFields(_ context: DeskContext) throws -> [String: String] {
        if !context.form.isEmpty || context.body.isEmpty { return context.form }
        guard let object = try? JSONSerialization.jsonObject(with: context.body) as? [String: Any] else {
            throw HTTPError(.badRequest, message: "the body is not a JSON object")
        }
        return object.compactMapValues { value in
            switch value {
            case let text as String: return text
            case let flag as Bool: return flag ? "true" : "false"
            case let number as NSNumber: return number.stringValue
            default: return nil
            }
        }
    }

    private func edit(_ fields: [String: String]) throws -> ReviewEdit {
        // The form always carries the headline: it is an edit only when the editor changed it.
        let message = Self.text(fields, "message")
        let title =
            message == nil ? Self.text(fields, "title").flatMap { $0 == fields["original_title"] ? nil : $0 } : nil
        return ReviewEdit(title: title, message: message, importance: try Self.choice(fields, "importance"))
    }

    /// The publish request of a form or JSON object (the fields of `publish`).
    private func publishRequest(_ fields: [String: String]) throws -> PublishRequest {
        let text = { (key: String) in Self.text(fields, key) }
        var request = PublishRequest(
            category: try Self.choice(fields, "category"), title: text("title"), message: text("message"),
            url: text("url"), tags: text("tags"), force: ["1", "true", "on"].contains(fields["force"] ?? ""),
            importance: try Self.choice(fields, "importance"), at: text("at"), replacing: text("replace"),
            language: text("language") ?? "en")
        request.user = text("user")
        return request
    }

    /// A field's text; nil when it is missing or blank.
    private static func text(_ fields: [String: String], _ key: String) -> String? {
        fields[key].flatMap { $0.allSatisfy(\.isWhitespace) ? nil : $0 }
    }

    /// A field that names one of `T`'s values; nil when blank, 400 naming the choices when it is
    /// none of them.
    private static func choice<T: RawRepresentable & CaseIterable>(_ fields: [String: String], _ key: String) throws
        -> T? where T.RawValue == String
    {
        guard let given = text(fields, key) else { return nil }
        guard let value = T(rawValue: given) else {
            let names = T.allCases.map(\.rawValue).joined(separator: ", ")
            throw HTTPError(.badRequest, message: "\(key) '\(given)' is not one of \(names)")
        }
        return value
    }

    /// The history filter of a query (`category`, `status`, `since` as 24h, `limit`).
    private func historyFilter(_ query: [String: String]) -> (PushHistoryFilter, String) {
        var filter = PushHistoryFilter()
        filter.category = query["category"].flatMap(NewsCategory.init(rawValue:))
        filter.status = query["status"].flatMap(OutboxEntry.Status.init(rawValue:))
        let since = query["since"] ?? ""
        filter.since = Durations.parse(since).map { desk.now().addingTimeInterval(-$0) }
        if let limit = query["limit"].flatMap(Int.init), (1...5000).contains(limit) { filter.limit = limit }
        return (filter, filter.since == nil ? "" : since)
    }
}

/// `GET /api/history`: the pushes on record, newest first, and the decisions about them (the
/// same objects as `review history --format json`).
struct HistoryOutput: Encodable {
    var pushes: [OutboxEntry]
    var audit: [AuditRecord]

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        var list = container.nestedUnkeyedContainer(forKey: .pushes)
        for entry in pushes {
            var object = list.nestedContainer(keyedBy: Key.self)
            try object.encode(entry.id, forKey: .id)
            try object.encode(entry.storyKey, forKey: .storyKey)
            try object.encode(entry.kind.rawValue, forKey: .kind)
            try object.encode(entry.category.rawValue, forKey: .category)
            try object.encode(entry.tags, forKey: .tags)
            try object.encode(entry.properties, forKey: .properties)
            try object.encode(entry.status.rawValue, forKey: .status)
            try object.encode(Timestamp.format(entry.createdAt), forKey: .createdAt)
            try object.encode(entry.notificationId, forKey: .notificationId)
            try object.encode(entry.error, forKey: .error)
        }
        try AuditOutput(records: audit).encode(to: encoder)
    }

    enum Key: String, CodingKey {
        case pushes, id, kind, category, tags, properties, status, error
        case storyKey = "story_key", createdAt = "created_at", notificationId = "notification_id"
    }
}

extension Router<DeskContext> {
    /// A page for GET and for HEAD (RFC 9110: the same answer without its body, which
    /// `DeskGuard` drops): monitors and proxies ask with HEAD.
    @discardableResult
    func getAndHead(
        _ path: RouterPath,
        use handler: @Sendable @escaping (Request, DeskContext) async throws -> some ResponseGenerator
    ) -> Self {
        on(path, method: .head, use: handler)
        return on(path, method: .get, use: handler)
    }
}
