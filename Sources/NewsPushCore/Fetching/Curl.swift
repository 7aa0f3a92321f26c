internal import CCurl
import Foundation
import NewsPushModel

// The only file that talks to libcurl. Everything else sees `HTTPTransfer` values.

/// One HTTP request for libcurl to carry.
struct HTTPTransfer: Sendable {
    var url: String
    var method: String = "GET"
    var headers: [(name: String, value: String)] = []
    var body: Data? = nil
    var userAgent: String
    /// Whole-transfer limit in seconds; connecting has its own, shorter limit.
    var timeout: Double
    var connectTimeout: Double
    /// Most bytes accepted after decompression; more aborts the transfer.
    var maxBytes: Int
    var followRedirects: Bool = true
    /// The schemes a redirect may lead to.
    var redirectProtocols = "http,https"
    /// Abort when slower than 1 byte/s for this many seconds (slowloris); default: half the
    /// timeout, at most 10 s.
    var lowSpeedTime: Int?
    /// Connect only to public addresses (`NetworkAddress.isPublic`), judged on the address
    /// libcurl is about to use, after its DNS lookup (so a name that resolves to a private
    /// address now and then is refused each time).
    var publicAddressesOnly = false
}

/// How a transfer that got no usable response failed.
public enum TransferFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case dns(String)
    case refused(String)
    case timeout(String)
    case tls(String)
    case tooLarge(limit: Int)
    case disallowedProtocol(String)
    case tooManyRedirects
    /// The host's address is loopback, private or link-local, and the transfer was for public
    /// addresses only.
    case privateAddress(String)
    case connection(String)
    /// libcurl could not be set up for the transfer (out of memory, or an option this libcurl
    /// lacks).
    case setup(String)

    /// What failed, in libcurl's words where it had any.
    public var description: String {
        switch self {
        case .dns(let detail): return "DNS lookup failed: \(detail)"
        case .refused(let detail): return "connection refused: \(detail)"
        case .timeout(let detail): return "timed out: \(detail)"
        case .tls(let detail): return "TLS error: \(detail)"
        case .tooLarge(let limit): return "response larger than \(limit) bytes"
        case .disallowedProtocol(let detail): return "only http and https are allowed: \(detail)"
        case .tooManyRedirects: return "more than 5 redirects"
        case .privateAddress(let address): return "\(address) is a loopback, private or link-local address"
        case .connection(let detail): return "connection error: \(detail)"
        case .setup(let detail): return "libcurl could not be set up: \(detail)"
        }
    }
}

/// What came back for one transfer.
struct HTTPTransferResult: Sendable {
    var status: Int = 0
    /// The final response's reason phrase (the service puts error codes there: `40103: Invalid
    /// authorization token signature`).
    var reason = ""
    /// Headers of the final response, names lower-cased.
    var headers: [String: String] = [:]
    var body = Data()
    var effectiveURL: String
    /// Status and Location of each redirect followed, in order.
    var redirects: [(status: Int, location: String)] = []
    var failure: TransferFailure?
    /// Whether any request bytes went out (decides whether a failed POST may have been received).
    var requestSent = false
}

private let curlGlobalInit: Void = {
    curl_global_init(Int(CURL_GLOBAL_DEFAULT))
}()

/// One libcurl easy handle with its buffers. Reusable: its connection is kept alive between
/// transfers. Not thread-safe; one transfer at a time.
final class CurlEasyHandle {
    fileprivate let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    fileprivate var result: HTTPTransferResult
    private var maxBytes = Int.max
    private var pendingStatus = 0
    private var pendingHeaders: [String: String] = [:]
    private var pendingReason = ""
    private var publicOnly = false
    private var refusedAddress: String?
    // libcurl writes error text here during a transfer, so it must have a stable address.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    init() throws(TransferFailure) {
        _ = curlGlobalInit
        guard let h = curl_easy_init() else { throw .setup("curl_easy_init failed: out of memory") }
        handle = h
        result = HTTPTransferResult(effectiveURL: "")
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
        if let headerList { curl_slist_free_all(headerList) }
    }

    /// Sets the handle up for `transfer`, leaving the connection cache intact.
    func prepare(_ transfer: HTTPTransfer) throws(TransferFailure) {
        curl_easy_reset(handle)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        result = HTTPTransferResult(effectiveURL: transfer.url)
        maxBytes = transfer.maxBytes
        publicOnly = transfer.publicAddressesOnly
        refusedAddress = nil
        pendingStatus = 0
        pendingHeaders = [:]
        try setOptions(transfer)
        try setRequest(transfer)
        try setCallbacks()
    }

    /// Where to, how long, what is allowed and what is offered.
    private func setOptions(_ transfer: HTTPTransfer) throws(TransferFailure) {
        try check(np_easy_setopt_string(handle, CURLOPT_URL, transfer.url))
        try check(np_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        try check(np_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        try check(np_easy_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, transfer.redirectProtocols))
        try check(np_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, transfer.followRedirects ? 1 : 0))
        try check(np_easy_setopt_long(handle, CURLOPT_MAXREDIRS, 5))
        try check(np_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(transfer.timeout * 1000)))
        try check(
            np_easy_setopt_long(
                handle, CURLOPT_CONNECTTIMEOUT_MS, Int(min(transfer.timeout, transfer.connectTimeout) * 1000)))
        try check(np_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1))
        let lowSpeedTime = transfer.lowSpeedTime ?? max(1, min(10, Int(transfer.timeout / 2)))
        try check(np_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, lowSpeedTime))
        try check(np_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        try check(np_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        // Empty string: offer every encoding this libcurl can decode (gzip, deflate, br).
        try check(np_easy_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, ""))
        try check(np_easy_setopt_string(handle, CURLOPT_USERAGENT, transfer.userAgent))
        errorBuffer[0] = 0
        try check(np_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        if transfer.maxBytes < Int.max {
            try check(np_easy_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(transfer.maxBytes)))
        }
    }

    /// The method, headers and body.
    private func setRequest(_ transfer: HTTPTransfer) throws(TransferFailure) {
        for (name, value) in transfer.headers {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        // A body goes as POST fields, under the request's own method (PUT, PATCH) when not POST.
        let sendsBody = ["POST", "PUT", "PATCH"].contains(transfer.method)
        // libcurl would add "Expect: 100-continue" to larger bodies, costing a round trip.
        if sendsBody { headerList = curl_slist_append(headerList, "Expect:") }
        if let headerList { try check(np_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList)) }
        if sendsBody {
            let body = transfer.body ?? Data()
            try check(np_easy_setopt_long(handle, CURLOPT_POST, 1))
            try check(np_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // COPYPOSTFIELDS copies, so the bytes need not outlive this call.
            let code = body.withUnsafeBytes { raw -> CURLcode in
                guard let base = raw.baseAddress else {
                    return np_easy_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, "")
                }
                return np_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: base))
            }
            try check(code)
            if transfer.method != "POST" {
                try check(np_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, transfer.method))
            }
        } else if transfer.method != "GET" {
            try check(np_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, transfer.method))
        }
    }

    /// The body and header callbacks, which find this object through their user data.
    private func setCallbacks() throws(TransferFailure) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(np_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, me))
        try check(
            np_easy_setopt_write_function(handle, CURLOPT_WRITEFUNCTION) { data, size, count, userdata in
                guard let userdata, let data else { return 0 }
                let easy = Unmanaged<CurlEasyHandle>.fromOpaque(userdata).takeUnretainedValue()
                let length = size * count
                if easy.result.body.count + length > easy.maxBytes {
                    easy.result.failure = .tooLarge(limit: easy.maxBytes)
                    return 0
                }
                data.withMemoryRebound(to: UInt8.self, capacity: length) { easy.result.body.append($0, count: length) }
                return length
            })
        try check(np_easy_setopt_pointer(handle, CURLOPT_PREREQDATA, me))
        try check(
            np_easy_setopt_prereq_function(handle, CURLOPT_PREREQFUNCTION) { userdata, address, _, _, _ in
                guard let userdata else { return 1 }
                let easy = Unmanaged<CurlEasyHandle>.fromOpaque(userdata).takeUnretainedValue()
                guard easy.publicOnly else { return 0 }
                let ip = address.map { String(cString: $0) } ?? ""
                guard NetworkAddress.isPublic(ip) else {
                    easy.refusedAddress = ip
                    return 1
                }
                return 0
            })
        try check(np_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, me))
        try check(
            np_easy_setopt_write_function(handle, CURLOPT_HEADERFUNCTION) { data, size, count, userdata in
                guard let userdata, let data else { return 0 }
                let easy = Unmanaged<CurlEasyHandle>.fromOpaque(userdata).takeUnretainedValue()
                let length = size * count
                let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
                }
                easy.receivedHeaderLine(line)
                return length
            })
    }

    private func receivedHeaderLine(_ raw: String) {
        let line = Self.trimmed(raw)
        if line.hasPrefix("HTTP/") {
            // A new response begins (after a redirect or a 100 Continue).
            if (300..<400).contains(pendingStatus), let location = pendingHeaders["location"] {
                let base = result.redirects.last.map { URL(string: $0.location) } ?? URL(string: result.effectiveURL)
                let absolute = URL(string: location, relativeTo: base ?? nil)?.absoluteString ?? location
                result.redirects.append((pendingStatus, absolute))
            }
            let parts = line.split(separator: " ", maxSplits: 2)
            pendingStatus = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            pendingReason = parts.count > 2 ? String(parts[2].prefix(512)) : ""
            pendingHeaders = [:]
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = Self.trimmed(line[line.index(after: colon)...])
            // `Link` is a list header a server may repeat (WebSub's hub and self often come as
            // two): the values are joined, as HTTP allows for list headers.
            pendingHeaders[name] = name == "link" ? pendingHeaders[name].map { "\($0), \(value)" } ?? value : value
        } else if line.isEmpty {
            result.headers = pendingHeaders
            result.reason = pendingReason
        }
    }

    /// `text` without the spaces, tabs and line ends around it (Foundation's character-set trim
    /// was a twentieth of a hub write's time in `newspush api`).
    static func trimmed(_ text: some StringProtocol) -> String {
        let blank: (UInt8) -> Bool = { $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }
        let bytes = Array(text.utf8)
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    /// Reads the outcome after libcurl finished with `code`.
    fileprivate func finish(_ code: CURLcode) {
        var status = 0
        np_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        result.status = status
        var url: UnsafeMutablePointer<CChar>?
        if np_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK, let url {
            result.effectiveURL = String(cString: url)
        }
        var requestSize = 0
        np_easy_getinfo_long(handle, CURLINFO_REQUEST_SIZE, &requestSize)
        result.requestSent = requestSize > 0
        if code == CURLE_OK { return }
        if result.failure != nil { return }  // set by a callback (too large)
        if let refusedAddress {
            result.failure = .privateAddress(refusedAddress)
            return
        }
        let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            result.failure = .dns(detail)
        case CURLE_COULDNT_CONNECT:
            result.failure = .refused(detail)
        case CURLE_OPERATION_TIMEDOUT:
            result.failure = .timeout(detail)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE:
            result.failure = .tls(detail)
        case CURLE_FILESIZE_EXCEEDED:
            result.failure = .tooLarge(limit: maxBytes)
        case CURLE_UNSUPPORTED_PROTOCOL:
            result.failure = .disallowedProtocol(detail)
        case CURLE_TOO_MANY_REDIRECTS:
            result.failure = .tooManyRedirects
        default:
            result.failure = .connection(detail)
        }
    }

    /// Runs the prepared transfer on this thread.
    func performBlocking() -> HTTPTransferResult {
        finish(curl_easy_perform(handle))
        return result
    }

    /// Setting an option fails only for an old libcurl or a lack of memory: the transfer fails
    /// and says why.
    private func check(_ code: CURLcode, line: Int = #line) throws(TransferFailure) {
        if code != CURLE_OK {
            throw .setup("curl_easy_setopt failed at Curl.swift:\(line): \(String(cString: curl_easy_strerror(code)))")
        }
    }
}

/// What the caller of a multi run decides while it runs, asked on the fetching thread: whether a
/// new transfer may start (its buffer has room), and whether to stop.
public struct FetchGate: Sendable {
    let mayStart: @Sendable () -> Bool
    let stopped: @Sendable () -> Bool

    /// A gate asking `mayStart` before each transfer and `stopped` as the transfers run.
    public init(mayStart: @escaping @Sendable () -> Bool, stopped: @escaping @Sendable () -> Bool) {
        self.mayStart = mayStart
        self.stopped = stopped
    }

    /// Every transfer starts as soon as the limits allow; nothing stops the run.
    public static let open = FetchGate(mayStart: { true }, stopped: { false })
}

/// Runs many transfers at once with libcurl's multi interface: at most `concurrency` in flight,
/// at most `perHost` to any one host, results in the order of the requests.
final class CurlMultiRunner {
    private let multi: UnsafeMutableRawPointer
    let concurrency: Int
    let perHost: Int

    init(concurrency: Int, perHost: Int) throws(TransferFailure) {
        _ = curlGlobalInit
        guard let m = curl_multi_init() else { throw .setup("curl_multi_init failed: out of memory") }
        multi = m
        self.concurrency = max(1, concurrency)
        self.perHost = max(1, perHost)
        np_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, self.perHost)
        np_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, self.concurrency)
    }

    deinit { curl_multi_cleanup(multi) }

    /// Performs every transfer, handing each result to `deliver` (with the transfer's index) as
    /// soon as it is done, on the caller's thread: nothing is kept here, so what a caller keeps
    /// of each result is all that stays in memory. A transfer starts only while `gate` allows
    /// (transfers in flight always run to their end, so a closed gate never times one out); once
    /// the gate says stop, the transfers in flight are abandoned and the rest never start.
    func run(_ transfers: [HTTPTransfer], gate: FetchGate = .open, deliver: (Int, HTTPTransferResult) -> Void) {
        var waiting = Array(transfers.indices)
        var active: [UnsafeMutableRawPointer: (index: Int, host: String, easy: CurlEasyHandle)] = [:]
        var perHostActive: [String: Int] = [:]
        var idle: [CurlEasyHandle] = []

        func admit() {
            var i = 0
            while active.count < concurrency && i < waiting.count && gate.mayStart() {
                let index = waiting[i]
                let host = Self.hostKey(transfers[index].url)
                if perHostActive[host, default: 0] >= perHost {
                    i += 1
                    continue
                }
                waiting.remove(at: i)
                let easy: CurlEasyHandle
                do throws(TransferFailure) {
                    if let reused = idle.popLast() { easy = reused } else { easy = try CurlEasyHandle() }
                    try easy.prepare(transfers[index])
                } catch {
                    deliver(index, HTTPTransferResult(effectiveURL: transfers[index].url, failure: error))
                    continue
                }
                active[easy.handle] = (index, host, easy)
                perHostActive[host, default: 0] += 1
                curl_multi_add_handle(multi, easy.handle)
            }
        }

        admit()
        while !active.isEmpty || !waiting.isEmpty {
            if gate.stopped() {
                for handle in active.keys { curl_multi_remove_handle(multi, handle) }
                return
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let h = message.pointee.easy_handle,
                    let entry = active.removeValue(forKey: h)
                else { continue }
                let code = np_multi_msg_result(message)
                curl_multi_remove_handle(multi, h)
                entry.easy.finish(code)
                let result = entry.easy.result
                entry.easy.result = HTTPTransferResult(effectiveURL: "")
                perHostActive[entry.host, default: 1] -= 1
                idle.append(entry.easy)
                deliver(entry.index, result)
            }
            admit()
            // Woken by any transfer's activity; a short wait while the gate holds transfers back;
            // none once everything is done.
            if !active.isEmpty || !waiting.isEmpty {
                curl_multi_poll(multi, nil, 0, waiting.isEmpty ? 100 : 20, nil)
            }
        }
    }

    /// Scheme, host and port: what "per host" means for the limit.
    static func hostKey(_ url: String) -> String {
        guard let components = URLComponents(string: url) else { return url }
        return "\(components.scheme ?? "")://\(components.host?.lowercased() ?? ""):\(components.port ?? 0)"
    }
}
