import Crypto
import Foundation
import NotificationHubs

/// The control API for tests and demos: `POST /_emulator/faults` queues a fault,
/// `DELETE /_emulator/faults` clears them, `GET /_emulator/deliveries` lists every delivery,
/// `GET|POST /_emulator/clock` reads or moves on the emulator's clock, `GET /_emulator/requests`
/// counts the requests come in by format (`installation` for the installations API),
/// `PUT /_emulator/report-to` sets where the devices' apps report events (`newspush api`).
extension HubEmulator {
    func control(_ request: EmulatorRequest) -> EmulatorResponse {
        switch (request.method, request.path) {
        case ("POST", "/_emulator/faults"):
            guard let fault = try? JSONDecoder().decode(Fault.self, from: request.body) else {
                return EmulatorResponse(
                    status: 400, headers: [],
                    body: Data(
                        ("expected {\"status\":503,\"count\":1,\"retry_after\":\"1\",\"delay_seconds\":0.5,"
                            + "\"drop\":true}").utf8))
            }
            inject(fault)
            return EmulatorResponse(status: 204, headers: [], body: Data())
        case ("DELETE", "/_emulator/faults"):
            faults.removeAll()
            return EmulatorResponse(status: 204, headers: [], body: Data())
        case ("GET", "/_emulator/deliveries"):
            let data = (try? encoder.encode(deliveries)) ?? Data("[]".utf8)
            return EmulatorResponse(status: 200, headers: [("Content-Type", "application/json")], body: data)
        case ("GET", "/_emulator/clock"), ("POST", "/_emulator/clock"):
            return clockControl(request)
        case ("GET", "/_emulator/requests"):
            let data = (try? encoder.encode(requestCounts)) ?? Data("{}".utf8)
            return EmulatorResponse(status: 200, headers: [("Content-Type", "application/json")], body: data)
        case ("PUT", "/_emulator/report-to"):
            let url = String(decoding: request.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                return EmulatorResponse(status: 400, headers: [], body: Data("expected newspush api's base URL".utf8))
            }
            registry.reportTo = url
            return EmulatorResponse(status: 204, headers: [], body: Data())
        case ("GET", "/_emulator/health"):
            return EmulatorResponse(status: 200, headers: [], body: Data("ok".utf8))
        default:
            return EmulatorResponse(status: 404, headers: [], body: Data())
        }
    }
}
