import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// A request as a local test server received it.
public struct RecordedRequest: Sendable {
    /// The request's method.
    public var method: String
    /// Path and query, e.g. `/breaking-news/messages/?api-version=2020-06`.
    public var uri: String
    /// The request's headers, as sent.
    public var headers: [(name: String, value: String)]
    /// The request's body.
    public var body: Data

    /// The first value of a header, matched without regard to case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// What a local test server answers.
public struct CannedResponse: Sendable {
    /// The status to answer with.
    public var status: Int
    /// The headers to answer with.
    public var headers: [(name: String, value: String)]
    /// The body to answer with.
    public var body: Data
    /// Wait this long before answering (slow servers).
    public var delay: Double

    /// An answer with `status`, `headers` and `body`.
    public init(
        status: Int = 200, headers: [(name: String, value: String)] = [], body: Data = Data(), delay: Double = 0
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
    }

    /// An answer with a text body.
    public init(status: Int = 200, headers: [(name: String, value: String)] = [], text: String) {
        self.init(status: status, headers: headers, body: Data(text.utf8))
    }
}

/// A real HTTP server on 127.0.0.1 (a port the system picks) for tests: answers with a handler
/// and records every request.
public final class LocalHTTPServer: Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let served: ServedOnThread
    private let log: RequestLog

    /// `http://127.0.0.1:<port>`
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    private actor RequestLog {
        var requests: [RecordedRequest] = []
        func append(_ request: RecordedRequest) { requests.append(request) }
    }

    private actor PortBox {
        var port: Int?
        var waiters: [CheckedContinuation<Int, Never>] = []
        func set(_ value: Int) {
            port = value
            for waiter in waiters { waiter.resume(returning: value) }
            waiters = []
        }
        func get() async -> Int {
            if let port { return port }
            return await withCheckedContinuation { waiters.append($0) }
        }
    }

    private init(port: Int, served: ServedOnThread, log: RequestLog) {
        self.port = port
        self.served = served
        self.log = log
    }

    /// Starts a server answering every request with `handler`.
    public static func start(_ handler: @escaping @Sendable (RecordedRequest) async -> CannedResponse) async throws
        -> LocalHTTPServer
    {
        let log = RequestLog()
        let box = PortBox()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            var headers: [(name: String, value: String)] = []
            for field in request.headers { headers.append((field.name.rawName, field.value)) }
            let buffer = try await request.body.collect(upTo: 64 << 20)
            let recorded = RecordedRequest(
                method: request.method.rawValue, uri: request.uri.description, headers: headers,
                body: Data(buffer.readableBytesView))
            await log.append(recorded)
            let canned = await handler(recorded)
            if canned.delay > 0 { try await Task.sleep(nanoseconds: UInt64(canned.delay * 1e9)) }
            var fields = HTTPFields()
            for (name, value) in canned.headers {
                if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
            }
            return Response(
                status: HTTPResponse.Status(code: canned.status), headers: fields,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: canned.body)))
        }
        var logger = Logger(label: "test-server")
        logger.logLevel = .critical
        let app = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in await box.set(channel.localAddress?.port ?? 0) },
            logger: logger)
        let served = ServedOnThread(app, name: "test-http", logger: logger)
        let port = await box.get()
        return LocalHTTPServer(port: port, served: served, log: log)
    }

    /// Serves fixed documents by path (404 for anything else).
    public static func serving(_ documents: [String: CannedResponse]) async throws -> LocalHTTPServer {
        try await start { request in
            let path = String(request.uri.split(separator: "?", maxSplits: 1).first ?? "")
            return documents[path] ?? CannedResponse(status: 404, text: "not found")
        }
    }

    /// Every request received so far, in order.
    public func requests() async -> [RecordedRequest] {
        await log.requests
    }

    /// Stops the server: it closes its port and finishes what it is answering.
    public func stop() { served.stop() }
}
