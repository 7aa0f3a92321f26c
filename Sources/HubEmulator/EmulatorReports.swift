import Crypto
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The devices' apps reporting what they did with an alert (SPEC §11): a device with `report:`
/// (or an installation, with `installations_report:`) that was handed a payload carrying an
/// alert id posts `received` or `opened` to `report_to`'s `POST /api/alerts/{alertId}/events`,
/// anonymously, as an app of an anonymous installation does. Which alerts each device reports
/// is drawn from the seed, the device and the alert, so a run replays.
extension HubEmulator {
    func reportEvents(of target: SendTarget) {
        guard let base = registry.reportTo else { return }
        let installation = String(target.device.id.split(separator: "/").first ?? "")
        guard
            let chances = target.device.report
                ?? (installations[installation] != nil ? registry.installationsReport : nil),
            let alert = Self.alertId(in: target.payload), !alert.isEmpty
        else { return }
        let seed = registry.reportSeed
        let event: String
        if Self.draw(seed, installation, alert, "opened") < chances.opened {
            event = "opened"
        } else if Self.draw(seed, installation, alert, "received") < chances.received {
            event = "received"
        } else {
            return
        }
        guard
            let url = URL(string: base.hasSuffix("/") ? String(base.dropLast()) : base)?
                .appendingPathComponent("api/alerts").appendingPathComponent(alert).appendingPathComponent("events")
        else { return }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try? JSONSerialization.data(withJSONObject: ["installationId": installation, "event": event])
        startedWork()
        Task { [weak self] in
            _ = try? await URLSession.shared.data(for: request)
            await self?.finishedWork()
        }
    }

    /// The alert id where each platform's app finds it: the top of an APNs body, an FCM v1
    /// message's data, a WNS toast's launch argument.
    static func alertId(in payload: String) -> String? {
        if payload.hasPrefix("<") {
            guard let start = payload.range(of: "launch=\"") else { return nil }
            return payload[start.upperBound...].split(separator: "\"", maxSplits: 1).first.map(String.init)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else {
            return nil
        }
        if let message = object["message"] as? [String: Any] {
            return (message["data"] as? [String: Any])?["alertId"] as? String
        }
        return object["alertId"] as? String
    }

    /// Where the devices' apps report (`PUT /_emulator/report-to` does the same over HTTP).
    public func reportTo(_ url: String?) { registry.reportTo = url }

    /// A share from 0 to 1 drawn from the seed, the installation, the alert and the kind: the
    /// app reports the kind when it is below the device's chance.
    public static func draw(_ seed: UInt64, _ installation: String, _ alert: String, _ kind: String) -> Double {
        let digest = SHA256.hash(data: Data("\(seed)\u{0}\(installation)\u{0}\(alert)\u{0}\(kind)".utf8))
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Double(value >> 11) / Double(1 << 53)
    }
}
