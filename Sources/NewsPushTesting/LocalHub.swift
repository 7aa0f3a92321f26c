import Foundation
import HubEmulator
import Logging
import NotificationHubs

/// The hub emulator running in process on 127.0.0.1 (a port the system picks), for tests.
public final class LocalHub: Sendable {
    /// The emulator behind the server (its deliveries, faults and notifications).
    public let emulator: HubEmulator
    /// The port the emulator listens on.
    public let port: Int
    private let task: Task<Void, any Error>

    /// `http://127.0.0.1:<port>/`
    public var endpoint: String { "http://127.0.0.1:\(port)/" }

    private init(emulator: HubEmulator, port: Int, task: Task<Void, any Error>) {
        self.emulator = emulator
        self.port = port
        self.task = task
    }

    /// Starts an emulator whose namespace key is that of `connectionString`, with the devices
    /// of `devicesYAML` and an optional JSON Lines delivery log.
    public static func start(
        devicesYAML: String, connectionString: String = testConnectionString,
        logPath: String? = nil
    ) async throws -> LocalHub {
        let emulator = try HubEmulator(
            connection: try HubConnectionString(parsing: connectionString),
            registry: try DeviceRegistry.parse(devicesYAML, file: "devices.yaml"), logPath: logPath)
        let logger = {
            var logger = Logger(label: "test-hub")
            logger.logLevel = .critical
            return logger
        }()
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        let task = ServerThread(name: "test-hub").run {
            try await EmulatorServer.run(emulator, port: 0, logger: logger) { port in continuation.yield(port) }
        }
        var port = 0
        for await bound in stream {
            port = bound
            break
        }
        return LocalHub(emulator: emulator, port: port, task: task)
    }

    /// Stops the server.
    public func stop() { task.cancel() }

    deinit { task.cancel() }
}
