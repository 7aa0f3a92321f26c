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

/// What the hub said to an installation's write or delete.
public enum InstallationOutcome: Sendable, Equatable {
    /// Written (200) or deleted (204, also when it was not there).
    case done
    /// Refused with this status and the service's detail.
    case refused(status: Int, detail: String)
    /// The hub was not reached, or did not answer.
    case unreachable(String)
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

    /// Writes `installation` to the hub (the write is idempotent: a repeat is harmless).
    public func put(_ installation: HubInstallation, now: Date) -> InstallationOutcome {
        outcome(of: installationRequest(installation, now: now))
    }

    /// Deletes installation `id` from the hub.
    public func deleteInstallation(id: String, now: Date) -> InstallationOutcome {
        outcome(of: deleteInstallationRequest(id: id, now: now))
    }

    /// `GET {hub}/installations/{id}`: the status the hub answered (200 it has it, 404 not), or
    /// nil when it could not be reached. A cheap question that proves the hub and the key work.
    public func installationStatus(id: String, now: Date) -> Int? {
        let request = HubRequest(
            method: "GET", url: installationURL(id),
            headers: [("Authorization", authorization(now: now)), ("x-ms-version", apiVersion)], body: Data())
        guard case .success(let response) = perform(request) else { return nil }
        return response.status
    }

    private func installationURL(_ id: String) -> String {
        "\(baseURL)\(hubName)/installations/\(Self.pathSegment(id))?api-version=\(apiVersion)"
    }

    private func outcome(of request: HubRequest) -> InstallationOutcome {
        switch perform(request) {
        case .failure(.notSent(let why)), .failure(.outcomeUnknown(let why)):
            return .unreachable(why)
        case .success(let response) where (200..<300).contains(response.status):
            return .done
        case .success(let response):
            return .refused(status: response.status, detail: Self.errorDetail(response))
        }
    }
}
