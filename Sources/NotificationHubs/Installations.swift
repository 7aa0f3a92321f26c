import Foundation

/// An installation as a back-end writes it to the hub (`PUT {hub}/installations/{id}`,
/// hub-api.md §7): the device's push handle, its tags and its templates.
public struct HubInstallation: Codable, Sendable, Equatable {
    /// The installation's id.
    public var installationId: String
    /// `apns`, `fcmv1` or `wns`.
    public var platform: String
    /// The push handle: APNs device token, FCM registration token or WNS channel URI.
    public var pushChannel: String
    /// Its tags (at most 60).
    public var tags: [String]
    /// Its templates by name.
    public var templates: [String: Template]
    /// The user it belongs to, if any.
    public var userId: String?

    /// One template of an installation.
    public struct Template: Codable, Sendable, Equatable {
        /// The payload with `$(property)` expressions.
        public var body: String
        /// Push headers, literal or expressions.
        public var headers: [String: String]?
        /// The `Expiry` expression, e.g. `$(expiry)`.
        public var expiry: String?

        /// A template of `body`, with optional headers and expiry.
        public init(body: String, headers: [String: String]? = nil, expiry: String? = nil) {
            self.body = body
            self.headers = headers
            self.expiry = expiry
        }
    }

    /// An installation of `platform` for `pushChannel`.
    public init(
        installationId: String, platform: String, pushChannel: String, tags: [String],
        templates: [String: Template] = [:], userId: String? = nil
    ) {
        self.installationId = installationId
        self.platform = platform
        self.pushChannel = pushChannel
        self.tags = tags
        self.templates = templates
        self.userId = userId
    }

    /// The hub's platform for what an app calls its own: `apns`/`apple`, `wns`/`windows`, and
    /// `fcmv1`, `fcm` and `gcm` all as `fcmv1` (legacy FCM is gone; the same token works on v1).
    public static func platform(forApp name: String) -> String? {
        switch name.lowercased() {
        case "apns", "apple", "ios": return "apns"
        case "fcmv1", "fcm", "gcm", "android": return "fcmv1"
        case "wns", "windows": return "wns"
        default: return nil
        }
    }
}

extension HubInstallation {
    /// The installation's JSON, keys sorted (what `JSONEncoder` with `.sortedKeys` writes),
    /// written here because the encoder was a twentieth of a registration's time in `newspush
    /// api` (`newspush-bench api`); a test checks the two agree.
    public var json: String {
        var out = #"{"installationId":"# + Self.quoted(installationId) + #","platform":"# + Self.quoted(platform)
        out += #","pushChannel":"# + Self.quoted(pushChannel) + #","tags":["#
        out += tags.map(Self.quoted).joined(separator: ",") + #"],"templates":{"#
        out += templates.keys.sorted().map { name in
            let template = templates[name] ?? Template(body: "")
            var fields = [#""body":"# + Self.quoted(template.body)]
            if let expiry = template.expiry { fields.append(#""expiry":"# + Self.quoted(expiry)) }
            if let headers = template.headers {
                let pairs = headers.keys.sorted().map { Self.quoted($0) + ":" + Self.quoted(headers[$0] ?? "") }
                fields.insert(#""headers":{"# + pairs.joined(separator: ",") + "}", at: fields.count > 1 ? 2 : 1)
            }
            return Self.quoted(name) + ":{" + fields.joined(separator: ",") + "}"
        }.joined(separator: ",")
        out += "}"
        if let userId { out += #","userId":"# + Self.quoted(userId) }
        return out + "}"
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped.
    public static func quoted(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// What the hub said to an installation's write or delete, in the terms a back-end keeping the
/// hub and its index in step needs: done, not done (nothing changed at the hub), or unknown.
public enum InstallationOutcome: Sendable, Equatable {
    /// Written (200) or deleted (204, also when it was not there).
    case done
    /// The hub answered that it did not take it (4xx; 429 or 503 until the retries ran out):
    /// nothing changed there. `retryAfter`: the seconds it asked to wait, when it said.
    case refused(status: Int, detail: String, retryAfter: Double? = nil)
    /// The hub was not reached: nothing changed there.
    case unreachable(String)
    /// No clear answer after the request went out (a timeout, 500, 502, 504 until the retries
    /// ran out): the write may have landed.
    case unknown(String)

    /// Why it did not succeed, in a sentence; nil when it did.
    public var failure: String? {
        switch self {
        case .done: return nil
        case .refused(let status, let detail, _): return "the hub answered \(status)\(detail)"
        case .unreachable(let why): return "the hub could not be reached: \(why)"
        case .unknown(let why): return "no clear answer from the hub: \(why)"
        }
    }
}

extension NotificationHubClient {
    /// `PUT {hub}/installations/{id}` with the installation's JSON.
    public func installationRequest(_ installation: HubInstallation, now: Date) -> HubRequest {
        HubRequest(
            method: "PUT", url: installationURL(installation.installationId),
            headers: [
                ("Authorization", authorization(now: now)), ("x-ms-version", apiVersion),
                ("Content-Type", "application/json"),
            ], body: Data(installation.json.utf8))
    }

    /// `DELETE {hub}/installations/{id}`.
    public func deleteInstallationRequest(id: String, now: Date) -> HubRequest {
        HubRequest(
            method: "DELETE", url: installationURL(id),
            headers: [("Authorization", authorization(now: now)), ("x-ms-version", apiVersion)], body: Data())
    }

    /// Writes `installation` to the hub, retried as sends are (the write is idempotent, so a
    /// request whose answer was lost is repeated too), for at most `within` seconds.
    public func put(_ installation: HubInstallation, now: Date, within: Double = .infinity) -> InstallationOutcome {
        outcome(of: installationRequest(installation, now: now), within: within)
    }

    /// Deletes installation `id` from the hub, retried as `put` is.
    public func deleteInstallation(id: String, now: Date, within: Double = .infinity) -> InstallationOutcome {
        outcome(of: deleteInstallationRequest(id: id, now: now), within: within)
    }

    /// `GET {hub}/installations/{id}`: the status the hub answered (200 it has it, 404 not), or
    /// nil when it could not be reached. A cheap question that proves the hub and the key work.
    public func installationStatus(id: String, now: Date) -> Int? {
        guard case .success(let response) = perform(readRequest(id: id, now: now)) else { return nil }
        return response.status
    }

    /// The installation the hub holds under `id` (nil: none), or why it could not say.
    public func installation(id: String, now: Date) -> Result<HubInstallation?, InstallationReadError> {
        switch perform(readRequest(id: id, now: now)) {
        case .failure(let error): return .failure(InstallationReadError(reason: "\(error)"))
        case .success(let response) where response.status == 404: return .success(nil)
        case .success(let response) where response.status == 200:
            guard let installation = try? JSONDecoder().decode(HubInstallation.self, from: response.body) else {
                return .failure(InstallationReadError(reason: "the hub's installation is not JSON newspush reads"))
            }
            return .success(installation)
        case .success(let response):
            return .failure(
                InstallationReadError(reason: "the hub answered \(response.status)\(Self.errorDetail(response))"))
        }
    }

    private func readRequest(id: String, now: Date) -> HubRequest {
        HubRequest(
            method: "GET", url: installationURL(id),
            headers: [("Authorization", authorization(now: now)), ("x-ms-version", apiVersion)], body: Data())
    }

    private func installationURL(_ id: String) -> String {
        "\(baseURL)\(hubName)/installations/\(Self.pathSegment(id))?api-version=\(apiVersion)"
    }

    /// One idempotent request, retried by `retryPolicy` (Retry-After first) while the next try
    /// can start within `within` seconds of the first.
    private func outcome(of request: HubRequest, within: Double) -> InstallationOutcome {
        let started = Date()
        var attempt = 0
        while true {
            let (outcome, retry, retryAfter) = classifyInstallationAnswer(perform(request))
            guard retry, attempt < retryPolicy.maxRetries else { return outcome }
            let delay = retryPolicy.delay(attempt: attempt, retryAfter: retryAfter)
            if delay > retryPolicy.maxDelay || Date().timeIntervalSince(started) + delay > within { return outcome }
            retryPolicy.sleep(delay)
            attempt += 1
        }
    }

    /// What one answer to an installation request means, and whether to try again.
    private func classifyInstallationAnswer(_ result: Result<HubResponse, HubTransportError>)
        -> (InstallationOutcome, retry: Bool, retryAfter: Double?)
    {
        let response: HubResponse
        switch result {
        case .failure(.notSent(let why)): return (.unreachable(why), true, nil)
        case .failure(.outcomeUnknown(let why)): return (.unknown(why), true, nil)
        case .success(let answer): response = answer
        }
        let status = response.status
        let detail = Self.errorDetail(response)
        let retryAfter = response.headers["retry-after"].flatMap { Self.parseRetryAfter($0) }
        switch status {
        case 200..<300: return (.done, false, nil)
        case 429, 503: return (.refused(status: status, detail: detail, retryAfter: retryAfter), true, retryAfter)
        case 403 where retryAfter != nil:
            return (.refused(status: status, detail: detail, retryAfter: retryAfter), true, retryAfter)
        case 408, 500, 502, 504: return (.unknown("the hub answered \(status)\(detail)"), true, retryAfter)
        case 400..<500: return (.refused(status: status, detail: detail), false, nil)
        default: return (.unknown("the hub answered \(status)\(detail)"), false, nil)
        }
    }
}

/// Why the hub could not say what it holds under an id.
public struct InstallationReadError: Error, Sendable, Equatable {
    /// In a sentence.
    public var reason: String
}
