import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The request context of the emulator's server: keeps the channel so a fault can drop the
/// connection without answering.
public struct EmulatorContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel

    /// The context of one request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The largest request body taken (the service's limit is far smaller).
    public var maxUploadSize: Int { 1 << 20 }
}

/// Serves a `HubEmulator` over HTTP on 127.0.0.1.
public enum EmulatorServer {
    /// Runs until the task is cancelled; `onReady` receives the bound port.
    public static func run(
        _ emulator: HubEmulator, port: Int, logger: Logger,
        onReady: @escaping @Sendable (Int) async -> Void
    ) async throws {
        try await application(emulator, port: port, logger: logger, onReady: onReady).run()
    }

    /// The server as a service, to run in a service group (which can shut it down gracefully);
    /// `onReady` receives the bound port.
    public static func application(
        _ emulator: HubEmulator, port: Int, logger: Logger,
        onReady: @escaping @Sendable (Int) async -> Void
    ) -> some ApplicationProtocol {
        let responder = CallbackResponder<EmulatorContext> { request, context in
            // Counted as running until answered, so `settle()` waits for it.
            await emulator.startedWork()
            do {
                let response = try await answer(request, context: context, emulator: emulator)
                await emulator.finishedWork()
                return response
            } catch {
                await emulator.finishedWork()
                throw error
            }
        }
        return Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port), serverName: nil),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                await emulator.listening(on: bound)
                await onReady(bound)
            },
            logger: logger)
    }

    /// One request: its fault's delay waited on the emulator's clock, then the emulator's answer.
    static func answer(_ request: Request, context: EmulatorContext, emulator: HubEmulator) async throws -> Response {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        // Read at most a little over the service's 64 KB limit: enough to answer 413.
        let buffer = try await request.body.collect(upTo: 1 << 20)
        let (path, query) = EmulatorRequest.splitURI(request.uri.description)
        let received = EmulatorRequest(
            method: request.method.rawValue, path: path, query: query, headers: headers,
            body: Data(buffer.readableBytesView))
        let fault = await emulator.nextFault(for: received)
        // A delay before delivery: a client that gives up first leaves nothing delivered.
        if let delay = fault?.delaySeconds, fault?.delayAfterDelivery != true {
            await emulator.sleep(seconds: delay)
            try Task.checkCancellation()
        }
        let answer = await emulator.handle(received, fault: fault)
        if answer.delay > 0 { await emulator.sleep(seconds: answer.delay) }
        if answer.drop {
            try await context.channel.close()
            throw CancellationError()
        }
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}
