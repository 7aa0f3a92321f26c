import Foundation
import HTTPTypes
import Hummingbird
import NewsPushCore
import NewsPushModel
import NewsPushSessions
import NotificationHubs

/// The routes of SPEC §9's table: installations for apps written today, and the tutorials'
/// `api/register` flow, exactly as their apps call it.
public struct ApiRoutes: Sendable {
    let backend: ApiBackend

    func register(on router: Router<ApiContext>) {
        // HEAD is GET without the body (RFC 9110): each GET route answers it, the guard drops the body.
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/healthz", method: method) { _, context in try await health(context) }
            router.on("/openapi.json", method: method) { _, _ in ApiDocument.response() }
            router.on("/api/notifications/:id", method: method) { _, context in try await secureText(context) }
        }
        router.put("/api/installations/:id") { request, context in
            try await putInstallation(id: context.parameters.get("id") ?? "", context: context)
        }
        router.delete("/api/installations/:id") { request, context in
            try await deleteInstallation(
                id: context.parameters.get("id") ?? "", handle: request.headers[ApiServer.pushChannel],
                caller: context.caller, answer: .noContent)
        }
        router.post("/api/register") { request, context in
            try await registrationId(handle: request.uri.queryParameters.get("handle"), caller: context.caller)
        }
        router.put("/api/register/:id") { request, context in
            try await putRegistration(id: context.parameters.get("id") ?? "", context: context)
        }
        router.post("/api/notifications") { request, context in
            try await notify(request, context: context)
        }
        router.delete("/api/users/me") { _, context in
            guard let name = context.caller.name else { return signIn() }
            let outcome = try await backend.withSession { try $0.forget(user: name, by: name) }
            if !outcome.failed.isEmpty {
                backend.context.logger.warning("api: \(outcome.failed.count) hub deletes owed after a user left")
            }
            return Response(status: .noContent)
        }
        router.delete("/api/register/:id") { request, context in
            guard context.caller.name != nil else { return signIn() }
            return try await deleteInstallation(
                id: context.parameters.get("id") ?? "", handle: nil, caller: context.caller, answer: .ok)
        }
    }

    /// Every route, as the OpenAPI document lists them (a test keeps the two in step).
    public static let table: [(method: String, path: String)] = [
        ("GET", "/healthz"), ("GET", "/openapi.json"), ("PUT", "/api/installations/{id}"),
        ("DELETE", "/api/installations/{id}"), ("POST", "/api/register"), ("PUT", "/api/register/{id}"),
        ("DELETE", "/api/register/{id}"), ("DELETE", "/api/users/me"), ("POST", "/api/notifications"),
        ("GET", "/api/notifications/{id}"),
    ]

    /// The methods a path's route answers (`Allow` of a 405), nil when no route has the path.
    static func methods(of path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let methods = table.filter { route in
            let pattern = route.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            return pattern.count == segments.count
                && zip(pattern, segments).allSatisfy { $0 == $1 || ($0 == "{id}" && !$1.isEmpty) }
        }.map(\.method)
        guard !methods.isEmpty else { return nil }
        return (methods.contains("GET") ? methods + ["HEAD"] : methods).joined(separator: ", ")
    }

    /// `GET /api/notifications/{secureId}`: the text of a secure push, for its reader.
    private func secureText(_ context: ApiContext) async throws -> Response {
        guard let name = context.caller.name else { return signIn() }
        let notFound = ApiServer.error(.notFound, "no such notification")
        guard let text = context.parameters.get("id"), let id = Int(text), (1...Int(Int32.max)).contains(id) else {
            return notFound
        }
        guard let found = try await backend.withSession({ try $0.secureText(id: id, caller: name) }) else {
            return notFound
        }
        return ApiServer.json(JSONText.encode(found, pretty: false))
    }

    // MARK: Health

    /// 200 when the ledger answers and the hub takes the key; 503 otherwise. From a check at
    /// most 30 s old (one hub request per 30 s, however often it is asked); what is wrong is
    /// told only to this machine and to senders, anyone else hears `ok` or `unavailable`.
    private func health(_ context: ApiContext) async throws -> Response {
        let backend = backend
        let problem = await backend.health.problem {
            do { return try await backend.withSession { try $0.probe() } } catch {
                return ApiRoutes.describe(error)
            }
        }
        guard let problem else { return ApiServer.json(#"{"status":"ok"}"#) }
        var answer = ["status": "unavailable"]
        if context.caller.isSender || ClientNetwork.isLoopback(context.address) { answer["error"] = problem }
        return ApiServer.json(JSONText.encode(answer, pretty: false), status: .serviceUnavailable)
    }

    // MARK: Installations

    private func putInstallation(id: String, context: ApiContext) async throws -> Response {
        if context.caller == .anonymous && !backend.context.config.api.anonymous { return signIn() }
        let fields: JSONFields
        do { fields = try JSONFields(context.body) } catch { return ApiServer.error(.badRequest, error.message) }
        let request: DeviceRegistration
        do {
            request = DeviceRegistration(
                id: id, platform: try fields.string("platform"), handle: try fields.string("pushChannel"),
                topics: try fields.strings("topics") ?? [], language: try fields.optionalString("language"),
                network: context.network)
        } catch {
            return ApiServer.error(.badRequest, error.message)
        }
        let caller = context.caller
        let outcome = try await backend.register(request, caller: caller)
        switch outcome {
        case .registered(let record, let ignored):
            // Written as the installation's JSON is (JSONEncoder was a twelfth of the answer's cost).
            let list = { (texts: [String]) in "[" + texts.map(HubInstallation.quoted).joined(separator: ",") + "]" }
            return ApiServer.json(
                #"{"ignored":"# + list(ignored) + #","installationId":"# + HubInstallation.quoted(record.id)
                    + #","tags":"# + list(record.tags) + "}")
        case .notYours:
            return ApiServer.error(.forbidden, "installation \(id) belongs to another user or device")
        default:
            return Self.failure(outcome)
        }
    }

    private func deleteInstallation(id: String, handle: String?, caller: Caller, answer: HTTPResponse.Status)
        async throws -> Response
    {
        guard DeviceRules.isValidId(id) else { return Self.badId }
        let outcome = try await backend.withSession { try $0.remove(id: id, caller: caller, handle: handle) }
        switch outcome {
        case .notYours:
            return ApiServer.error(.forbidden, "installation \(id) belongs to another user or device")
        case .removed(let hubError?):
            backend.context.logger.warning(
                "api: installation \(id) removed from the index; the hub's delete is owed: \(hubError)")
            return Response(status: answer)
        case .removed, .absent:
            return Response(status: answer)
        }
    }

    // MARK: The tutorials' flow

    private func registrationId(handle: String?, caller: Caller) async throws -> Response {
        guard let name = caller.name else { return signIn() }
        let id = try await backend.withSession { try $0.registrationId(handle: handle, caller: name) }
        return ApiServer.json(JSONText.encode(id, pretty: false))
    }

    private func putRegistration(id: String, context: ApiContext) async throws -> Response {
        guard let name = context.caller.name else { return signIn() }
        let gone = ApiServer.error(.gone, "registration \(id) is unknown, expired or not yours: ask for a new id")
        guard DeviceRules.isValidId(id) else { return Self.badId }
        let fields: JSONFields
        do { fields = try JSONFields(context.body) } catch { return ApiServer.error(.badRequest, error.message) }
        let request: DeviceRegistration
        do {
            request = DeviceRegistration(
                id: id, platform: try fields.string("Platform"), handle: try fields.optionalString("Handle") ?? "",
                topics: try fields.strings("Tags") ?? [], network: context.network)
        } catch {
            return ApiServer.error(.badRequest, error.message)
        }
        let caller = context.caller
        let outcome = try await backend.register(request, caller: caller, reservedFor: name)
        switch outcome {
        case .registered: return Response(status: .ok)
        case .notYours: return gone
        default: return Self.failure(outcome)
        }
    }

    // MARK: Messages

    /// `POST /api/notifications?pns=P&to_tag=U`: a sender's message to user U's devices.
    private func notify(_ request: Request, context: ApiContext) async throws -> Response {
        guard case .user(let caller, let sender) = context.caller else { return signIn() }
        let query = request.uri.queryParameters
        guard let user = query.get("to_tag"), !user.isEmpty else {
            return try await securePush(caller, context: context)
        }
        guard sender else { return ApiServer.error(.forbidden, "only senders may send to users; nothing was sent") }
        guard let pns = query.get("pns"), !pns.isEmpty else {
            return ApiServer.error(.badRequest, "pns is required: apns, gcm, fcm or wns")
        }
        guard let text = Self.messageText(context.body) else {
            return ApiServer.error(.badRequest, "the body must be the message as a JSON string (\"…\")")
        }
        let outcome = try await backend.withSession { try $0.message(text, to: user, from: caller, pns: pns) }
        switch outcome {
        case .sent(let id):
            return ApiServer.json(JSONText.encode(["status": "sent", "notificationId": id], pretty: false))
        case .invalid(let why): return ApiServer.error(.badRequest, why)
        case .hubFailed(let why): return ApiServer.error(.badGateway, why)
        }
    }

    /// `POST /api/notifications` without `to_tag`: a secure push to the caller's own devices.
    private func securePush(_ caller: String, context: ApiContext) async throws -> Response {
        guard let text = Self.messageText(context.body) else {
            return ApiServer.error(.badRequest, "the body must be the message as a JSON string (\"…\")")
        }
        switch try await backend.withSession({ try $0.securePush(text, caller: caller) }) {
        case .sent(let id): return ApiServer.json(#"{"status":"sent","secureId":\#(id)}"#)
        case .invalid(let why): return ApiServer.error(.badRequest, why)
        case .hubFailed(let why): return ApiServer.error(.badGateway, why)
        case .tooMany(let wait):
            var response = ApiServer.error(
                .tooManyRequests, "at most \(DeviceSession.secureHourlyLimit) secure pushes an hour: try in \(wait) s")
            response.headers[ApiServer.retryAfter] = String(wait)
            return response
        }
    }

    /// The text of a message body: a JSON string, or (the tutorials' apps do not escape their
    /// quotes) the text between the outer quotes of one that is not valid JSON.
    static func messageText(_ body: Data) -> String? {
        let raw = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let text = (try? JSONSerialization.jsonObject(with: Data(raw.utf8), options: .fragmentsAllowed)) as? String {
            return text
        }
        guard raw.count >= 2, raw.hasPrefix("\""), raw.hasSuffix("\"") else { return nil }
        return String(raw.dropFirst().dropLast())
    }

    // MARK: Answers

    private func signIn() -> Response {
        var response = ApiServer.error(.unauthorized, "sign in first")
        response.headers[ApiServer.wwwAuthenticate] = backend.credentials.challenge
        return response
    }

    private static var badId: Response {
        ApiServer.error(.badRequest, "an installation id is 1 to 64 of A-Z a-z 0-9 . _ -")
    }

    private static func failure(_ outcome: RegistrationOutcome) -> Response {
        switch outcome {
        case .invalid(let why): return ApiServer.error(.badRequest, why)
        case .hubUnavailable(let why, let retryAfter):
            var response = ApiServer.error(.serviceUnavailable, why)
            response.headers[ApiServer.retryAfter] = String(retryAfter)
            return response
        case .tooMany(let why, let retryAfter):
            var response = ApiServer.error(.tooManyRequests, why)
            response.headers[ApiServer.retryAfter] = String(retryAfter)
            return response
        case .registered, .notYours: return ApiServer.error(.internalServerError, "unexpected outcome")
        }
    }

    /// A session error as the phone is told it (never a path with a password, never a handle).
    static func describe(_ error: any Error) -> String {
        switch error {
        case SessionError.ledger: return "the ledger cannot be used right now: try again later"
        case let error as SessionError: return error.description
        default: return "the back-end is shutting down or cannot answer: try again later"
        }
    }
}

/// The fields of a JSON object body, found whatever the case of their names (the tutorials'
/// ASP.NET back-end bound `Platform` and `platform` alike); a wrong type names the field.
struct JSONFields {
    struct Problem: Error {
        var message: String
    }

    private let fields: [String: Any]

    init(_ body: Data) throws(Problem) {
        guard !body.isEmpty else { throw Problem(message: "the body is empty: a JSON object is expected") }
        let value: Any
        do { value = try JSONSerialization.jsonObject(with: body) } catch {
            throw Problem(message: "the body is not valid JSON")
        }
        guard let object = value as? [String: Any] else { throw Problem(message: "the body must be a JSON object") }
        // Names are found whatever their case, so two that differ only in case (or one given
        // twice, which JSONSerialization keeps one of) would leave the winner to chance.
        var seen: [String: String] = [:]
        for name in Self.topLevelNames(body) {
            if let first = seen[name.lowercased()] {
                throw Problem(
                    message: first == name
                        ? "field '\(name)' is given twice" : "fields '\(first)' and '\(name)' differ only in case")
            }
            seen[name.lowercased()] = name
        }
        fields = Dictionary(object.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    /// The member names of a JSON object's top level, in order, repeats included, read from
    /// `body` already known to be a valid JSON object. Hand-written: neither JSONSerialization
    /// nor JSONDecoder reports a repeated name, and this is a walk over strings and depth.
    static func topLevelNames(_ body: Data) -> [String] {
        var names: [String] = []
        var depth = 0
        var index = body.startIndex
        var expectingName = false
        while index < body.endIndex {
            let byte = body[index]
            switch byte {
            case UInt8(ascii: "{"):
                depth += 1
                expectingName = depth == 1
            case UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: ","): expectingName = depth == 1
            case UInt8(ascii: "\""):
                var end = body.index(after: index)
                while end < body.endIndex && body[end] != UInt8(ascii: "\"") {
                    end = body.index(end, offsetBy: body[end] == UInt8(ascii: "\\") ? 2 : 1)
                }
                if expectingName, end <= body.endIndex,
                    let name = try? JSONSerialization.jsonObject(
                        with: Data(body[index..<min(body.endIndex, end + 1)]), options: .fragmentsAllowed) as? String
                {
                    names.append(name)
                }
                expectingName = false
                index = end
            default: break
            }
            index = body.index(after: index)
        }
        return names
    }

    func string(_ name: String) throws(Problem) -> String {
        guard let value = try optionalString(name) else { throw Problem(message: "field '\(name)' is required") }
        return value
    }

    func optionalString(_ name: String) throws(Problem) -> String? {
        guard let value = fields[name.lowercased()], !(value is NSNull) else { return nil }
        guard let text = value as? String else { throw Problem(message: "field '\(name)' must be a string") }
        return text
    }

    func strings(_ name: String) throws(Problem) -> [String]? {
        guard let value = fields[name.lowercased()], !(value is NSNull) else { return nil }
        guard let list = value as? [Any], list.allSatisfy({ $0 is String }) else {
            throw Problem(message: "field '\(name)' must be an array of strings")
        }
        return list.compactMap { $0 as? String }
    }
}
