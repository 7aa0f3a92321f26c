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

    /// A form POSTed to `url` (a WebSub hub's subscription request): its status and body, or
    /// why there was none. `publicAddressesOnly`: refused (`.privateAddress`) when the host is
    /// at a loopback, private or link-local address.
    public static func postForm(
        _ url: String, fields: [(String, String)], userAgent: String, timeout: Double,
        publicAddressesOnly: Bool = false
    ) -> Result<(status: Int, body: Data), TransferFailure> {
        post(
            url, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Data(formEncoded(fields).utf8),
            userAgent: userAgent, timeout: timeout, publicAddressesOnly: publicAddressesOnly)
    }

    /// A POST to `url` (redirects not followed: a hub or a listener answers where it is asked);
    /// an answer of at most 64 KB.
    public static func post(
        _ url: String, headers: [(name: String, value: String)], body: Data, userAgent: String, timeout: Double,
        publicAddressesOnly: Bool = false
    ) -> Result<(status: Int, body: Data), TransferFailure> {
        let handle: CurlEasyHandle
        do throws(TransferFailure) {
            handle = try CurlEasyHandle()
            var transfer = HTTPTransfer(
                url: url, method: "POST", headers: headers, body: body, userAgent: userAgent, timeout: timeout,
                connectTimeout: min(10, timeout), maxBytes: 1 << 16, followRedirects: false,
                lowSpeedTime: max(1, Int(timeout.rounded(.up))))
            transfer.publicAddressesOnly = publicAddressesOnly
            try handle.prepare(transfer)
        } catch {
            return .failure(error)
        }
        let result = handle.performBlocking()
        if let failure = result.failure { return .failure(failure) }
        return .success((result.status, result.body))
    }

    /// `application/x-www-form-urlencoded`: every byte but the unreserved ones escaped.
    static func formEncoded(_ fields: [(String, String)]) -> String {
        var unreserved = CharacterSet.alphanumerics.intersection(
            CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        unreserved.insert(charactersIn: "-._~")
        func escaped(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "" }
        return fields.map { "\(escaped($0.0))=\(escaped($0.1))" }.joined(separator: "&")
    }
}
