import Foundation

/// What became of one send, in the terms the caller needs to keep its promises:
/// was it delivered, refused for good, safe to try again, or unknown.
public enum SendOutcome: Sendable, Equatable {
    /// The hub answered 200 or 201.
    case accepted(status: Int, notificationId: String?, trackingId: String?, body: Data)
    /// The hub refused the request for good (4xx other than 408/429); sending it again will not help.
    case refused(status: Int, reason: String)
    /// The hub cannot have accepted it (no connection, or throttled until retries ran out):
    /// safe to send again later.
    case notAccepted(status: Int?, reason: String)
    /// The request may have been accepted but no clear answer came (timeout after sending,
    /// server errors until retries ran out): sending it again risks a duplicate.
    case unknown(status: Int?, reason: String)

    /// Whether the failure concerns the hub as a whole rather than this notification: the key
    /// or its rights (401, 403 without Retry-After), the hub's name (404), the hub out of reach
    /// (DNS, refused connection, TLS) or throttling until the retries ran out. Every other send
    /// would fail the same way now, so a caller stops sending and keeps the rest for later.
    public var concernsHub: Bool {
        switch self {
        case .notAccepted: return true
        case .refused(let status, _): return status == 401 || status == 403 || status == 404
        case .accepted, .unknown: return false
        }
    }

    /// Why the send did not succeed; nil when it did.
    public var failureReason: String? {
        switch self {
        case .accepted: return nil
        case .refused(_, let reason), .notAccepted(_, let reason), .unknown(_, let reason): return reason
        }
    }

    /// The send format the hub has no credential for, when the answer says so (400 "The
    /// notification has no target applications. The notification format is gcm"): a fault of
    /// the hub's set-up for every push of that format, not of this push.
    public var formatWithoutCredential: String? {
        guard case .refused(400, let reason) = self,
            let range = reason.range(of: "has no target applications. The notification format is ")
        else { return nil }
        let format = reason[range.upperBound...].prefix { $0.isLetter || $0.isNumber }
        return format.isEmpty ? nil : String(format)
    }

    /// The HTTP status of the last answer, if there was one.
    public var httpStatus: Int? {
        switch self {
        case .accepted(let status, _, _, _), .refused(let status, _): return status
        case .notAccepted(let status, _), .unknown(let status, _): return status
        }
    }
}

/// How failed sends are retried: at most `maxRetries` more attempts, `Retry-After` first,
/// else exponential from `baseDelay` with a little jitter, never waiting longer than `maxDelay`.
public struct RetryPolicy: Sendable {
    /// Retries after the first attempt (the official SDKs use 3).
    public var maxRetries: Int
    /// Seconds before the first retry; doubled each time.
    public var baseDelay: Double
    /// The longest wait between retries.
    public var maxDelay: Double
    /// The share by which each wait is varied at random.
    public var jitter: Double
    /// Waits the given number of seconds (tests pass one that records instead of sleeping).
    public var sleep: @Sendable (Double) -> Void

    /// A policy of `maxRetries` retries from `baseDelay` seconds.
    public init(
        maxRetries: Int = 3, baseDelay: Double = 1, maxDelay: Double = 60, jitter: Double = 0.08,
        sleep: @escaping @Sendable (Double) -> Void = { Thread.sleep(forTimeInterval: $0) }
    ) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.sleep = sleep
    }

    func delay(attempt: Int, retryAfter: Double?) -> Double {
        if let retryAfter { return retryAfter }
        let exponential = min(maxDelay, baseDelay * pow(2, Double(attempt)))
        return exponential * (1 + Double.random(in: 0...jitter))
    }
}

/// A client of the Notification Hubs send API for one hub.
public struct NotificationHubClient: Sendable {
    /// The namespace, key name and key.
    public let connection: HubConnectionString
    /// The hub's name (the first segment of its paths).
    public let hubName: String
    /// `https://{namespace host}/`, or the configured endpoint (emulator, proxy); ends with `/`.
    public let baseURL: String
    /// The REST API version sent (`2020-06`).
    public let apiVersion: String
    /// How throttled or failed sends are retried.
    public var retryPolicy: RetryPolicy
    /// Request bodies over this size are refused before sending (the service answers 413 above 64 KB).
    public var maxPayloadBytes: Int
    private let tokens: SASTokenProvider
    private let transport: any HubTransport

    /// A client of hub `hubName`; `endpoint` replaces `https://<namespace host>/` (emulators, proxies).
    public init(
        connection: HubConnectionString, hubName: String, endpoint: String? = nil,
        apiVersion: String = "2020-06", transport: any HubTransport,
        retryPolicy: RetryPolicy = RetryPolicy(), maxPayloadBytes: Int = 64 * 1024
    ) {
        self.connection = connection
        self.hubName = hubName
        var base = endpoint ?? connection.httpsBase
        if !base.hasSuffix("/") { base += "/" }
        self.baseURL = base
        self.apiVersion = apiVersion
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.maxPayloadBytes = maxPayloadBytes
        self.tokens = SASTokenProvider(connection: connection, hub: hubName)
    }

    /// The `Authorization` value for a request at `now` (a cached token while it has 5+ minutes left).
    public func authorization(now: Date = Date()) -> String {
        tokens.authorization(now: now)
    }

    /// The messages endpoint, `{base}{hub}/messages/?api-version=…` (with `&test` for test sends).
    public func messagesURL(test: Bool = false) -> String {
        "\(baseURL)\(hubName)/messages/?api-version=\(apiVersion)\(test ? "&test" : "")"
    }

    /// A template send: a flat JSON object of string properties for the devices matching `tags`
    /// (nil broadcasts).
    public func templateRequest(
        properties: [String: String], tags: String?, test: Bool = false,
        now: Date = Date()
    ) throws(HubError) -> HubRequest {
        for name in properties.keys where !Self.isValidPropertyName(name) {
            throw .invalidPropertyName(name)
        }
        if let tags { try TagExpression.validate(tags) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a [String: String] cannot fail; the fallback keeps the signature non-throwing.
        let body = (try? encoder.encode(properties)) ?? Data("{}".utf8)
        if body.count > maxPayloadBytes {
            let largest = properties.max { $0.value.utf8.count < $1.value.utf8.count }
            throw .payloadTooLarge(
                bytes: body.count, limit: maxPayloadBytes,
                largest: largest.map { "the property '\($0.key)' (\($0.value.utf8.count) bytes)" })
        }
        var headers: [(name: String, value: String)] = [
            ("Authorization", authorization(now: now)),
            ("Content-Type", "application/json;charset=utf-8"),
            ("ServiceBusNotification-Format", "template"),
        ]
        if let tags { headers.append(("ServiceBusNotification-Tags", tags)) }
        headers.append(("x-ms-version", apiVersion))
        return HubRequest(method: "POST", url: messagesURL(test: test), headers: headers, body: body)
    }

    /// One request, once, through the transport (for reads such as telemetry).
    public func perform(_ request: HubRequest) -> Result<HubResponse, HubTransportError> {
        transport.perform(request)
    }

    /// The hub's clock: the `Date` header of an answer to a harmless read (the telemetry of an
    /// id no notification has), and the machine's clock when it came; nil when the hub cannot
    /// be reached or says no date.
    public func serverClock(now: Date = Date()) -> (server: Date, local: Date)? {
        let probe = HubRequest(
            method: "GET",
            url: "\(baseURL)\(hubName)/messages/newspush-clock-check?api-version=\(apiVersion)",
            headers: [("Authorization", authorization(now: now)), ("x-ms-version", apiVersion)], body: Data())
        guard case .success(let response) = perform(probe), let date = response.headers["date"],
            let server = Self.parseHTTPDate(date)
        else { return nil }
        return (server, Date())
    }

    /// Sends a request, retrying as the official SDKs do, and says what became of it.
    public func send(_ request: HubRequest) -> SendOutcome {
        var attempt = 0
        while true {
            let verdict = classify(transport.perform(request))
            switch verdict {
            case .done(let outcome):
                return outcome
            case .retry(let retryAfter, let exhausted):
                if attempt >= retryPolicy.maxRetries { return exhausted }
                let delay = retryPolicy.delay(attempt: attempt, retryAfter: retryAfter)
                // A Retry-After longer than we are willing to wait: give up now, unsent.
                if delay > retryPolicy.maxDelay { return exhausted }
                retryPolicy.sleep(delay)
                attempt += 1
            }
        }
    }

    private enum Verdict {
        case done(SendOutcome)
        case retry(retryAfter: Double?, ifExhausted: SendOutcome)
        static func retry(_ retryAfter: Double?, _ exhausted: SendOutcome) -> Verdict {
            .retry(retryAfter: retryAfter, ifExhausted: exhausted)
        }
    }

    private func classify(_ result: Result<HubResponse, HubTransportError>) -> Verdict {
        let response: HubResponse
        switch result {
        case .failure(.notSent(let why)):
            return .retry(nil, .notAccepted(status: nil, reason: "could not reach the hub at \(baseURL): \(why)"))
        case .failure(.outcomeUnknown(let why)):
            // Sending again could deliver the alert twice.
            return .done(.unknown(status: nil, reason: "no answer from the hub after sending: \(why)"))
        case .success(let r):
            response = r
        }
        return verdict(response)
    }

    /// What an HTTP answer means: accepted, worth another try, or refused for good.
    private func verdict(_ response: HubResponse) -> Verdict {
        let status = response.status
        let detail = Self.errorDetail(response)
        let retryAfter = response.headers["retry-after"].flatMap { Self.parseRetryAfter($0) }
        switch status {
        case 200, 201:
            let id = response.headers["location"].flatMap(Self.notificationId(fromLocation:))
            return .done(
                .accepted(
                    status: status, notificationId: id, trackingId: response.headers["trackingid"],
                    body: response.body))
        case 429, 503:
            return .retry(
                retryAfter,
                .notAccepted(
                    status: status, reason: "hub throttled or unavailable (\(status))\(detail); retries exhausted"))
        case 403 where retryAfter != nil:
            return .retry(
                retryAfter,
                .notAccepted(
                    status: status, reason: "hub quota exceeded (403 with Retry-After)\(detail); retries exhausted"))
        case 408, 500, 504:
            return .retry(
                retryAfter,
                .unknown(
                    status: status,
                    reason: "hub error \(status)\(detail) after retries; it may have queued the notification"))
        default:
            return refusal(status, detail: detail)
        }
    }

    /// The answers that refuse a send for good, each with what to check.
    private func refusal(_ status: Int, detail: String) -> Verdict {
        switch status {
        case 400:
            return .done(.refused(status: status, reason: "hub rejected the request as malformed (400)\(detail)"))
        case 401:
            return .done(
                .refused(
                    status: status,
                    reason:
                        "hub rejected the token (401)\(detail): check SharedAccessKeyName/SharedAccessKey in the "
                        + "connection string, and the clock (ExpiredToken means clock skew)"
                ))
        case 403:
            return .done(
                .refused(
                    status: status,
                    reason:
                        "hub refused the send (403)\(detail): the policy '\(connection.keyName)' needs the Send "
                        + "right, or the namespace quota is used up"
                ))
        case 404:
            return .done(
                .refused(
                    status: status,
                    reason:
                        "hub '\(hubName)' not found at \(baseURL) (404)\(detail): check hub.name and the connection "
                        + "string's Endpoint"
                ))
        case 413:
            return .done(
                .refused(
                    status: status, reason: "notification too large for the hub (413)\(detail); shorten the message"))
        default:
            if (400..<500).contains(status) {
                return .done(.refused(status: status, reason: "hub refused the send (\(status))\(detail)"))
            }
            return .done(.unknown(status: status, reason: "unexpected hub answer \(status)\(detail)"))
        }
    }

    /// What the service said of an error, prefixed for a message, or "": the `<Detail>` of its
    /// XML body, else its status line's reason phrase when that says more than the status's
    /// standard name (the service puts `40103: Invalid authorization token signature` there).
    static func errorDetail(_ response: HubResponse) -> String {
        let text = String(decoding: response.body.prefix(2048), as: UTF8.self)
        if let start = text.range(of: "<Detail>"),
            let end = text.range(of: "</Detail>", range: start.upperBound..<text.endIndex)
        {
            return ": " + redactingHandles(String(text[start.upperBound..<end.lowerBound]))
        }
        let reason = response.reason.trimmingWhitespace()
        guard !reason.isEmpty, !standardReasons.contains(reason.lowercased()) else { return "" }
        return ": " + redactingHandles(reason)
    }

    /// `text` with anything shaped like a push handle replaced by `[handle]`: a WNS channel URI
    /// (a URL on a `notify.windows.com` host, as written or percent-encoded), and a run of 32 or
    /// more of `A-Z a-z 0-9 _ : - %` holding at least 4 digits (an APNs token's hex, an FCM
    /// registration token, either percent-encoded), except the service's own TrackingId (a
    /// GUID). A hub's detail may quote what it was sent, and a handle is never logged nor told to
    /// a caller (SPEC §9). Hand-written: a scan of one short string, where a regular expression
    /// per shape would cost more than the rule.
    public static func redactingHandles(_ text: String) -> String {
        var out = ""
        var run = ""
        func flush() {
            let tracking = run.hasPrefix("TrackingId:") ? String(run.dropFirst(11)) : run
            let isGuid = tracking.count >= 36 && UUID(uuidString: String(tracking.prefix(36))) != nil
            let digits = run.filter(\.isNumber).count
            out += run.count >= 32 && digits >= 4 && !isGuid ? "[handle]" : run
            run = ""
        }
        var rest = Substring(text)
        while let character = rest.first {
            if let url = channelURI(at: rest) {
                flush()
                out += "[handle]"
                rest = rest.dropFirst(url)
                continue
            }
            if character.isASCII && (character.isLetter || character.isNumber || "_-:%".contains(character)) {
                run.append(character)
            } else {
                flush()
                out.append(character)
            }
            rest = rest.dropFirst()
        }
        flush()
        return out
    }

    /// The length of a WNS channel URI starting `text` (to the next space, quote or angle
    /// bracket), if it is one.
    private static func channelURI(at text: Substring) -> Int? {
        let start = text.prefix(16).lowercased()
        guard
            start.hasPrefix("http://") || start.hasPrefix("https://") || start.hasPrefix("http%3a")
                || start.hasPrefix("https%3a")
        else { return nil }
        let url = text.prefix { !$0.isWhitespace && !"\"'<>".contains($0) }
        let decoded = String(url).removingPercentEncoding ?? String(url)
        let host = decoded.drop { $0 != "/" }.dropFirst(2).prefix { $0 != "/" && $0 != "?" && $0 != ":" }
        return host.lowercased().hasSuffix("notify.windows.com") ? url.count : nil
    }

    /// The standard reason phrases (RFC 9110) of the statuses the service answers, lower-cased:
    /// they say nothing the status does not.
    static let standardReasons: Set<String> = [
        "bad request", "unauthorized", "forbidden", "not found", "method not allowed", "conflict", "gone",
        "request entity too large", "content too large", "payload too large", "too many requests",
        "internal server error", "bad gateway", "service unavailable", "gateway timeout", "request timeout", "ok",
        "created",
    ]

    /// The last path segment of a `Location` URL.
    public static func notificationId(fromLocation location: String) -> String? {
        let path = location.split(separator: "?", maxSplits: 1).first ?? ""
        let segment = path.split(separator: "/").last.map(String.init)
        return segment?.isEmpty == false ? segment : nil
    }

    /// `Retry-After` as seconds: a number of seconds, or an HTTP date. Anything else (a
    /// header is whatever a server or proxy sends) is nil: only ASCII digits and at most one
    /// point count as seconds ("inf" and "1e9999" do not), and only short ASCII text reaches
    /// the date formatter (Foundation's traps on some combining characters; found by fuzzing).
    public static func parseRetryAfter(_ value: String, now: Date = Date()) -> Double? {
        let trimmed = value.trimmingWhitespace()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 64, trimmed.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            return nil
        }
        if trimmed.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }),
            trimmed.utf8.filter({ $0 == 0x2E }).count <= 1
        {
            return Double(trimmed).map { min($0, longestRetryAfter) }
        }
        guard let date = parseHTTPDate(trimmed) else { return nil }
        return min(longestRetryAfter, max(0, date.timeIntervalSince(now)))
    }

    /// The longest wait a `Retry-After` is taken for (a day): whatever a hub says, no wait is
    /// longer, and no number it sends can overflow what is computed from it.
    public static let longestRetryAfter: Double = 86400

    /// An HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110's preferred form), as `Date` and
    /// `Retry-After` headers carry it; nil for anything else.
    public static func parseHTTPDate(_ value: String) -> Date? {
        let trimmed = value.trimmingWhitespace()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 64 else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: trimmed)
    }

    /// Template property names: `[A-Za-z0-9_]`, 1 to 120 characters.
    public static func isValidPropertyName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 120
            && name.unicodeScalars.allSatisfy {
                ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
            }
    }
}
