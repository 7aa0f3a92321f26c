import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The kit's one `URLSession` call, with two repairs written by hand because no library does
/// them for Foundation's own client:
///
/// - swift-corelibs-foundation (Linux, through Swift 6.3.1) never completes a request answered
///   401 with a `WWW-Authenticate` when it has no stored credential to offer
///   (swift-corelibs-foundation #5456, fixed after 6.3.1); a per-task delegate is not asked there.
///   The session's delegate cancels HTTP authentication challenges (the kit sends its own
///   credential, and refreshes it through the app's closure) and remembers the task, so that the
///   cancellation reads as the 401 it was, on every platform alike. Other challenges (server
///   trust, client certificates) get the system's default handling.
/// - a task is cancelled with the Swift task that waits for it, so that a deadline holds on Linux too.
final class URLSessionCalls: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var challenged: Set<Int> = []
    private var made: URLSession?

    /// A session of `configuration` whose challenges this object answers (the session holds its
    /// delegate, so the session is made after this object, once).
    init(configuration: URLSessionConfiguration) {
        super.init()
        made = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    private var session: URLSession { made ?? .shared }

    private static let httpAuthentication: Set<String> = [
        NSURLAuthenticationMethodDefault, NSURLAuthenticationMethodHTTPBasic, NSURLAuthenticationMethodHTTPDigest,
        NSURLAuthenticationMethodNTLM, NSURLAuthenticationMethodNegotiate,
    ]

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard Self.httpAuthentication.contains(challenge.protectionSpace.authenticationMethod) else {
            return completionHandler(.performDefaultHandling, nil)
        }
        lock.withLock { _ = challenged.insert(task.taskIdentifier) }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    /// Whether task `id` was answered 401 (its challenge cancelled here); forgets it.
    private func wasChallenged(_ id: Int) -> Bool {
        lock.withLock { challenged.remove(id) != nil }
    }

    /// What the kit reads of an answer.
    typealias Reply = (status: Int, body: Data, retryAfter: String?)

    /// `request`'s status, body and `Retry-After`; a challenged request is a 401 with an empty body.
    func data(for request: URLRequest) async throws -> Reply {
        let running = RunningTask()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request) { [self] data, response, error in
                    continuation.resume(with: outcome(data, response, error, task: running.identifier))
                }
                running.start(task)
            }
        } onCancel: {
            running.cancel()
        }
    }

    /// The call's answer; a failure that is the challenge cancelled here is the 401 it was.
    private func outcome(_ data: Data?, _ response: URLResponse?, _ error: Error?, task id: Int?) -> Result<
        Reply, Error
    > {
        if let http = response as? HTTPURLResponse, error == nil {
            return .success((http.statusCode, data ?? Data(), http.value(forHTTPHeaderField: "Retry-After")))
        }
        if let id, (error as? URLError)?.code == .cancelled, wasChallenged(id) {
            return .success((401, Data(), nil))
        }
        return .failure(error ?? URLError(.badServerResponse))
    }

    /// A data task and whether the Swift task waiting for it was cancelled, whichever comes first.
    private final class RunningTask: @unchecked Sendable {
        private let lock = NSLock()
        private var task: URLSessionDataTask?
        private var cancelled = false

        /// The data task's identifier, once it is started.
        var identifier: Int? { lock.withLock { task?.taskIdentifier } }

        func start(_ task: URLSessionDataTask) {
            let cancelNow = lock.withLock {
                self.task = task
                return cancelled
            }
            task.resume()
            if cancelNow { task.cancel() }
        }

        func cancel() {
            let task = lock.withLock {
                cancelled = true
                return self.task
            }
            task?.cancel()
        }
    }
}
