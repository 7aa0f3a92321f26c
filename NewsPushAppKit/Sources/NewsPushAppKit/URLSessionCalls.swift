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
/// - the Swift task that waits for a data task can be cancelled (a deadline holds on Linux too),
///   but the data task itself is never cancelled: see `data(for:)`.
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
        // Foundation cancels the task for this answer. Unlike a cancel from outside, it cannot
        // meet the task's completion: the task waits for this very answer, its transfer done.
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    /// Whether task `id` was answered 401 (its challenge cancelled here); forgets it.
    private func wasChallenged(_ id: Int) -> Bool {
        lock.withLock { challenged.remove(id) != nil }
    }

    /// What the kit reads of an answer.
    typealias Reply = (status: Int, body: Data, retryAfter: String?)

    /// `request`'s status, body and `Retry-After`; a challenged request is a 401 with an empty body.
    ///
    /// When the Swift task waiting is cancelled (a deadline passed), this call ends at once with
    /// `CancellationError`, and the data task is left to end by itself (within the request's
    /// `timeoutInterval`) with nobody listening: it is never cancelled. On Linux,
    /// swift-corelibs-foundation (through 6.3.1) traps when `URLSessionTask.cancel()` lands
    /// while the task's protocol is finishing ("Trying to access a behaviour for a task that in
    /// not in the registry", swift-corelibs-foundation #3296): `cancel()` checks the state and
    /// fails the protocol in two steps on its work queue, and the completion can come between.
    func data(for request: URLRequest) async throws -> Reply {
        let waiting = Waiting()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard waiting.wait(continuation) else { return }
                let task = session.dataTask(with: request) { [self] data, response, error in
                    waiting.answer(outcome(data, response, error, task: waiting.identifier))
                }
                waiting.started(task.taskIdentifier)
                task.resume()
            }
        } onCancel: {
            waiting.answer(.failure(CancellationError()))
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

    /// The Swift task waiting for a data task: answered once, by whichever comes first of the
    /// data task's completion and the Swift task's cancellation (the other is dropped).
    private final class Waiting: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<Reply, Error>?
        private var answered = false
        private var task: Int?

        /// The data task's identifier, once it is made.
        var identifier: Int? { lock.withLock { task } }

        /// Keeps `continuation` to answer; false (and `continuation` answered) when the Swift
        /// task was cancelled before the data task was made, which then is never made.
        func wait(_ continuation: CheckedContinuation<Reply, Error>) -> Bool {
            let cancelled = lock.withLock {
                if !answered { self.continuation = continuation }
                return answered
            }
            if cancelled { continuation.resume(throwing: CancellationError()) }
            return !cancelled
        }

        func started(_ identifier: Int) { lock.withLock { task = identifier } }

        /// Answers the Swift task with `result`, unless it was answered already.
        func answer(_ result: Result<Reply, Error>) {
            let waiting = lock.withLock { () -> CheckedContinuation<Reply, Error>? in
                defer {
                    answered = true
                    continuation = nil
                }
                return answered ? nil : continuation
            }
            waiting?.resume(with: result)
        }
    }
}
