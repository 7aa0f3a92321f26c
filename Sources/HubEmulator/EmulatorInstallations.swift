import Foundation

/// An installation as the service takes it (`PUT {hub}/installations/{id}`, hub-api.md §7): a
/// device the back-end registered, which receives the sends whose tag expression matches its
/// tags, rendered with each of its templates (native sends of its platform as they are).
public struct Installation: Codable, Sendable, Equatable {
    /// The installation's id (the last segment of its URL).
    public var installationId: String
    /// `apns`, `fcmv1`, `wns`, or legacy `gcm`.
    public var platform: String
    /// The push handle: the device token, FCM registration token or WNS channel URI.
    public var pushChannel: String
    /// Its tags.
    public var tags: [String]?
    /// Its templates by name.
    public var templates: [String: Template]?
    /// The user it belongs to (targetable as `$UserId:{…}` on the service).
    public var userId: String?
    /// When it was last written (read-only, set by the hub).
    public var lastUpdate: String?
    /// When it expires (read-only: the service's "never").
    public var expirationTime: String?
    /// Whether the push service said the handle is gone (read-only).
    public var pushChannelExpired: Bool?

    /// One template of an installation.
    public struct Template: Codable, Sendable, Equatable {
        /// The payload with `$(property)` expressions.
        public var body: String
        /// Push headers (`apns-priority`…), literal or expressions.
        public var headers: [String: String]?
        /// The `Expiry` expression or date.
        public var expiry: String?
        /// Tags that narrow the sends this template renders.
        public var tags: [String]?
    }

    /// The emulator's platform for the installation's, nil for one it does not emulate.
    var devicePlatform: VirtualDevice.Platform? {
        switch platform.lowercased() {
        case "apns": return .apple
        case "fcmv1": return .fcmv1
        case "wns": return .windows
        case "gcm", "fcm": return .gcm
        default: return nil
        }
    }

    /// The virtual devices that receive what reaches it: one native registration, and one per
    /// template (`ID/NAME`).
    var devices: [VirtualDevice] {
        guard let platform = devicePlatform else { return [] }
        let tags = tags ?? []
        var devices = [VirtualDevice(id: installationId, platform: platform, tags: tags, template: nil)]
        for (name, template) in (templates ?? [:]).sorted(by: { $0.key < $1.key }) {
            var device = VirtualDevice(
                id: "\(installationId)/\(name)", platform: platform, tags: tags, template: template.body,
                headers: template.headers ?? [:], expiry: template.expiry)
            device.templateTags = template.tags
            devices.append(device)
        }
        return devices
    }

    /// What the service refuses with 400, in its words where known.
    func problem(path id: String) -> String? {
        if installationId != id { return "The installationId in the body does not match the one in the URL" }
        if devicePlatform == nil { return "Unsupported platform '\(platform)'" }
        if pushChannel.isEmpty { return "pushChannel is required" }
        let tags = tags ?? []
        if tags.count > 60 { return "An installation can have at most 60 tags" }
        for tag in tags + (templates ?? [:]).values.flatMap({ $0.tags ?? [] }) {
            if let problem = Self.tagProblem(tag) { return problem }
        }
        return nil
    }

    /// A tag is at most 120 letters, digits and `_ @ # . : -`; `$` tags are the service's own.
    static func tagProblem(_ tag: String) -> String? {
        if tag.isEmpty || tag.count > 120 { return "The tag '\(tag)' must be 1 to 120 characters" }
        let allowed = tag.unicodeScalars.allSatisfy {
            switch $0 {
            case "A"..."Z", "a"..."z", "0"..."9", "_", "@", "#", ".", ":", "-": return true
            default: return false
            }
        }
        return allowed ? nil : "The tag '\(tag)' has characters outside letters, digits and _ @ # . : -"
    }
}

extension HubEmulator {
    /// An installation as the hub holds it, nil when it holds none with this id.
    public func installation(_ id: String) -> Installation? { installations[id] }

    /// Every installation the hub holds.
    public func allInstallations() -> [Installation] { Array(installations.values) }

    /// `PUT`, `GET`, `PATCH` and `DELETE {hub}/installations/{id}`.
    func installationRoute(_ request: EmulatorRequest, id: String, trackingId: String, now: Date)
        -> EmulatorResponse
    {
        switch request.method {
        case "PUT":
            guard var installation = try? JSONDecoder().decode(Installation.self, from: request.body) else {
                return .xmlError(400, "The installation body is not valid JSON", trackingId: trackingId)
            }
            return store(&installation, id: id, trackingId: trackingId, now: now, status: 200)
        case "GET":
            guard let installation = installations[id] else {
                return .xmlError(404, "Installation not found", trackingId: trackingId)
            }
            return EmulatorResponse(
                status: 200, headers: [("Content-Type", "application/json"), ("TrackingId", trackingId)],
                body: (try? JSONEncoder().encode(installation)) ?? Data())
        case "PATCH":
            guard var installation = installations[id] else {
                return .xmlError(404, "Installation not found", trackingId: trackingId)
            }
            guard let operations = try? JSONSerialization.jsonObject(with: request.body) as? [[String: Any]] else {
                return .xmlError(400, "The body must be a JSON Patch array", trackingId: trackingId)
            }
            for operation in operations {
                if let problem = Self.apply(operation, to: &installation) {
                    return .xmlError(400, problem, trackingId: trackingId)
                }
            }
            return store(&installation, id: id, trackingId: trackingId, now: now, status: 200)
        case "DELETE":
            installations[id] = nil
            refreshDevices()
            return EmulatorResponse(status: 204, headers: [("TrackingId", trackingId)], body: Data())
        default:
            return .xmlError(405, "The method is not allowed on an installation", trackingId: trackingId)
        }
    }

    private func store(_ installation: inout Installation, id: String, trackingId: String, now: Date, status: Int)
        -> EmulatorResponse
    {
        if let problem = installation.problem(path: id) { return .xmlError(400, problem, trackingId: trackingId) }
        if installations[id] == nil, fileDevices.count + installations.count >= registry.tier.deviceLimit {
            return .xmlError(
                403, "The number of active devices has exceeded the \(registry.tier.rawValue) tier's limit",
                trackingId: trackingId)
        }
        installation.lastUpdate = now.ISO8601Format()
        installation.expirationTime = "9999-12-31T23:59:59.9999999Z"
        installation.pushChannelExpired = false
        installations[id] = installation
        refreshDevices()
        return EmulatorResponse(status: status, headers: [("TrackingId", trackingId)], body: Data())
    }

    /// The installations changed: the registry's devices are made again before the next send
    /// (once, however many installations were written meanwhile: a registration storm stays
    /// linear).
    private func refreshDevices() {
        devicesStale = true
    }

    /// The registry with its devices up to date: the file's, then every installation's.
    func upToDateRegistry() -> DeviceRegistry {
        if devicesStale {
            registry.devices =
                fileDevices
                + installations.keys.sorted().flatMap { id in
                    (installations[id]?.devices ?? []).map { device in
                        var device = device
                        device.offlineSeconds = offlineInstallations[id]
                        return device
                    }
                }
            devicesStale = false
        }
        return registry
    }

    /// One JSON Patch operation (`add`, `remove`, `replace`) on the paths the service allows;
    /// the problem when it cannot be applied.
    static func apply(_ operation: [String: Any], to installation: inout Installation) -> String? {
        guard let op = operation["op"] as? String, let path = operation["path"] as? String else {
            return "A patch operation needs op and path"
        }
        let value = operation["value"]
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        switch (op, parts.first, parts.count) {
        case ("add", "tags", 1), ("replace", "tags", 1):
            let added = (value as? String).map { [$0] } ?? (value as? [String]) ?? []
            if added.isEmpty { return "tags takes a tag or an array of tags" }
            let kept = op == "replace" ? [] : (installation.tags ?? [])
            installation.tags = kept + added.filter { !kept.contains($0) }
        case ("remove", "tags", 2):
            installation.tags = (installation.tags ?? []).filter { $0 != parts[1] }
        case ("remove", "tags", 1):
            installation.tags = []
        case ("add", "pushChannel", 1), ("replace", "pushChannel", 1):
            guard let channel = value as? String else { return "pushChannel takes a string" }
            installation.pushChannel = channel
        case ("add", "userId", 1), ("replace", "userId", 1):
            guard let user = value as? String else { return "userId takes a string" }
            installation.userId = user
        case ("remove", "userId", 1):
            installation.userId = nil
        case (_, "templates", 2):
            return applyTemplate(op, name: parts[1], value: value, to: &installation)
        default:
            return "The patch operation '\(op)' on '\(path)' is not supported"
        }
        return nil
    }

    private static func applyTemplate(_ op: String, name: String, value: Any?, to installation: inout Installation)
        -> String?
    {
        if op == "remove" {
            installation.templates?[name] = nil
            return nil
        }
        guard let object = value as? [String: Any], let data = try? JSONSerialization.data(withJSONObject: object),
            let template = try? JSONDecoder().decode(Installation.Template.self, from: data)
        else { return "A template needs a body" }
        installation.templates = (installation.templates ?? [:]).merging([name: template]) { $1 }
        return nil
    }
}

extension DeviceRegistry.Tier {
    /// Active devices a namespace of this tier may hold (hub-api.md §7).
    var deviceLimit: Int {
        switch self {
        case .free: return 500
        case .basic: return 200_000
        case .standard: return 10_000_000
        }
    }
}
