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
    private let served: ServedOnThread

    /// `http://127.0.0.1:<port>/`
    public var endpoint: String { "http://127.0.0.1:\(port)/" }

    private init(emulator: HubEmulator, port: Int, served: ServedOnThread) {
        self.emulator = emulator
        self.port = port
        self.served = served
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
        let app = EmulatorServer.application(emulator, port: 0, logger: logger) { port in continuation.yield(port) }
        let served = ServedOnThread(app, name: "test-hub", logger: logger)
        var port = 0
        for await bound in stream {
            port = bound
            break
        }
        return LocalHub(emulator: emulator, port: port, served: served)
    }

    /// Stops the server: it closes its port and finishes what it is answering.
    public func stop() { served.stop() }
}
