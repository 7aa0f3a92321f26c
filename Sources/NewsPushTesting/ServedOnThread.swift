import Logging
import ServiceLifecycle

/// A service (a Hummingbird application) running on a `ServerThread` of its own until `stop()`.
///
/// It stops by graceful shutdown, never by cancelling its task: cancelling a NIO server while an
/// accepted connection waits in its queue drops that connection unserved, and NIO traps
/// ("Deinited NIOAsyncWriter without calling finish()", apple/swift-nio#3481), killing the whole
/// test process. A graceful shutdown closes the listening socket first and serves what it had
/// accepted; a request still running after `patience` is cancelled then, when nothing is queued.
final class ServedOnThread: Sendable {
    private let group: ServiceGroup

    /// Starts `service` on a thread named `name`.
    init(_ service: some Service, name: String, logger: Logger, patience: Duration = .seconds(10)) {
        var configuration = ServiceGroupConfiguration(services: [service], logger: logger)
        configuration.maximumGracefulShutdownDuration = patience
        group = ServiceGroup(configuration: configuration)
        _ = ServerThread(name: name).run { [group] in try await group.run() }
    }

    /// Begins the graceful shutdown and returns at once.
    func stop() {
        Task { [group] in await group.triggerGracefulShutdown() }
    }

    deinit { stop() }
}
