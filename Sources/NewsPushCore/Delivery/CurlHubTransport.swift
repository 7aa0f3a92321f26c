import Foundation
import NewsPushModel
import NotificationHubs
import Synchronization

/// Hub requests over libcurl: a small pool of reused easy handles, so connections to the hub
/// are kept alive between pushes.
final class CurlHubTransport: HubTransport, Sendable {
    /// Idle handles. A handle is not thread-safe, so each send takes one out and puts it back.
    private let idle = Mutex<[CurlEasyHandleBox]>([])
    private let userAgent: String
    private let timeout: Double

    /// `timeout` bounds a whole request, connection included (`hub.timeout`); a hub that
    /// accepts the connection and then says nothing is given up on after that long, too.
    init(userAgent: String, timeout: Double) {
        self.userAgent = userAgent
        self.timeout = timeout
    }

    func perform(_ request: HubRequest) -> Result<HubResponse, HubTransportError> {
        let box: CurlEasyHandleBox
        do throws(TransferFailure) {
            if let reused = idle.withLock({ $0.popLast() }) { box = reused } else { box = try CurlEasyHandleBox() }
            try box.handle.prepare(
                HTTPTransfer(
                    url: request.url, method: request.method, headers: request.headers, body: request.body,
                    userAgent: userAgent, timeout: timeout, connectTimeout: min(10, timeout), maxBytes: 1 << 20,
                    followRedirects: false, lowSpeedTime: max(1, Int(timeout.rounded(.up)))))
        } catch {
            return .failure(.notSent(error.description))
        }
        defer { idle.withLock { $0.append(box) } }
        let result = box.handle.performBlocking()
        if let failure = result.failure {
            switch failure {
            case .dns, .refused, .tls, .disallowedProtocol:
                return .failure(.notSent(failure.description))
            default:
                return .failure(
                    result.requestSent ? .outcomeUnknown(failure.description) : .notSent(failure.description))
            }
        }
        return .success(
            HubResponse(status: result.status, headers: result.headers, body: result.body, reason: result.reason))
    }
}

/// Carries a libcurl handle between the threads of the send pool. Unchecked because the handle
/// is not thread-safe: only one thread holds it at a time (taken out of the list under its lock).
final class CurlEasyHandleBox: @unchecked Sendable {
    let handle: CurlEasyHandle

    init() throws(TransferFailure) {
        handle = try CurlEasyHandle()
    }
}

/// A document fetched by URL over libcurl (the API's key set): a GET, at most 1 MB, following
/// redirects to https only (a key set is never read over a redirect that drops TLS).
public enum DocumentFetch {
    /// The answer's status, headers (names lower-cased) and body, or why there was none.
    public static func get(_ url: String, timeout: Double) -> Result<
        (status: Int, headers: [String: String], body: Data), TransferFailure
    > {
        let handle: CurlEasyHandle
        do throws(TransferFailure) {
            handle = try CurlEasyHandle()
            var transfer = HTTPTransfer(
                url: url, method: "GET", headers: [("Accept", "application/json")], body: Data(),
                userAgent: "newspush/\(NewsPushVersion.current)", timeout: timeout,
                connectTimeout: min(10, timeout), maxBytes: 1 << 20, followRedirects: true,
                lowSpeedTime: max(1, Int(timeout.rounded(.up))))
            transfer.redirectProtocols = "https"
            try handle.prepare(transfer)
        } catch {
            return .failure(error)
        }
        let result = handle.performBlocking()
        if let failure = result.failure { return .failure(failure) }
        return .success((result.status, result.headers, result.body))
    }
}
