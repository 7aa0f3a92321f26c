import Crypto
import Foundation
import NewsPushModel
import NotificationHubs
import Yams

/// `api:`: the app back-end's rules (SPEC §9): which tags a phone may carry, who may sign in,
/// the templates installations are registered with, and the limits.
public struct ApiSettings: Sendable {
    /// The topics a client may ask for (default: the tags of every category).
    public var topics: [String] = []
    /// At most this many topics per installation (the rest are dropped and reported).
    public var maxTopics = 20
    /// The tag a signed-in user's devices carry; `{user}` is the user.
    public var userTag = "username:{user}"
    /// Whether installations without sign-in are taken (topics only).
    public var anonymous = true
    /// Absolute path of the HTTP Basic users file (`api.users`; `api-users.yaml` beside the config).
    public var usersPath = ""
    /// `api.jwt`, when bearer tokens are taken.
    public var jwt: JWTSettings?
    /// The template each platform's installation is registered with: body, headers, expiry.
    public var templates: [String: HubInstallation.Template] = ApiSettings.defaultTemplates
    /// PostgreSQL: connections each instance keeps (one per request in flight on the ledger).
    public var pool = 16
    /// Installation writes to the hub in flight at once per instance; the rest wait their turn.
    public var hubWrites = 32
    /// Installations not registered again for this long are deleted by `devices prune`.
    public var staleAfter: Double = 180 * 86400
    /// Requests allowed per client address, per `ratePeriod` seconds.
    public var ratePerAddress = RateLimit(count: 60, period: 60)
    /// Requests allowed per signed-in user.
    public var ratePerUser = RateLimit(count: 30, period: 60)
    /// The reverse proxies whose `X-Forwarded-For` is believed.
    public var trustedProxies: [String] = []
    /// Rate limits are kept per network: an IPv4 address's first `ipv4Prefix` bits, an IPv6
    /// address's first `ipv6Prefix` (a /64 is one subscriber's: its addresses are theirs to pick).
    public var ipv4Prefix = 32
    /// (See `ipv4Prefix`.)
    public var ipv6Prefix = 64
    /// New anonymous installations one network may create.
    public var newAnonymousPerNetwork = RateLimit(count: 500, period: 86400)
    /// Failed sign-ins of one user name (from any address) within 15 minutes before the
    /// back-end answers 429 for that name.
    public var signInFailures = 5
    /// `api.handle_shapes: strict` (the default): each platform's handle must have the shape
    /// its push service gives (`loose`: any printable handle, for an emulator or a staging hub).
    public var strictHandles = true
    /// Installations one signed-in user may have; a new one past it replaces their oldest.
    public var maxDevicesPerUser = 10
    /// Past this many installations in the index, new anonymous phones and token users get 503
    /// (Basic readers still register). Default: nine tenths of `hub.tier`'s device quota.
    public var maxInstallations = 9_000_000
    /// The key of the pseudonym a forget's audit row keeps (`HMAC-SHA256(key, name)`); without
    /// it the row names no one.
    public var pseudonymKey: String?

    /// The seed app's templates (`messageParam` as each platform's visible alert) with what
    /// docs/alerts.md recommends beside them: the story's collapse id (a correction replaces
    /// the first alert), its priority, and its expiry (a stale alert is never delivered).
    ///
    /// Each also carries the alert id (SPEC §11), which the app reports receipt and opens of:
    /// at the top of the APNs body (with `mutable-content`, so the notification service
    /// extension runs and reports receipt), in the FCM v1 message's `data` (the only place a
    /// v1 message takes an app's own fields), and as the WNS toast's launch argument.
    public static let defaultTemplates: [String: HubInstallation.Template] = [
        "apns": HubInstallation.Template(
            body: #"{"aps":{"alert":"$(messageParam)","mutable-content":1},"alertId":"$(alertId)"}"#,
            headers: ["apns-collapse-id": "$(collapseId)", "apns-priority": "$(priority)", "apns-push-type": "alert"],
            expiry: "$(expiry)"),
        "fcmv1": HubInstallation.Template(
            body:
                #"{"message":{"notification":{"body":"$(messageParam)"},"android":{"collapse_key":"$(collapseId)"},"#
                + #""data":{"alertId":"$(alertId)"}}}"#,
            expiry: "$(expiry)"),
        "wns": HubInstallation.Template(
            body:
                #"<toast launch="$(alertId)"><visual><binding template="ToastText01"><text id="1">$(messageParam)</text>"#
                + "</binding></visual></toast>",
            expiry: "$(expiry)"),
    ]

    /// The tag the back-end gives every signed-in installation and no client may ask for: an
    /// id-only push goes to the category's expression and this tag, the devices that can fetch
    /// its text.
    public static let readerTag = "newspush:signed-in"

    /// Whether a client may never ask for `tag`: the service's (`$…`), the back-end's own
    /// (`newspush:…`), or a user's.
    public func isReserved(_ tag: String) -> Bool {
        tag.hasPrefix("$") || tag.hasPrefix("newspush:") || isUserTag(tag)
    }

    /// The defaults.
    public init() {}

    /// `api.jwt`: whose tokens are taken, for whom, and where their keys are.
    public struct JWTSettings: Sendable, Equatable {
        /// `iss`, compared exactly.
        public var issuer: String
        /// One of `aud`.
        public var audience: String
        /// A JWKS file, or an https URL.
        public var jwks: String
        /// Which source owns plain user names (`api.jwt.names`).
        public var names: Names = .own

        /// `own`: a token's `sub` is the user's name and Basic users are `basic:NAME`;
        /// `prefixed`: tokens' users are `jwt:SUB` and Basic users keep their plain names.
        public enum Names: String, Sendable, Equatable {
            case own, prefixed
        }

        /// Settings as written.
        public init(issuer: String, audience: String, jwks: String, names: Names = .own) {
            self.issuer = issuer
            self.audience = audience
            self.jwks = jwks
            self.names = names
        }
    }

    /// Name forms no source may give a user as they are: the hashed tag form (`h.`) and the
    /// namespaces' prefixes. A token's `sub` of such a form is always prefixed `jwt:`; a Basic
    /// user of such a name is refused (`api add-user`, and at sign-in).
    public static func isReservedName(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.hasPrefix("h.") || lower.hasPrefix("basic:") || lower.hasPrefix("jwt:")
    }

    /// The user a Basic credential names: plain, or `basic:NAME` when token subjects own the
    /// plain names. JWT subjects and Basic users never share a name (SPEC §9, "Abuse").
    public func basicUser(_ name: String) -> String {
        jwt?.names == .own ? "basic:" + name : name
    }

    /// Whether `user` (as the back-end forms names) signed in with a token: `jwt:SUB`, or a plain
    /// name when tokens own plain names. Anyone can get a token from an open identity provider,
    /// so token users' new installations count against the caps as anonymous ones do.
    public func isTokenUser(_ user: String) -> Bool {
        guard let jwt else { return false }
        return user.hasPrefix("jwt:") || (jwt.names == .own && !user.hasPrefix("basic:"))
    }

    /// Which source owns plain user names: `tokens` (api.jwt with `names: own`) or `basic`.
    public var plainNamesOwner: String { jwt?.names == .own ? "tokens" : "basic" }

    /// How the audit names a forgotten reader: `reader hmac:` and the HMAC-SHA256 of the name
    /// under `api.pseudonym_key` (hex; not reversible without the key), or "a
    /// reader" when no key is set.
    public func pseudonym(of user: String) -> String {
        guard let pseudonymKey else { return "a reader" }
        let code = HMAC<SHA256>.authenticationCode(
            for: Data(user.utf8), using: SymmetricKey(data: Data(pseudonymKey.utf8)))
        return "reader hmac:" + Hex.string(Data(code))
    }

    /// The user a token's `sub` names: itself when tokens own plain names and it has no
    /// reserved form, else `jwt:SUB`.
    public func tokenUser(_ subject: String) -> String {
        jwt?.names == .own && !Self.isReservedName(subject) ? subject : "jwt:" + subject
    }

    /// `60/min`: `count` requests per `period` seconds.
    public struct RateLimit: Sendable, Equatable {
        /// Requests allowed…
        public var count: Int
        /// …per this many seconds.
        public var period: Double

        /// `count` requests per `period` seconds.
        public init(count: Int, period: Double) {
            self.count = count
            self.period = period
        }

        /// `60/min`, `5/s`, `1000/h`, `10/10s`.
        public static func parse(_ text: String) -> RateLimit? {
            let parts = text.replacingOccurrences(of: " ", with: "").split(
                separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let count = Int(parts[0]), count > 0 else { return nil }
            let units: [String: Double] = [
                "s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "day": 86400,
                "d": 86400,
            ]
            let period = units[parts[1].lowercased()] ?? NodeReader.parseDuration(String(parts[1]))
            guard let period, period > 0 else { return nil }
            return RateLimit(count: count, period: period)
        }
    }

    /// The tag of `user`: `user_tag` with `{user}` replaced by the name when it is made of tag
    /// characters and fits, else by `h.` and the first 32 hex digits of its SHA-256.
    public func tag(forUser user: String) -> String {
        let plain = userTag.replacingOccurrences(of: "{user}", with: user)
        if Self.isTag(plain) && user.unicodeScalars.allSatisfy(Self.isTagCharacter) { return plain }
        return userTag.replacingOccurrences(of: "{user}", with: "h." + Self.userDigest(user))
    }

    /// Whether `tag` has the form of a user's tag (so a client may never ask for it).
    public func isUserTag(_ tag: String) -> Bool {
        guard let range = userTag.range(of: "{user}") else { return tag == userTag }
        let prefix = userTag[..<range.lowerBound]
        let suffix = userTag[range.upperBound...]
        return tag.count > prefix.count + suffix.count && tag.hasPrefix(prefix) && tag.hasSuffix(suffix)
    }

    /// What every user tag starts with.
    public var userTagPrefix: String {
        userTag.range(of: "{user}").map { String(userTag[..<$0.lowerBound]) } ?? userTag
    }

    /// A tag as the hub takes it: 1 to 120 of `A–Z a–z 0–9 _ @ # . : -`.
    public static func isTag(_ text: String) -> Bool {
        (1...120).contains(text.unicodeScalars.count) && text.unicodeScalars.allSatisfy(isTagCharacter)
    }

    static func isTagCharacter(_ c: Unicode.Scalar) -> Bool {
        // ASCII letters and digits by range: `CharacterSet.alphanumerics` is built anew on each use.
        ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c)
            || "_@#.:-".unicodeScalars.contains(c)
    }

    private static func userDigest(_ user: String) -> String {
        String(Hex.sha256(Data(user.utf8)).prefix(32))
    }
}

extension ConfigLoader {
    /// `api:` (SPEC §9); `categoryTags` are the default topics.
    func readApi(_ node: Node?, folder: String, categoryTags: [String], tier: HubTier, reader: NodeReader)
        -> ApiSettings
    {
        var settings = ApiSettings()
        settings.maxInstallations = tier.deviceQuota * 9 / 10
        settings.topics = categoryTags
        settings.usersPath = (folder as NSString).appendingPathComponent("api-users.yaml")
        guard let node else { return settings }
        let m = reader.mapping(
            node, path: "api",
            allowed: [
                "topics", "max_topics", "user_tag", "anonymous", "users", "jwt", "templates", "stale_after", "rate",
                "trusted_proxies", "pool", "hub_writes", "sign_in_failures", "max_devices_per_user",
                "max_installations", "pseudonym_key", "handle_shapes",
            ])
        readTags(m, into: &settings, reader: reader)
        if let n = m["anonymous"], let v = reader.string(n, path: "api.anonymous") {
            switch v.lowercased() {
            case "true", "yes", "on": settings.anonymous = true
            case "false", "no", "off": settings.anonymous = false
            default: reader.report(n, "api.anonymous", "must be true or false, not '\(v)'")
            }
        }
        if let n = m["users"], let v = reader.string(n, path: "api.users") {
            settings.usersPath = v.hasPrefix("/") ? v : (folder as NSString).appendingPathComponent(v)
        }
        if let n = m["jwt"] { settings.jwt = readJWT(n, folder: folder, reader: reader) }
        if let n = m["templates"] { readTemplates(n, into: &settings, reader: reader) }
        if let n = m["stale_after"], let v = reader.duration(n, path: "api.stale_after") {
            if v >= 86400 {
                settings.staleAfter = v
            } else {
                reader.report(n, "api.stale_after", "must be at least 1d")
            }
        }
        readLimits(m, into: &settings, reader: reader)
        readAbuse(m, into: &settings, reader: reader)
        return settings
    }

    /// `api.sign_in_failures`, `api.max_devices_per_user`, `api.max_installations` (a number,
    /// or a hub tier: nine tenths of its device quota), `api.handle_shapes`, `api.pseudonym_key`.
    private func readAbuse(_ m: NodeReader.MappingView, into settings: inout ApiSettings, reader: NodeReader) {
        if let n = m["sign_in_failures"], let v = reader.integer(n, path: "api.sign_in_failures", range: 1...1000) {
            settings.signInFailures = v
        }
        if let n = m["max_devices_per_user"],
            let v = reader.integer(n, path: "api.max_devices_per_user", range: 1...1000)
        {
            settings.maxDevicesPerUser = v
        }
        if let n = m["max_installations"], let v = reader.string(n, path: "api.max_installations") {
            if let tier = HubTier(rawValue: v.lowercased()) {
                settings.maxInstallations = tier.deviceQuota * 9 / 10
            } else if let count = Int(v.replacingOccurrences(of: "_", with: "")), count > 0 {
                settings.maxInstallations = count
            } else {
                reader.report(n, "api.max_installations", "'\(v)' is not a number or a tier (free, basic, standard)")
            }
        }
        if let n = m["handle_shapes"], let v = reader.string(n, path: "api.handle_shapes") {
            switch v.lowercased() {
            case "strict": settings.strictHandles = true
            case "loose": settings.strictHandles = false
            default: reader.report(n, "api.handle_shapes", "must be strict or loose, not '\(v)'")
            }
        }
        if let n = m["pseudonym_key"], let v = reader.string(n, path: "api.pseudonym_key") {
            if v.utf8.count >= 16 {
                settings.pseudonymKey = v
            } else {
                reader.report(n, "api.pseudonym_key", "must have at least 16 characters")
            }
        }
    }

    /// `api.topics`, `api.max_topics`, `api.user_tag`.
    private func readTags(_ m: NodeReader.MappingView, into settings: inout ApiSettings, reader: NodeReader) {
        if let list = m["topics"] {
            settings.topics = reader.elements(list, path: "api.topics").compactMap { element in
                guard let topic = reader.string(element, path: "api.topics") else { return nil }
                guard ApiSettings.isTag(topic), !topic.hasPrefix("$"), !topic.hasPrefix("newspush:") else {
                    reader.report(
                        element, "api.topics",
                        "'\(topic)' is not a topic (1 to 120 of A-Z a-z 0-9 _ @ # . : -, not starting with $ or newspush:)"
                    )
                    return nil
                }
                return topic
            }
        }
        // 58: an installation's 60 tags leave room for the user's tag and the signed-in tag.
        if let n = m["max_topics"], let v = reader.integer(n, path: "api.max_topics", range: 1...58) {
            settings.maxTopics = v
        }
        if let n = m["user_tag"], let v = reader.string(n, path: "api.user_tag") {
            let sample = v.replacingOccurrences(of: "{user}", with: "u")
            if v.components(separatedBy: "{user}").count != 2 || !ApiSettings.isTag(sample) || v.hasPrefix("$")
                || v.hasPrefix("newspush:")
            {
                reader.report(
                    n, "api.user_tag",
                    "'\(v)' must contain {user} once, otherwise be tag characters, and not start with $ or newspush:")
            } else {
                settings.userTag = v
            }
        }
    }

    /// `api.templates.<platform>`: a body, or `{body, headers, expiry}` as the hub's
    /// installation templates take them (apple headers start with `apns-`).
    private func readTemplates(_ node: Node, into settings: inout ApiSettings, reader: NodeReader) {
        for (key, value) in reader.pairs(node, path: "api.templates") {
            let platform = reader.written(key)
            let path = "api.templates.\(platform)"
            guard ApiSettings.defaultTemplates[platform] != nil else {
                reader.report(key, "api.templates", "'\(platform)' is not a platform (apns, fcmv1, wns)")
                continue
            }
            guard case .mapping = value else {
                if let body = reader.string(value, path: path) { settings.templates[platform]?.body = body }
                continue
            }
            let m = reader.mapping(value, path: path, allowed: ["body", "headers", "expiry"])
            guard let bodyNode = m["body"], let body = reader.string(bodyNode, path: path + ".body") else {
                if m["body"] == nil { reader.report(value, path + ".body", "is required") }
                continue
            }
            var template = HubInstallation.Template(body: body)
            template.expiry = m["expiry"].flatMap { reader.string($0, path: path + ".expiry") }
            if let headers = m["headers"] {
                var read: [String: String] = [:]
                for (name, text) in reader.pairs(headers, path: path + ".headers") {
                    let header = reader.written(name)
                    if platform == "apns" && !header.lowercased().hasPrefix("apns-") {
                        reader.report(
                            name, path + ".headers", "'\(header)': an apple template's headers start with apns-")
                    }
                    read[header] = reader.string(text, path: path + ".headers.\(header)")
                }
                template.headers = read
            }
            settings.templates[platform] = template
        }
    }

    /// `api.rate`, `api.trusted_proxies`, `api.pool`, `api.hub_writes`.
    private func readLimits(_ m: NodeReader.MappingView, into settings: inout ApiSettings, reader: NodeReader) {
        if let n = m["rate"] {
            let rate = reader.mapping(
                n, path: "api.rate",
                allowed: ["per_address", "per_user", "new_anonymous_per_network", "ipv4_prefix", "ipv6_prefix"])
            for key in ["per_address", "per_user", "new_anonymous_per_network"] {
                let path = "api.rate." + key
                guard let node = rate[key], let text = reader.string(node, path: path) else { continue }
                guard let limit = ApiSettings.RateLimit.parse(text) else {
                    reader.report(node, path, "'\(text)' is not a rate (examples: 60/min, 5/s, 1000/h, 500/day)")
                    continue
                }
                switch key {
                case "per_address": settings.ratePerAddress = limit
                case "per_user": settings.ratePerUser = limit
                default: settings.newAnonymousPerNetwork = limit
                }
            }
            if let node = rate["ipv4_prefix"], let v = reader.integer(node, path: "api.rate.ipv4_prefix", range: 8...32)
            {
                settings.ipv4Prefix = v
            }
            if let node = rate["ipv6_prefix"],
                let v = reader.integer(node, path: "api.rate.ipv6_prefix", range: 32...128)
            {
                settings.ipv6Prefix = v
            }
        }
        if let list = m["trusted_proxies"] {
            for element in reader.elements(list, path: "api.trusted_proxies") {
                guard let address = reader.string(element, path: "api.trusted_proxies") else { continue }
                guard Self.isIPAddress(address) else {
                    reader.report(element, "api.trusted_proxies", "'\(address)' is not an IP address")
                    continue
                }
                settings.trustedProxies.append(address)
            }
        }
        if let n = m["pool"], let v = reader.integer(n, path: "api.pool", range: 1...1000) { settings.pool = v }
        if let n = m["hub_writes"], let v = reader.integer(n, path: "api.hub_writes", range: 1...1000) {
            settings.hubWrites = v
        }
    }

    private func readJWT(_ node: Node, folder: String, reader: NodeReader) -> ApiSettings.JWTSettings? {
        let m = reader.mapping(node, path: "api.jwt", allowed: ["issuer", "audience", "jwks", "names"])
        var names = ApiSettings.JWTSettings.Names.own
        if let n = m["names"], let v = reader.string(n, path: "api.jwt.names") {
            if let value = ApiSettings.JWTSettings.Names(rawValue: v.lowercased()) {
                names = value
            } else {
                reader.report(n, "api.jwt.names", "must be own or prefixed, not '\(v)'")
            }
        }
        let issuer = m["issuer"].flatMap { reader.string($0, path: "api.jwt.issuer") }
        let audience = m["audience"].flatMap { reader.string($0, path: "api.jwt.audience") }
        var jwks = m["jwks"].flatMap { reader.string($0, path: "api.jwt.jwks") }
        for (key, value) in [("issuer", issuer), ("audience", audience), ("jwks", jwks)] where value == nil {
            if m[key] == nil { reader.report(node, "api.jwt.\(key)", "is required") }
        }
        if let text = jwks, let jwksNode = m["jwks"] {
            let lower = text.lowercased()
            if lower.hasPrefix("http://") {
                let host = URLComponents(string: text)?.host ?? ""
                if !["127.0.0.1", "::1", "localhost"].contains(host) {
                    reader.report(
                        jwksNode, "api.jwt.jwks", "a key set is fetched over https (http only from this machine)")
                }
            } else if !lower.hasPrefix("https://") && !text.hasPrefix("/") {
                jwks = (folder as NSString).appendingPathComponent(text)
            }
        }
        guard let issuer, let audience, let jwks else { return nil }
        return ApiSettings.JWTSettings(issuer: issuer, audience: audience, jwks: jwks, names: names)
    }
}
