import Foundation
import NewsPushModel
import NotificationHubs

#if canImport(Glibc)
    import Glibc
#endif

/// What `newspush check` verifies beyond the file itself, without any network traffic: that the
/// hub credentials can sign a token, that the ledger's folder is writable and the ledger (if
/// any) readable, and that there is something to fetch.
public struct ConfigCheck: Sendable, Encodable {
    /// What a failed check means for the exit status.
    public enum Severity: String, Sendable, Encodable {
        case ok
        /// The config must change (exit 78).
        case config
        /// The ledger cannot be used (exit 1).
        case ledger
        /// The hub does not deliver what the config sends (`check --hub`: a format reached no
        /// device, a credential is missing; exit 1).
        case hub
        /// Works, but probably not as meant (the exit status is not affected).
        case warning
    }

    /// What was checked.
    public var check: String
    /// ok, or what a failure means.
    public var severity: Severity
    /// What was found.
    public var detail: String

    /// The checks of the config itself (the feeds, the hub credentials); the ledger's are the
    /// check session's.
    public static func run(_ config: NewsPushConfig) -> [ConfigCheck] {
        [
            config.feeds.isEmpty
                ? ConfigCheck(
                    check: "feeds", severity: .config, detail: "the feed list is empty: a run would fetch nothing")
                : ConfigCheck(
                    check: "feeds", severity: .ok,
                    detail: "\(config.feeds.count) feed\(config.feeds.count == 1 ? "" : "s")"),
            signing(config.hub),
        ] + warnings(config)
    }

    /// Settings that work but do something an operator rarely means: say what they do.
    public static func warnings(_ config: NewsPushConfig) -> [ConfigCheck] {
        var warnings: [ConfigCheck] = []
        let policy = config.policy
        if policy.maxAge <= 0 {
            warnings.append(
                ConfigCheck(
                    check: "policy.max_age", severity: .warning,
                    detail: "is 0s: no item is ever fresh, so every new item is stale and nothing is pushed"))
        }
        if policy.budgetPerCategory == 0 {
            warnings.append(
                ConfigCheck(
                    check: "policy.budget.per_category", severity: .warning,
                    detail: "is 0: no category may push anything, every selected item is over-budget"))
        }
        if config.stateRetention < policy.maxAge {
            warnings.append(
                ConfigCheck(
                    check: "state_retention", severity: .warning,
                    detail: "is shorter than policy.max_age: stories are forgotten (kept as tombstones) while still "
                        + "fresh"))
        }
        for language in config.languages.sorted() {
            let lacking = NewsCategory.allCases.filter { config.settings(for: $0).messages[language] == nil }
            guard !lacking.isEmpty else { continue }
            warnings.append(
                ConfigCheck(
                    check: "messages.\(language)", severity: .warning,
                    detail: "\(lacking.map(\.rawValue).joined(separator: ", ")) \(lacking.count == 1 ? "has" : "have") "
                        + "no message in \(language): devices registered with $(messageParam_\(language)) get "
                        + "\(lacking.count == 1 ? "its" : "their") default message"))
        }
        return warnings
    }

    /// A check with its outcome.
    public init(check: String, severity: Severity, detail: String) {
        self.check = check
        self.severity = severity
        self.detail = detail
    }

    /// A token signed with the configured key and checked against the same key: the parts of
    /// the connection string are all there and usable (the hub itself is not asked).
    static func signing(_ hub: HubSettings) -> ConfigCheck {
        do {
            let connection = try HubConnectionString(parsing: hub.connectionString)
            let resource = SharedAccessSignature.hubResourceURI(host: connection.host, hub: hub.name)
            let token = SharedAccessSignature.token(
                resourceURI: resource, keyName: connection.keyName, key: connection.key,
                expiry: Int(Date().timeIntervalSince1970) + 60)
            guard let fields = SharedAccessSignature.fields(of: token), let sr = fields["sr"],
                let se = fields["se"].flatMap(Int.init),
                SharedAccessSignature.percentDecode(fields["sig"] ?? "")
                    == SharedAccessSignature.sign(sr: sr, expiry: se, key: connection.key)
            else {
                return ConfigCheck(
                    check: "hub credentials", severity: .config, detail: "a token signed with the key does not verify")
            }
            return ConfigCheck(
                check: "hub credentials", severity: .ok,
                detail:
                    "tokens for hub '\(hub.name)' on \(connection.host) are signed with policy "
                    + "'\(connection.keyName)' (the hub is not asked: `newspush hub test-send` does)"
            )
        } catch {
            return ConfigCheck(check: "hub credentials", severity: .config, detail: error.description)
        }
    }
}
