import Foundation
import NewsPushCore
import NewsPushModel
import NotificationHubs

/// `check --hub`, the go-live check: one test send (the hub's test flag: at most 10 devices,
/// nothing recorded) per format the config sends, and what the answers say a newsroom must fix,
/// one line each. It passes only when every format reached a device.
struct GoLiveCheck {
    let config: NewsPushConfig
    let client: NotificationHubClient

    /// Legacy FCM, turned off by Google on 2024-06-20: its devices receive nothing.
    static let legacyPlatforms: Set<String> = ["gcm", "fcm"]

    /// The formats the config sends, each with the first category that sends it.
    var formats: [(format: PushFormat, category: NewsCategory)] {
        var seen: [PushFormat: NewsCategory] = [:]
        for category in NewsCategory.allCases where seen[config.settings(for: category).format] == nil {
            seen[config.settings(for: category).format] = category
        }
        return seen.map { ($0.key, $0.value) }.sorted { $0.format.rawValue < $1.format.rawValue }
    }

    /// Every line of the check, in the formats' order; a hub-wide refusal (key, name, reach)
    /// ends it after its one line.
    func run(now: Date) -> [ConfigCheck] {
        var checks: [ConfigCheck] = []
        var tierSaid = false
        for (format, category) in formats {
            let name = "hub \(format.rawValue)"
            let settings = config.settings(for: category)
            let request: HubRequest
            do {
                request = try PushRequests.request(
                    format: format, tags: settings.tags, properties: Self.properties(category, settings: settings),
                    expiresAfter: 300, deliveredAt: now, client: client, test: true, now: SessionClock.signingTime())
            } catch {
                checks.append(ConfigCheck(check: name, severity: .config, detail: error.description))
                continue
            }
            let answer = client.send(request)
            if answer.concernsHub {
                checks.append(ConfigCheck(check: "hub", severity: .hub, detail: answer.failureReason ?? "hub failure"))
                return checks
            }
            guard case .accepted(_, let id, _, let body) = answer else {
                checks.append(ConfigCheck(check: name, severity: .hub, detail: Self.refusal(answer, format: format)))
                continue
            }
            if id == nil, !tierSaid {
                tierSaid = true
                checks.append(
                    ConfigCheck(
                        check: "hub tier", severity: .warning,
                        detail: "the hub answered without a Location: it is not on the Standard tier, so sends get "
                            + "no notification id (no hub status, no delivery view on the desk, no hub cancel) and "
                            + "publish --at is refused"))
            }
            checks += Self.reach(TestSendOutcome(xml: body), check: name, format: format, tags: settings.tags)
        }
        return checks
    }

    /// What a test push of `category` carries.
    static func properties(_ category: NewsCategory, settings: CategorySettings) -> [String: String] {
        let content = PushContent(
            category: category, title: "newspush go-live check (\(settings.format.rawValue))",
            url: "https://example.org/newspush-check", source: "newspush", id: "newspush-check")
        return PushRequests.properties(content, settings: settings)
    }

    /// A refusal of the test push, worded for what to configure.
    static func refusal(_ answer: SendOutcome, format: PushFormat) -> String {
        let reason = answer.failureReason ?? "refused"
        guard let missing = answer.formatWithoutCredential else { return reason }
        return "the hub has no platform credential for \(missing) (\(format.rawValue) pushes): add it to the hub "
            + "(the Azure portal: the hub's Settings); until then those pushes wait in the outbox (\(reason))"
    }

    /// What the per-device outcomes of a test push say: reached, nobody, failures, legacy devices.
    static func reach(_ outcome: TestSendOutcome?, check: String, format: PushFormat, tags: String) -> [ConfigCheck] {
        guard let outcome else {
            return [ConfigCheck(check: check, severity: .hub, detail: "the hub took the test push but said no outcome")]
        }
        var checks: [ConfigCheck] = []
        let legacy = outcome.results.filter { legacyPlatforms.contains($0.platform.lowercased()) }
        if !legacy.isEmpty {
            checks.append(
                ConfigCheck(
                    check: check, severity: .warning,
                    detail: "\(legacy.count) device\(legacy.count == 1 ? " is" : "s are") still registered on legacy "
                        + "FCM (gcm), which Google turned off on 2024-06-20: they receive nothing though the hub "
                        + "answers 201; their apps must register again as fcmv1 (the same token)"))
        }
        if outcome.success > 0 {
            let platforms = Set(outcome.results.map(\.platform)).subtracting(legacyPlatforms).sorted()
            checks.append(
                ConfigCheck(
                    check: check, severity: .ok,
                    detail: "reached \(outcome.success) device\(outcome.success == 1 ? "" : "s") on [\(tags)] "
                        + "(\(platforms.joined(separator: ", ")))"))
        } else if outcome.failure > legacy.count {
            let why = outcome.results.first { !legacyPlatforms.contains($0.platform.lowercased()) }?.outcome ?? ""
            checks.append(
                ConfigCheck(
                    check: check, severity: .hub,
                    detail: "no device reached on [\(tags)]: \(outcome.failure) failed (\(why))"))
        } else {
            let fcm =
                format == .template
                ? ", or the Android devices' FCM v1 templates are not complete {\"message\":…} documents (the hub "
                    + "counts those as neither success nor failure)" : ""
            checks.append(
                ConfigCheck(
                    check: check, severity: .hub,
                    detail: "no device reached on [\(tags)]: no device is registered for \(format.rawValue) pushes "
                        + "to these tags\(fcm)"))
        }
        return checks
    }
}
