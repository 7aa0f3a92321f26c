import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request to the back-end as the kit makes every one: the app's credential, one refresh
/// after a 401, and the retries of the policy on 429 and 503 (and on no answer, for requests
/// that may be repeated).
struct Exchange: Sendable {
    let server: URL
    let calls: URLSessionCalls
    let identity: @Sendable (IdentityRequest) async throws -> NewsPushCredential?
    let retry: RetryPolicy

    /// An answer: status, body and the headers the kit reads.
    struct Answer: Sendable {
        var status: Int
        var body: Data
        var retryAfter: Duration?
    }

    /// `method path?query` with `body` (JSON) and `headers`; the answer once it is not 401, 429 or 503,
    /// or a `NewsPushError`.
    /// `repeatable`: a POST that may be sent again when no answer came (an event, counted once).
    func send(
        _ method: String, _ path: String, query: [URLQueryItem] = [], json body: Data? = nil,
        headers: [String: String] = [:], timeout: Duration = .seconds(60), repeatable: Bool = false
    ) async throws -> Answer {
        var credential = try await identity(.current)
        var refreshed = false
        var attempt = 0
        while true {
            let request = self.request(
                method, path, query: query, body: body, headers: headers, credential, timeout: timeout)
            attempt += 1
            let answer: Answer
            do {
                answer = try await exchange(request)
            } catch let error as NewsPushError {
                // No answer: repeat what may be repeated (PUT, GET, DELETE), within the policy.
                guard method != "POST" || repeatable, attempt < retry.attempts else { throw error }
                try await Task.sleep(for: backoff(attempt))
                continue
            }
            switch answer.status {
            case 401 where credential != nil && !refreshed:
                refreshed = true
                attempt -= 1
                guard let fresh = try await identity(.refresh) else { throw Self.refusal(answer) }
                credential = fresh
            case 401:
                throw Self.refusal(answer)
            case 429, 503:
                let wait = answer.retryAfter ?? backoff(attempt)
                guard attempt < retry.attempts, wait <= retry.maximumWait else {
                    throw NewsPushError.busy(retryAfter: answer.retryAfter)
                }
                try await Task.sleep(for: wait)
            default:
                return answer
            }
        }
    }

    /// The `n`th backoff: the policy's first, doubled each time, with up to a quarter of jitter
    /// (so that phones refused together do not come back together), at most the policy's cap.
    func backoff(_ n: Int) -> Duration {
        let base = retry.initialBackoff * (1 << min(n - 1, 16))
        let jittered = base + base * Double.random(in: 0..<0.25)
        return min(jittered, retry.maximumWait)
    }

    private func request(
        _ method: String, _ path: String, query: [URLQueryItem], body: Data?, headers: [String: String],
        _ credential: NewsPushCredential?, timeout: Duration
    ) -> URLRequest {
        let url = server.appendingPathComponent(path)
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.queryItems = query.isEmpty ? nil : query
        var request = URLRequest(url: components?.url ?? url)
        request.httpMethod = method
        request.timeoutInterval = Double(timeout.components.seconds) + 1
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let credential { request.setValue(credential.header, forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    private func exchange(_ request: URLRequest) async throws -> Answer {
        do {
            let reply = try await calls.data(for: request)
            return Answer(status: reply.status, body: reply.body, retryAfter: reply.retryAfter.flatMap(Self.retryAfter))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw NewsPushError.unreachable(error.localizedDescription)
        }
    }

    /// `Retry-After` as seconds or as an HTTP date (RFC 9110 §10.2.3).
    static func retryAfter(_ value: String) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return .seconds(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .milliseconds(max(0, Int(date.timeIntervalSinceNow * 1000)))
    }

    /// A 401 as the kit reports it (Linux's URLSession gives no body: `URLSessionCalls`).
    static func refusal(_ answer: Answer) -> NewsPushError {
        let said = message(answer.body)
        return .unauthorized(said.isEmpty ? "the back-end answered 401 to the credential given" : said)
    }

    /// The `error` of a JSON error answer, or its text.
    static func message(_ body: Data) -> String {
        if let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let error = object["error"] as? String
        {
            return error
        }
        return String(decoding: body.prefix(300), as: UTF8.self)
    }
}
