import Foundation
import NotificationHubs
#if canImport(Glibc)
import Glibc
#endif

/// What `newspush check` verifies beyond the file itself, without any network traffic: that the
/// hub credentials can sign a token, that the ledger's folder is writable and the ledger (if
/// any) readable, and that there is something to fetch.
public struct ConfigCheck: Sendable, Encodable {
    public enum Severity: String, Sendable, Encodable {
        case ok
        /// The config must change (exit 78).
        case config
        /// The ledger cannot be used (exit 1).
        case ledger
    }

    public var check: String
    public var severity: Severity
    public var detail: String

    public static func run(_ config: NewsPushConfig) -> [ConfigCheck] {
        var checks: [ConfigCheck] = []
        checks.append(config.feeds.isEmpty
            ? ConfigCheck(check: "feeds", severity: .config, detail: "the feed list is empty: a run would fetch nothing")
            : ConfigCheck(check: "feeds", severity: .ok, detail: "\(config.feeds.count) feed\(config.feeds.count == 1 ? "" : "s")"))
        checks.append(signing(config.hub))
        checks.append(contentsOf: ledger(config.statePath))
        return checks
    }

    /// A token signed with the configured key and checked against the same key: the parts of
    /// the connection string are all there and usable (the hub itself is not asked).
    static func signing(_ hub: HubSettings) -> ConfigCheck {
        do {
            let connection = try HubConnectionString(parsing: hub.connectionString)
            let resource = SharedAccessSignature.hubResourceURI(host: connection.host, hub: hub.name)
            let token = SharedAccessSignature.token(resourceURI: resource, keyName: connection.keyName, key: connection.key,
                                                    expiry: Int(Date().timeIntervalSince1970) + 60)
            guard let fields = SharedAccessSignature.fields(of: token), let sr = fields["sr"], let se = fields["se"].flatMap(Int.init),
                  SharedAccessSignature.percentDecode(fields["sig"] ?? "") == SharedAccessSignature.sign(sr: sr, expiry: se, key: connection.key) else {
                return ConfigCheck(check: "hub credentials", severity: .config, detail: "a token signed with the key does not verify")
            }
            return ConfigCheck(check: "hub credentials", severity: .ok,
                               detail: "tokens for hub '\(hub.name)' on \(connection.host) are signed with policy '\(connection.keyName)' (the hub is not asked: `newspush hub test-send` does)")
        } catch {
            return ConfigCheck(check: "hub credentials", severity: .config, detail: error.description)
        }
    }

    static func ledger(_ configured: String) -> [ConfigCheck] {
        let path = LedgerLocation(configured: configured).databasePath
        let folder = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            return [ConfigCheck(check: "ledger folder", severity: .config, detail: "\(folder) does not exist (state: in the config)")]
        }
        guard access(folder, W_OK) == 0 else {
            return [ConfigCheck(check: "ledger folder", severity: .config, detail: "\(folder) is not writable by this user: runs could not record anything")]
        }
        var checks = [ConfigCheck(check: "ledger folder", severity: .ok, detail: "\(folder) is writable")]
        do {
            let ledger = try Ledger.open(configured: configured, access: .read)
            let detail = ledger.isNew ? "no ledger yet at \(path): the first run records a baseline" : "\(path) can be read"
            checks.append(ConfigCheck(check: "ledger", severity: .ok, detail: detail))
        } catch {
            checks.append(ConfigCheck(check: "ledger", severity: .ledger, detail: error.description))
        }
        return checks
    }
}
