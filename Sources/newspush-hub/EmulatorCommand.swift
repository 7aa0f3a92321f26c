import ArgumentParser
import Foundation
import HubEmulator
import Logging
import NIOCore
import NotificationHubs

@main
struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "newspush-hub",
        abstract: "A local Azure Notification Hubs emulator for newspush's tests and demos.",
        version: "0.1.0",
        subcommands: [Serve.self, ShowDeliveries.self],
        defaultSubcommand: Serve.self)
}

/// `newspush-hub [serve] --port P --devices FILE …`: the emulator itself.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract:
            "A local Azure Notification Hubs emulator: verifies SAS tokens, delivers sends to virtual devices and "
            + "logs each delivery.",
        discussion: """
            Listens on 127.0.0.1. Sends: POST /{hub}/messages/?api-version=2020-06 as the service \
            takes them (template, apple, fcmv1; &test). Control: POST /_emulator/faults with \
            {"status":503,"count":2,"retry_after":"1"}, {"delay_seconds":2} (before delivery; add \
            "delay_after_delivery":true for after) or {"drop":true}; count defaults to 1. \
            DELETE /_emulator/faults; GET /_emulator/deliveries.
            """)

    @Option(help: "Port to listen on (0: pick a free one and print it).")
    var port: Int = 9090

    @Option(help: "YAML file of virtual devices.")
    var devices: String

    @Option(help: "Connection string whose key signs accepted requests (default: $NEWSPUSH_HUB_CONNECTION_STRING).")
    var connectionString: String?

    @Option(help: "Append one JSON line per delivery to this file.")
    var log: String?

    func run() async throws {
        guard let text = connectionString ?? ProcessInfo.processInfo.environment["NEWSPUSH_HUB_CONNECTION_STRING"]
        else {
            throw ValidationError("give --connection-string or set NEWSPUSH_HUB_CONNECTION_STRING")
        }
        let connection: HubConnectionString
        do { connection = try HubConnectionString(parsing: text) } catch { throw ValidationError(error.description) }
        let registry: DeviceRegistry
        do { registry = try DeviceRegistry.load(path: devices) } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(78)
        }
        let emulator = try HubEmulator(connection: connection, registry: registry, logPath: log)
        var logger = Logger(label: "newspush-hub")
        logger.logLevel = .warning
        let deviceCount = registry.devices.count
        do {
            try await EmulatorServer.run(emulator, port: port, logger: logger) { bound in
                // Written straight to the descriptor: scripts wait for this line to learn the port.
                FileHandle.standardOutput.write(
                    Data("newspush-hub listening on http://127.0.0.1:\(bound)/ (\(deviceCount) virtual devices)\n".utf8)
                )
            }
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            FileHandle.standardError.write(
                Data(
                    ("newspush-hub: port \(port) on 127.0.0.1 is already in use; give another with --port (0 picks a "
                        + "free one)\n").utf8))
            throw ExitCode(1)
        }
    }
}

/// `newspush-hub deliveries LOG`: what each virtual device received, from a delivery log.
struct ShowDeliveries: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deliveries",
        abstract: "Print what each virtual device received, from the JSON Lines log of --log.")

    @Argument(help: "The delivery log.", completion: .file()) var log: String

    func run() throws {
        guard let data = FileManager.default.contents(atPath: log) else {
            FileHandle.standardError.write(Data("newspush-hub: cannot read \(log)\n".utf8))
            throw ExitCode(1)
        }
        let deliveries = data.split(separator: 0x0A).compactMap {
            try? JSONDecoder().decode(Delivery.self, from: Data($0))
        }
        let byDevice = Dictionary(grouping: deliveries, by: \.device)
        if byDevice.isEmpty { print("no device received anything") }
        for (device, received) in byDevice.sorted(by: { $0.key < $1.key }) {
            print(
                "\(device) (\(received[0].platform); tags \(received[0].tags.joined(separator: ", "))): "
                    + "\(received.count) notification\(received.count == 1 ? "" : "s")"
            )
            for delivery in received { print("  \(delivery.payload)") }
        }
    }
}
