import Foundation
import NotificationHubs
import Yams

/// A virtual device registered with the emulated hub.
public struct VirtualDevice: Sendable, Equatable {
    /// The push service a device registered through. `gcm` is legacy FCM, which Google turned
    /// off on 2024-06-20: such a device is still matched and rendered, and receives nothing.
    public enum Platform: String, Sendable, CaseIterable { case apple, fcmv1, windows, gcm }

    /// The device's id (and registration id).
    public var id: String
    /// Its platform.
    public var platform: Platform
    /// The tags it is registered with.
    public var tags: [String]
    /// The body template; nil for a native registration.
    public var template: String?
    /// A template registration's push headers (`apns-priority`, `apns-collapse-id`…), values
    /// literal or expressions such as `$(collapseId)`.
    public var headers: [String: String] = [:]
    /// A template registration's `Expiry`: a W3C date-time or an expression such as `$(expiry)`.
    public var expiry: String?
    /// The device is off and comes online this many seconds after each send: a notification
    /// that expired meanwhile is dropped, as the push service drops it.
    public var offlineSeconds: Double?
    /// An installation template's own tags: a send reaches the template only when its
    /// expression also matches these (nil: no narrowing).
    public var templateTags: [String]?
    /// How often its app reports receiving and opening an alert (`report:` in the file).
    public var report: ReportChances?

    /// A virtual device with its registration.
    public init(
        id: String, platform: Platform, tags: [String], template: String?, headers: [String: String] = [:],
        expiry: String? = nil, offlineSeconds: Double? = nil
    ) {
        self.id = id
        self.platform = platform
        self.tags = tags
        self.template = template
        self.headers = headers
        self.expiry = expiry
        self.offlineSeconds = offlineSeconds
    }
}

/// The share of alerts a virtual device's app reports (SPEC §11): `report: {received: 0.9,
/// opened: 0.2}`. Which alerts is drawn from the file's `report_seed`, the device and the alert
/// id, so a run replays.
public struct ReportChances: Sendable, Equatable {
    /// The share of alerts it says it received.
    public var received: Double
    /// The share it says it opened (an open counts as received too).
    public var opened: Double

    /// Chances of receiving and opening.
    public init(received: Double, opened: Double) {
        self.received = received
        self.opened = opened
    }
}

/// An extra access policy of the emulated namespace (for example a Listen-only one, to which
/// the service answers 403 on sends).
public struct AccessPolicy: Sendable, Equatable {
    /// The policy's name (`SharedAccessKeyName`).
    public var name: String
    /// Its key.
    public var key: String
    /// Whether it has the Send right (a Listen-only policy is answered 403).
    public var canSend: Bool
}

/// The devices file of `newspush-hub --devices FILE`:
/// `devices: [{id: phone-1, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}]`
/// (a template registration may add `headers: {apns-collapse-id: "$(collapseId)"}` and
/// `expiry: "$(expiry)"`; `offline_seconds: N` has a device come online N seconds after a send),
/// optionally `hub: NAME` (other hub paths answer 404), `tier: standard|basic|free`,
/// `telemetry_delay: SECONDS` (telemetry answers 404 that long after a send),
/// `policies: [{name: ListenOnly, key: …, rights: [Listen]}]`, and what the devices' apps
/// report (SPEC §11): `report: {received: 0.9, opened: 0.2}` per device,
/// `installations_report:` for installations, `report_to: URL` (`newspush api`) and `report_seed: N`.
public struct DeviceRegistry: Sendable {
    /// Standard has scheduled sends and per-message telemetry; basic and free answer 403 to them.
    public enum Tier: String, Sendable { case free, basic, standard }

    /// The hub's name, when the file names one (sends to another hub get 404).
    public var hub: String?
    /// The registered devices.
    public var devices: [VirtualDevice]
    /// Access policies besides the connection string's.
    public var policies: [AccessPolicy]
    /// The hub's tier (scheduled sends and telemetry need Standard).
    public var tier: Tier
    /// How long after a send its telemetry answers 404, as the service's does until it has
    /// processed the notification (up to 30 minutes); `telemetry_delay: 2s` in the file.
    public var telemetryDelay: Double = 0
    /// The send formats whose platform credential the hub has (`credentials: [apple, fcmv1]` in
    /// the file; nil: every one). A native send of another format is refused with the service's
    /// 400 "The notification has no target applications".
    public var credentials: Set<String>?
    /// Where the devices' apps report events (`report_to:`, `newspush api`'s base URL; also
    /// `PUT /_emulator/report-to` once it is known).
    public var reportTo: String?
    /// What the apps of installations registered through the installations API report
    /// (`installations_report:`).
    public var installationsReport: ReportChances?
    /// The seed of which alerts are reported (`report_seed:`).
    public var reportSeed: UInt64 = 1

    /// A registry of `devices`.
    public init(hub: String? = nil, devices: [VirtualDevice], policies: [AccessPolicy] = [], tier: Tier = .standard) {
        self.hub = hub
        self.devices = devices
        self.policies = policies
        self.tier = tier
    }

    /// Why a devices file cannot be used.
    public struct LoadError: Error, CustomStringConvertible {
        /// The file and what is wrong with it.
        public var description: String
    }

    /// The registry of the devices file at `path`.
    public static func load(path: String) throws -> DeviceRegistry {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw LoadError(description: "\(path): cannot read the devices file: \(error.localizedDescription)")
        }
        return try parse(text, file: path)
    }

    /// The registry of devices-file text read from `file`.
    public static func parse(_ text: String, file: String) throws -> DeviceRegistry {
        let root: Node?
        do { root = try Yams.compose(yaml: text) } catch {
            throw LoadError(description: "\(file): not valid YAML: \(error)")
        }
        guard let mapping = root?.mapping else {
            throw LoadError(description: "\(file): expected a mapping with a devices list")
        }
        let fail = { (node: Node?, message: String) in
            LoadError(description: "\(file):\(node?.mark?.line ?? 0): \(message)")
        }
        var registry = DeviceRegistry(hub: mapping["hub"]?.string, devices: [])
        if let tier = mapping["tier"]?.string {
            guard let value = Tier(rawValue: tier) else {
                throw fail(mapping["tier"], "tier must be free, basic or standard, not '\(tier)'")
            }
            registry.tier = value
        }
        if let text = mapping["telemetry_delay"]?.string {
            guard let seconds = Double(text.hasSuffix("s") ? String(text.dropLast()) : text), seconds >= 0 else {
                throw fail(mapping["telemetry_delay"], "telemetry_delay must be seconds (2s), not '\(text)'")
            }
            registry.telemetryDelay = seconds
        }
        if let list = mapping["credentials"]?.sequence {
            registry.credentials = Set(list.compactMap { $0.string?.lowercased() })
        }
        registry.reportTo = mapping["report_to"]?.string
        registry.installationsReport = try mapping["installations_report"].map {
            try chances($0, path: "installations_report", fail: fail)
        }
        if let seed = mapping["report_seed"] {
            guard let value = seed.string.flatMap(UInt64.init) else {
                throw fail(seed, "report_seed must be a whole number, not '\(seed.string ?? "")'")
            }
            registry.reportSeed = value
        }
        guard let list = mapping["devices"]?.sequence else { throw fail(root, "'devices' must be a list") }
        var seen = Set<String>()
        for (index, node) in list.enumerated() {
            let device = try Self.device(node, index: index, fail: fail)
            guard seen.insert(device.id).inserted else { throw fail(node, "device id '\(device.id)' is used twice") }
            registry.devices.append(device)
        }
        for node in mapping["policies"]?.sequence ?? [] {
            guard let policy = node.mapping, let name = policy["name"]?.string, let key = policy["key"]?.string else {
                throw fail(node, "policies entries need name and key")
            }
            let rights = policy["rights"]?.sequence?.compactMap(\.string) ?? ["Listen", "Send"]
            registry.policies.append(
                AccessPolicy(name: name, key: key, canSend: rights.contains("Send") || rights.contains("Manage")))
        }
        return registry
    }

    /// One entry of `devices`.
    private static func device(_ node: Node, index: Int, fail: (Node?, String) -> LoadError) throws -> VirtualDevice {
        guard let device = node.mapping else { throw fail(node, "devices[\(index)] must be a mapping") }
        guard let id = device["id"]?.string, !id.isEmpty else { throw fail(node, "devices[\(index)].id is required") }
        let platformName = device["platform"]?.string ?? ""
        guard let platform = VirtualDevice.Platform(rawValue: platformName) else {
            throw fail(node, "devices[\(index)].platform must be apple, fcmv1, windows or gcm, not '\(platformName)'")
        }
        var tags: [String] = []
        if let tagNode = device["tags"] {
            guard let sequence = tagNode.sequence else { throw fail(tagNode, "devices[\(index)].tags must be a list") }
            tags = sequence.compactMap(\.string)
        }
        let template = device["template"]?.string
        if let template, platform != .windows {
            do { _ = try TemplateRenderer.renderJSON(template, properties: [:]) } catch {
                throw fail(node, "devices[\(index)].template: \(error)")
            }
        }
        var headers: [String: String] = [:]
        if let headerNode = device["headers"] {
            guard let pairs = headerNode.mapping else {
                throw fail(headerNode, "devices[\(index)].headers must be a mapping")
            }
            for (name, value) in pairs {
                guard let key = name.string, key.lowercased().hasPrefix("apns-"), let text = value.string else {
                    throw fail(
                        name,
                        "devices[\(index)].headers: keys must start with apns- (as in an Apple template registration)")
                }
                headers[key.lowercased()] = text
            }
        }
        let offline = device["offline_seconds"].flatMap { $0.string }.flatMap(Double.init)
        var made = VirtualDevice(
            id: id, platform: platform, tags: tags, template: template, headers: headers,
            expiry: device["expiry"]?.string, offlineSeconds: offline)
        made.report = try device["report"].map { try chances($0, path: "devices[\(index)].report", fail: fail) }
        return made
    }

    /// `{received: 0.9, opened: 0.2}`: shares from 0 to 1.
    private static func chances(_ node: Node, path: String, fail: (Node?, String) -> LoadError) throws
        -> ReportChances
    {
        func share(_ name: String) throws -> Double {
            guard let text = node.mapping?[name]?.string else { return 0 }
            guard let value = Double(text), value >= 0, value <= 1 else {
                throw fail(node, "\(path).\(name) must be a share from 0 to 1, not '\(text)'")
            }
            return value
        }
        guard node.mapping != nil else { throw fail(node, "\(path) must be a mapping {received: 0.9, opened: 0.2}") }
        return ReportChances(received: try share("received"), opened: try share("opened"))
    }
}
