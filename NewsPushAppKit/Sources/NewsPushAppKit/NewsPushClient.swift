import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An app's side of `newspush api`: register the device at every launch, identify the reader,
/// fetch a secure push's text in a Notification Service Extension, and forget the reader.
///
/// Written on `URLSession` directly rather than on the client swift-openapi-generator makes
/// from the document (the test suite builds and runs that client too): a client generated in
/// the app's build would make every app build the generator and its dependencies and ask the
/// developer to trust its build plugin, for five requests; this kit depends on Foundation only.
public struct NewsPushClient: Sendable {
    private let exchange: Exchange
    private let platform: PushPlatform
    private let store: any InstallationIdStore

    /// A client of the back-end at `server` (its root, e.g. `https://push.example.com/`) for a
    /// device of `platform`. `store` keeps the installation id; `identity` gives the reader's
    /// credential (nil: anonymous) and, asked `.refresh` after a 401, a fresh one. The client
    /// makes its own `URLSession` of `configuration`.
    public init(
        server: URL, platform: PushPlatform, store: any InstallationIdStore,
        identity: @escaping @Sendable (IdentityRequest) async throws -> NewsPushCredential? = { _ in nil },
        retry: RetryPolicy = .standard, configuration: URLSessionConfiguration = .default
    ) {
        self.exchange = Exchange(
            server: server, calls: URLSessionCalls(configuration: configuration), identity: identity, retry: retry)
        self.platform = platform
        self.store = store
    }

    /// The installation id of this app on this device: created once, then kept by the store.
    public var installationId: String {
        if let kept = store.load() { return kept }
        let id = UUID().uuidString.lowercased()
        store.save(id)
        return id
    }

    /// Registers the device (call it at every launch, and when the handle or the topics change):
    /// the handle's form is checked first; the answer says which topics were taken.
    @discardableResult
    public func register(handle: String, topics: [String], language: String? = nil) async throws -> Registration {
        if let problem = HandleForm.problem(handle, platform: platform) { throw NewsPushError.badHandle(problem) }
        let body = try JSONSerialization.data(withJSONObject: registrationBody(handle, topics, language))
        var id = installationId
        var answer = try await exchange.send("PUT", "api/installations/\(id)", json: body)
        if answer.status == 403 {
            // The kept id is another reader's or device's (a restored backup, say): a new one.
            id = UUID().uuidString.lowercased()
            store.save(id)
            answer = try await exchange.send("PUT", "api/installations/\(id)", json: body)
        }
        guard answer.status == 200 else {
            throw NewsPushError.refused(status: answer.status, message: Exchange.message(answer.body))
        }
        return try JSONDecoder().decode(Registration.self, from: answer.body)
    }

    /// Registers an APNs device token as `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`
    /// gives it.
    @discardableResult
    public func register(deviceToken: Data, topics: [String], language: String? = nil) async throws -> Registration {
        try await register(handle: HandleForm.hex(deviceToken), topics: topics, language: language)
    }

    /// The text of secure push `secureId` (the `secureId` of the notification's payload), or
    /// `generic` when it cannot be had within `deadline`: a Notification Service Extension has
    /// about 30 seconds before the system shows the notification as it came.
    public func secureText(for secureId: Int, within deadline: Duration = .seconds(20), otherwise generic: String)
        async -> String
    {
        // Whichever ends first answers; the loser is cancelled and not waited for (a task group
        // would wait for its fetch, however long the network takes to give it up, and the
        // extension's deadline is the system's, not the network's). A cancelled fetch leaves its
        // request to end by itself within the deadline and a second (`URLSessionCalls.data`).
        let answer = FirstAnswer(generic)
        let fetch = Task {
            let reply = try? await exchange.send("GET", "api/notifications/\(secureId)", timeout: deadline)
            guard let reply, reply.status == 200,
                let text = try? JSONDecoder().decode(SecureText.self, from: reply.body).payload
            else { return answer.give(generic) }
            answer.give(text)
        }
        let timer = Task {
            try? await Task.sleep(for: deadline)
            answer.give(generic)
        }
        let text = await answer.value
        fetch.cancel()
        timer.cancel()
        return text
    }

    /// Says what this installation did with alert `alertId` (SPEC §11): `.received` from the
    /// Notification Service Extension, `.opened` when the reader taps the alert. The back-end
    /// counts each once per installation, so a repeat is harmless and the call is retried like
    /// a PUT; it answers 204 whether it counted or not, so this returns nothing.
    public func report(_ event: AlertEvent, alertId: String) async throws {
        guard let id = store.load() else { return }  // never registered: nothing to report for
        let body = try JSONSerialization.data(withJSONObject: ["installationId": id, "event": event.rawValue])
        let path = "api/alerts/\(alertId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "")/events"
        let answer = try await exchange.send("POST", path, json: body, repeatable: true)
        guard answer.status == 204 else {
            throw NewsPushError.refused(status: answer.status, message: Exchange.message(answer.body))
        }
    }

    /// The alert id of a notification's payload (`userInfo` on Apple, `RemoteMessage.data` on
    /// Android): the back-end's default templates put it at the top, or in FCM's data; nil for a
    /// push registered with a template that leaves it out.
    public static func alertId(in payload: [AnyHashable: Any]) -> String? {
        if let id = payload["alertId"] as? String { return id }
        if let data = (payload["message"] as? [String: Any])?["data"] as? [String: Any] {
            return data["alertId"] as? String
        }
        return nil
    }

    /// Forgets the signed-in reader: every installation, message and read of theirs is removed
    /// from the hub and the newsroom's ledger, and the kept id is dropped.
    public func forgetMe() async throws {
        let answer = try await exchange.send("DELETE", "api/users/me")
        guard answer.status == 204 || answer.status == 200 else {
            throw NewsPushError.refused(status: answer.status, message: Exchange.message(answer.body))
        }
        store.save(nil)
    }

    /// Removes this device's installation (an anonymous reader turning alerts off): the device
    /// proves it is itself with its handle.
    public func unregister(handle: String) async throws {
        guard let id = store.load() else { return }
        let answer = try await exchange.send("DELETE", "api/installations/\(id)", headers: ["X-Push-Channel": handle])
        guard answer.status == 204 else {
            throw NewsPushError.refused(status: answer.status, message: Exchange.message(answer.body))
        }
        store.save(nil)
    }

    private func registrationBody(_ handle: String, _ topics: [String], _ language: String?) -> [String: Any] {
        var body: [String: Any] = ["platform": platform.rawValue, "pushChannel": handle, "topics": topics]
        if let language { body["language"] = language }
        return body
    }

    /// The first of several answers given, awaited once.
    private final class FirstAnswer: @unchecked Sendable {
        private let lock = NSLock()
        private var given: String?
        private var waiting: CheckedContinuation<String, Never>?
        private let fallback: String

        init(_ fallback: String) { self.fallback = fallback }

        /// Gives `text` if no answer was given yet.
        func give(_ text: String) {
            let resume = lock.withLock { () -> CheckedContinuation<String, Never>? in
                guard given == nil else { return nil }
                given = text
                defer { waiting = nil }
                return waiting
            }
            resume?.resume(returning: text)
        }

        /// The first answer given.
        var value: String {
            get async {
                await withCheckedContinuation { continuation in
                    let now = lock.withLock { () -> String? in
                        if let given { return given }
                        waiting = continuation
                        return nil
                    }
                    if let now { continuation.resume(returning: now) }
                }
            }
        }
    }

    /// `GET /api/notifications/{id}`'s answer (the tutorials' field names).
    private struct SecureText: Decodable {
        var payload: String
        enum CodingKeys: String, CodingKey { case payload = "Payload" }
    }
}
