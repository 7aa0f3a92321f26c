import Foundation
import NotificationHubs
import Yams

/// A virtual device registered with the emulated hub.
public struct VirtualDevice: Sendable, Equatable {
    public enum Platform: String, Sendable, CaseIterable { case apple, fcmv1, windows }

    public var id: String
    public var platform: Platform
    public var tags: [String]
    /// The body template; nil for a native registration.
    public var template: String?
}

/// An extra access policy of the emulated namespace (for example a Listen-only one, to which
/// the service answers 403 on sends).
public struct AccessPolicy: Sendable, Equatable {
    public var name: String
    public var key: String
    public var canSend: Bool
}

/// The devices file of `newspush-hub --devices FILE`:
/// `devices: [{id: phone-1, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}]`,
/// optionally `hub: NAME` (other hub paths answer 404) and
/// `policies: [{name: ListenOnly, key: …, rights: [Listen]}]`.
public struct DeviceRegistry: Sendable {
    public var hub: String?
    public var devices: [VirtualDevice]
    public var policies: [AccessPolicy]

    public init(hub: String? = nil, devices: [VirtualDevice], policies: [AccessPolicy] = []) {
        self.hub = hub
        self.devices = devices
        self.policies = policies
    }

    public struct LoadError: Error, CustomStringConvertible {
        public var description: String
    }

    public static func load(path: String) throws -> DeviceRegistry {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw LoadError(description: "\(path): cannot read the devices file: \(error.localizedDescription)")
        }
        return try parse(text, file: path)
    }

    public static func parse(_ text: String, file: String) throws -> DeviceRegistry {
        let root: Node?
        do { root = try Yams.compose(yaml: text) } catch {
            throw LoadError(description: "\(file): not valid YAML: \(error)")
        }
        guard let mapping = root?.mapping else { throw LoadError(description: "\(file): expected a mapping with a devices list") }
        func fail(_ node: Node?, _ message: String) -> LoadError {
            LoadError(description: "\(file):\(node?.mark?.line ?? 0): \(message)")
        }
        var registry = DeviceRegistry(hub: mapping["hub"]?.string, devices: [])
        guard let list = mapping["devices"]?.sequence else { throw fail(root, "'devices' must be a list") }
        var seen = Set<String>()
        for (index, node) in list.enumerated() {
            guard let device = node.mapping else { throw fail(node, "devices[\(index)] must be a mapping") }
            guard let id = device["id"]?.string, !id.isEmpty else { throw fail(node, "devices[\(index)].id is required") }
            guard seen.insert(id).inserted else { throw fail(node, "device id '\(id)' is used twice") }
            let platformName = device["platform"]?.string ?? ""
            guard let platform = VirtualDevice.Platform(rawValue: platformName) else {
                throw fail(node, "devices[\(index)].platform must be apple, fcmv1 or windows, not '\(platformName)'")
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
            registry.devices.append(VirtualDevice(id: id, platform: platform, tags: tags, template: template))
        }
        for node in mapping["policies"]?.sequence ?? [] {
            guard let policy = node.mapping, let name = policy["name"]?.string, let key = policy["key"]?.string else {
                throw fail(node, "policies entries need name and key")
            }
            let rights = policy["rights"]?.sequence?.compactMap(\.string) ?? ["Listen", "Send"]
            registry.policies.append(AccessPolicy(name: name, key: key, canSend: rights.contains("Send") || rights.contains("Manage")))
        }
        return registry
    }
}
