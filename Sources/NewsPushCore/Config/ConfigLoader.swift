import Foundation
import NewsPushModel
import NotificationHubs
import Yams

/// Reads `feeds.yaml` (SPEC §4): expands `${VAR}`, applies defaults, parses durations and sizes,
/// and reports every problem with its file, line and key before anything touches the network.
public struct ConfigLoader: Sendable {
    /// Where `${VAR}` references are read from.
    public var environment: [String: String]
    /// Whether `hub:` must be complete and its connection string usable (false for commands
    /// that never talk to the hub).
    public var requireHub = true

    /// A loader reading `${VAR}` from `environment` (the process's by default).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Loads and validates the config at `path`.
    public func load(path: String) throws(ConfigError) -> NewsPushConfig {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigError(problems: [
                ConfigProblem(file: path, line: 0, key: "", message: "cannot read the file: \(Self.reason(error))")
            ])
        }
        return try parse(text, file: path)
    }

    /// Validates config text as if it were read from `file`.
    public func parse(_ text: String, file: String) throws(ConfigError) -> NewsPushConfig {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw ConfigError(problems: [Self.problem(from: error, file: file)])
        } catch {
            throw ConfigError(problems: [
                ConfigProblem(file: file, line: 0, key: "", message: "not valid YAML: \(error)")
            ])
        }
        let reader = NodeReader(file: file, environment: environment)
        guard let root, case .mapping = root else {
            throw ConfigError(problems: [
                ConfigProblem(
                    file: file, line: root?.mark?.line ?? 1, key: "",
                    message: "the file must be a mapping with hub, feeds and other keys")
            ])
        }
        let config = readConfig(root, reader: reader, file: file)
        if !reader.problems.isEmpty { throw ConfigError(problems: reader.problems) }
        guard let config else {
            throw ConfigError(problems: [
                ConfigProblem(file: file, line: 1, key: "", message: "incomplete configuration")
            ])
        }
        return config
    }

    private func readConfig(_ root: Node, reader: NodeReader, file: String) -> NewsPushConfig? {
        let top = reader.mapping(
            root, path: "",
            allowed: [
                "hub", "state", "state_retention", "fetch", "policy", "categories", "feeds",
                "importance_rules", "link_params", "review", "desk", "api", "watch",
            ])
        let folder = (file as NSString).deletingLastPathComponent
        let before = reader.problems.count
        let hub = readHub(top["hub"], root: root, reader: reader)
        // Commands that never talk to the hub (the ledger's and the review queue's) do not need
        // its key: what is wrong with `hub:` is theirs to ignore.
        if !requireHub { reader.dropProblems(after: before) }
        let (statePath, retention) = readState(top, folder: folder, reader: reader)
        let fetch = top["fetch"].map { readFetch($0, reader: reader) } ?? FetchSettings()
        let policy = top["policy"].map { readPolicy($0, reader: reader) } ?? PolicySettings()
        let categories = readCategories(top["categories"], reader: reader)
        let feeds = readFeeds(top["feeds"], root: root, reader: reader)
        var config = NewsPushConfig(
            file: file, hub: HubSettings(name: "", connectionString: "", apiVersion: ""), statePath: statePath,
            stateRetention: retention, fetch: fetch, policy: policy, categories: categories, feeds: feeds)
        if let node = top["importance_rules"] { config.importanceRules = importanceRules(node, reader: reader) }
        if let node = top["link_params"] { config.linkParams = readLinkParams(node, reader: reader) }
        if let node = top["review"] { config.review = readReview(node, reader: reader) }
        (config.deskUsersPath, config.deskTrustedProxies) = readDesk(top["desk"], folder: folder, reader: reader)
        config.api = readApi(
            top["api"], folder: folder, categoryTags: Self.tags(of: categories), tier: hub?.tier ?? .standard,
            reader: reader)
        if let node = top["watch"] { config.watch = readWatch(node, reader: reader) }
        guard let hub else { return requireHub ? nil : config }
        config.hub = hub
        return config
    }

    /// `hub:`: name, connection string, endpoint, version, concurrency, timeout, retries.
    private func readHub(_ hubNode: Node?, root: Node, reader: NodeReader) -> HubSettings? {
        guard let hubNode else {
            reader.report(root, "hub", "is required (name and connection_string of the Notification Hub)")
            return nil
        }
        let m = reader.mapping(
            hubNode, path: "hub",
            allowed: [
                "name", "connection_string", "connection_string_file", "endpoint",
                "api_version", "concurrency", "timeout", "retries", "retry_delay", "tier",
            ])
        let name = m["name"].flatMap { reader.string($0, path: "hub.name") }
        let connection = m.present ? connectionString(m, hubNode: hubNode, reader: reader) : nil
        let endpoint = m["endpoint"].flatMap { reader.url($0, path: "hub.endpoint", schemes: ["http", "https"]) }
        let apiVersion = m["api_version"].flatMap { reader.string($0, path: "hub.api_version") } ?? "2020-06"
        if m.present, m["name"] == nil {
            reader.report(hubNode, "hub.name", "is required (the hub's name, the path of its URL)")
        }
        if let name, let nameNode = m["name"],
            !name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) || name.isEmpty
        {
            reader.report(
                nameNode, "hub.name", "'\(reader.written(nameNode))' is not a hub name (letters, digits, - _ . only)")
        }
        let concurrency = m["concurrency"].flatMap { reader.integer($0, path: "hub.concurrency", range: 1...64) } ?? 8
        guard let name, let connection else { return nil }
        var settings = HubSettings(
            name: name, connectionString: connection, endpoint: endpoint, apiVersion: apiVersion,
            concurrency: concurrency)
        if let n = m["timeout"], let v = reader.duration(n, path: "hub.timeout") {
            if v >= 1 { settings.timeout = v } else { reader.report(n, "hub.timeout", "must be at least 1s") }
        }
        if let n = m["retries"], let v = reader.integer(n, path: "hub.retries", range: 0...10) { settings.retries = v }
        if let n = m["retry_delay"], let v = reader.duration(n, path: "hub.retry_delay") { settings.retryDelay = v }
        if let n = m["tier"], let v = reader.string(n, path: "hub.tier") {
            if let tier = HubTier(rawValue: v.lowercased()) {
                settings.tier = tier
            } else {
                reader.report(n, "hub.tier", "'\(v)' is not a tier (free, basic, standard)")
            }
        }
        return settings
    }

    /// `state:` (relative to the config's folder) and `state_retention:`.
    private func readState(_ top: NodeReader.MappingView, folder: String, reader: NodeReader) -> (
        path: String, retention: Double
    ) {
        var statePath = "newspush-state.db"
        if let node = top["state"], PostgresAddress.isPostgres(reader.written(node)) {
            statePath = postgresURL(node, reader: reader)
        } else {
            if let node = top["state"], let value = reader.string(node, path: "state") { statePath = value }
            if !statePath.hasPrefix("/") { statePath = (folder as NSString).appendingPathComponent(statePath) }
        }
        var retention: Double = 30 * 86400
        if let node = top["state_retention"], let value = reader.duration(node, path: "state_retention") {
            retention = value
        }
        return (statePath, retention)
    }

    /// `state: postgres://…`, kept as written: the password's `${VAR}` is read when connecting,
    /// so the password is never part of the config's values. A literal password, or a
    /// reference anywhere else, is a problem.
    private func postgresURL(_ node: Node, reader: NodeReader) -> String {
        let written = reader.written(node).trimmingCharacters(in: .whitespaces)
        do {
            let address = try PostgresAddress(written, environment: reader.environment)
            if written.replacingOccurrences(of: "${\(address.passwordVariable ?? "")}", with: "").contains("${") {
                reader.report(
                    node, "state",
                    "only the password may be a ${VAR} reference in a postgres:// URL (PGHOST, PGUSER, PGDATABASE "
                        + "name the rest)")
            } else if let name = address.passwordVariable, reader.environment[name] == nil {
                reader.report(node, "state", "environment variable \(name) (the database password) is not set")
            }
        } catch {
            reader.report(node, "state", error.message)
        }
        return written
    }

    /// `watch:` (SPEC §10): the schedule, the listener, WebSub, the leases and the ping tokens.
    private func readWatch(_ node: Node, reader: NodeReader) -> WatchSettings {
        var watch = WatchSettings()
        let m = reader.mapping(
            node, path: "watch",
            allowed: [
                "interval", "min_interval", "max_interval", "listen", "callback_url", "websub", "lease", "ping_tokens",
                "hubs",
            ])
        if let n = m["interval"], let v = reader.duration(n, path: "watch.interval") { watch.interval = v }
        if let n = m["min_interval"], let v = reader.duration(n, path: "watch.min_interval") { watch.minInterval = v }
        if let n = m["max_interval"], let v = reader.duration(n, path: "watch.max_interval") { watch.maxInterval = v }
        if watch.minInterval < 1 { reader.report(node, "watch.min_interval", "must be at least 1s") }
        if !(watch.minInterval...max(watch.minInterval, watch.maxInterval)).contains(watch.interval)
            || watch.minInterval > watch.maxInterval
        {
            reader.report(node, "watch", "needs min_interval ≤ interval ≤ max_interval")
        }
        if let n = m["listen"], let v = reader.string(n, path: "watch.listen") {
            if v.lowercased() == "off" {
                watch.listen = nil
            } else if WatchSettings.isListenAddress(v) {
                watch.listen = v
            } else {
                reader.report(n, "watch.listen", "must be HOST:PORT (127.0.0.1:8082, [::1]:8082) or off, not '\(v)'")
            }
        }
        if let n = m["callback_url"] {
            watch.callbackURL = reader.url(n, path: "watch.callback_url", schemes: ["http", "https"])
        }
        if let n = m["websub"], let v = reader.string(n, path: "watch.websub") {
            switch v.lowercased() {
            case "auto": watch.webSub = true
            case "off": watch.webSub = false
            default: reader.report(n, "watch.websub", "must be auto or off (a feed names its own hub), not '\(v)'")
            }
        }
        if let n = m["lease"], let v = reader.duration(n, path: "watch.lease") {
            if v < 1 { reader.report(n, "watch.lease", "must be at least 1s") } else { watch.lease = v }
        }
        if let n = m["ping_tokens"], let v = reader.string(n, path: "watch.ping_tokens") {
            watch.pingTokens = readPingTokens(n, text: v, reader: reader)
        }
        if let n = m["hubs"] { readHubs(n, into: &watch, reader: reader) }
        return watch
    }

    /// `watch.hubs: {private: allow|deny, http: allow|deny}`: which WebSub hubs may be
    /// subscribed to besides public ones over https.
    private func readHubs(_ node: Node, into watch: inout WatchSettings, reader: NodeReader) {
        let m = reader.mapping(node, path: "watch.hubs", allowed: ["private", "http"])
        for (key, path) in [("private", "watch.hubs.private"), ("http", "watch.hubs.http")] {
            guard let n = m[key], let v = reader.string(n, path: path) else { continue }
            switch v.lowercased() {
            case "allow", "deny":
                if key == "private" {
                    watch.privateHubs = v.lowercased() == "allow"
                } else {
                    watch.httpHubs = v.lowercased() == "allow"
                }
            default: reader.report(n, path, "must be allow or deny, not '\(v)'")
            }
        }
    }

    /// `watch.ping_tokens`: `name=token,…` (usually from the environment); a token is at least
    /// 16 characters, so it cannot be guessed by trying.
    private func readPingTokens(_ node: Node, text: String, reader: NodeReader) -> [String: String] {
        var tokens: [String: String] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, parts[1].count >= 16 else {
                // The token itself is never repeated in a message.
                reader.report(
                    node, "watch.ping_tokens",
                    "each entry is FEED=TOKEN with a token of at least 16 characters; '\(parts.first ?? "")' is not")
                continue
            }
            tokens[parts[0]] = parts[1]
        }
        return tokens
    }

    /// `fetch:`: concurrency, per-host limit, timeout, size limit, contact, parse budget.
    private func readFetch(_ node: Node, reader: NodeReader) -> FetchSettings {
        var fetch = FetchSettings()
        let m = reader.mapping(
            node, path: "fetch",
            allowed: ["concurrency", "per_host", "timeout", "max_bytes", "contact", "parse_budget"])
        if let n = m["parse_budget"], let v = reader.duration(n, path: "fetch.parse_budget") {
            if v > 0 { fetch.parseBudget = v } else { reader.report(n, "fetch.parse_budget", "must be more than 0") }
        }
        if let n = m["concurrency"], let v = reader.integer(n, path: "fetch.concurrency", range: 1...1000) {
            fetch.concurrency = v
        }
        if let n = m["per_host"], let v = reader.integer(n, path: "fetch.per_host", range: 1...100) {
            fetch.perHost = v
        }
        if let n = m["timeout"], let v = reader.duration(n, path: "fetch.timeout") { fetch.timeout = v }
        if let n = m["max_bytes"], let v = reader.size(n, path: "fetch.max_bytes") { fetch.maxBytes = v }
        if let n = m["contact"], let v = reader.string(n, path: "fetch.contact") { fetch.contact = v }
        return fetch
    }

    /// `policy:`: freshness, budgets, quiet hours, confidence, first run.
    private func readPolicy(_ node: Node, reader: NodeReader) -> PolicySettings {
        var policy = PolicySettings()
        let m = reader.mapping(
            node, path: "policy", allowed: ["max_age", "budget", "quiet_hours", "first_run", "min_confidence"])
        if let n = m["max_age"], let v = reader.duration(n, path: "policy.max_age") { policy.maxAge = v }
        if let n = m["budget"] {
            let b = reader.mapping(n, path: "policy.budget", allowed: ["per_category", "per"])
            if let n = b["per_category"],
                let v = reader.integer(n, path: "policy.budget.per_category", range: 0...10000)
            {
                policy.budgetPerCategory = v
            }
            if let n = b["per"], let v = reader.duration(n, path: "policy.budget.per") { policy.budgetWindow = v }
        }
        if let n = m["quiet_hours"] { policy.quietHours = readQuietHours(n, reader: reader) }
        if let n = m["min_confidence"], let text = reader.string(n, path: "policy.min_confidence") {
            if let v = Double(text), (0...1).contains(v) {
                policy.minConfidence = v
            } else {
                reader.report(n, "policy.min_confidence", "must be a number from 0 to 1, not '\(reader.written(n))'")
            }
        }
        if let n = m["first_run"], let v = reader.string(n, path: "policy.first_run") {
            if let mode = PolicySettings.FirstRun(rawValue: v) {
                policy.firstRun = mode
            } else {
                reader.report(n, "policy.first_run", "must be baseline or send, not '\(reader.written(n))'")
            }
        }
        return policy
    }

    /// `policy.quiet_hours:`: from, to (HH:MM) and the time zone.
    private func readQuietHours(_ n: Node, reader: NodeReader) -> QuietHours? {
        let q = reader.mapping(n, path: "policy.quiet_hours", allowed: ["from", "to", "timezone"])
        let from = q["from"].flatMap { reader.clockTime($0, path: "policy.quiet_hours.from") }
        let to = q["to"].flatMap { reader.clockTime($0, path: "policy.quiet_hours.to") }
        var zone: TimeZone? = TimeZone(identifier: "UTC")
        var zoneName = "UTC"
        if let z = q["timezone"], let name = reader.string(z, path: "policy.quiet_hours.timezone") {
            zone = TimeZone(identifier: name)
            zoneName = name
            if zone == nil {
                reader.report(
                    z, "policy.quiet_hours.timezone",
                    "unknown time zone '\(reader.written(z))' (use an IANA name such as Europe/London)")
            }
        }
        if q.present, q["from"] == nil || q["to"] == nil {
            reader.report(n, "policy.quiet_hours", "needs both from and to (HH:MM)")
        }
        guard let from, let to, let zone else { return nil }
        return QuietHours(from: from, to: to, timeZone: zone, zoneName: zoneName)
    }

    /// `categories:`: every category, with the file's settings over the defaults.
    private func readCategories(_ node: Node?, reader: NodeReader) -> [NewsCategory: CategorySettings] {
        var categories: [NewsCategory: CategorySettings] = [:]
        for category in NewsCategory.allCases {
            categories[category] = CategorySettings(tags: category.rawValue, message: CategorySettings.defaultMessage)
        }
        guard let node else { return categories }
        for (keyNode, valueNode) in reader.pairs(node, path: "categories") {
            guard let name = reader.string(keyNode, path: "categories") else { continue }
            let path = "categories.\(name)"
            guard let category = reader.category(keyNode, name: name, path: path) else { continue }
            categories[category] = readCategory(
                valueNode, path: path,
                into: categories[category]
                    ?? CategorySettings(
                        tags: category.rawValue, message: CategorySettings.defaultMessage), reader: reader)
        }
        return categories
    }

    /// One category's tags, message, format and alert settings.
    private func readCategory(_ valueNode: Node, path: String, into defaults: CategorySettings, reader: NodeReader)
        -> CategorySettings
    {
        var settings = defaults
        let m = reader.mapping(
            valueNode, path: path,
            allowed: [
                "tags", "message", "format", "expiry", "importance", "messages",
                "names", "max_length", "secure_alert",
            ])
        if let n = m["tags"], let tags = reader.string(n, path: "\(path).tags") {
            do {
                try TagExpression.validate(tags)
                settings.tags = tags
            } catch {
                // The validator quotes the expression: only when the file wrote it whole.
                reader.report(
                    n, "\(path).tags",
                    reader.isExpanded(n)
                        ? "'\(reader.written(n))' is not a tag expression once its references are expanded"
                        : error.description)
            }
        }
        if let n = m["message"], let message = reader.string(n, path: "\(path).message") {
            let unknown = MessageTemplate.placeholders(in: message).subtracting(CategorySettings.placeholders)
            if !unknown.isEmpty {
                reader.report(
                    n, "\(path).message",
                    MessageTemplate.unknownProblem(unknown, known: "{category} {title} {source} {url} {summary}"))
            } else if MessageTemplate.rendersBlank(message) {
                reader.report(n, "\(path).message", MessageTemplate.blankProblem)
            } else {
                settings.message = message
            }
        }
        if let n = m["format"], let value = reader.string(n, path: "\(path).format") {
            if let format = PushFormat(rawValue: value) {
                settings.format = format
            } else {
                reader.report(
                    n, "\(path).format",
                    "must be one of \(PushFormat.allCases.map(\.rawValue).joined(separator: ", ")), not '\(reader.written(n))'"
                )
            }
        }
        readAlertSettings(m, path: path, into: &settings, reader: reader)
        readSecureAlert(m, path: path, into: &settings, reader: reader)
        // An id-only push goes to the category's expression and the signed-in tag (SPEC §9):
        // that expression too must be one the hub takes (at most 6 tags once it has an &&).
        if settings.format == .idOnly,
            (try? TagExpression.validate("(\(settings.tags)) && \(ApiSettings.readerTag)")) == nil
        {
            reader.report(
                m["tags"] ?? m["format"] ?? valueNode, "\(path).tags",
                "an id-only category's pushes go to its tags && \(ApiSettings.readerTag) (the devices that can "
                    + "read them), which the hub allows with at most 5 tags here")
        }
        return settings
    }

    /// A category's `secure_alert`: the generic alert of an id-only category's anonymous readers.
    private func readSecureAlert(
        _ m: NodeReader.MappingView, path: String, into settings: inout CategorySettings, reader: NodeReader
    ) {
        guard let n = m["secure_alert"], let alert = reader.string(n, path: "\(path).secure_alert") else { return }
        let unknown = MessageTemplate.placeholders(in: alert).subtracting(["category"])
        if settings.format != .idOnly {
            reader.report(
                n, "\(path).secure_alert",
                "is for categories with format: id-only (it replaces their silent Apple push)")
        } else if !unknown.isEmpty {
            reader.report(
                n, "\(path).secure_alert",
                MessageTemplate.unknownProblem(unknown, known: "{category}; nothing of the story may be in it"))
        } else if MessageTemplate.rendersBlank(alert) {
            reader.report(n, "\(path).secure_alert", "is blank: give the text of the generic alert")
        } else {
            settings.secureAlert = alert
        }
    }

    /// `feeds:`: each feed's URL (each once), name (each once), section, first run, language.
    private func readFeeds(_ node: Node?, root: Node, reader: NodeReader) -> [FeedSettings] {
        guard let node else {
            reader.report(root, "feeds", "is required: a list of feeds, each with a url")
            return []
        }
        var feeds: [FeedSettings] = []
        var seenURLs: [String: Int] = [:]
        var seenNames: [String: Int] = [:]
        for (index, item) in reader.elements(node, path: "feeds").enumerated() {
            if let feed = readFeed(
                item, path: "feeds[\(index)]", seenURLs: &seenURLs, seenNames: &seenNames, reader: reader)
            {
                feeds.append(feed)
            }
        }
        return feeds
    }

    /// One feed of `feeds:`.
    private func readFeed(
        _ item: Node, path: String, seenURLs: inout [String: Int], seenNames: inout [String: Int],
        reader: NodeReader
    ) -> FeedSettings? {
        let m = reader.mapping(
            item, path: path, allowed: ["url", "name", "category", "first_run", "language", "websub"])
        guard m.present else { return nil }
        let line = item.mark?.line ?? 0
        guard let urlNode = m["url"] else {
            reader.report(item, "\(path).url", "is required")
            return nil
        }
        let name = m["name"].flatMap { reader.string($0, path: "\(path).name") }
        if let name, let nameNode = m["name"] {
            if let first = seenNames[name] {
                reader.report(
                    nameNode, "\(path).name",
                    "the name '\(reader.written(nameNode))' is already used at line \(first): --feed and the report need "
                        + "each name once")
            }
            seenNames[name] = line
        }
        guard let url = reader.url(urlNode, path: "\(path).url", schemes: ["http", "https", "file", ""]) else {
            return nil
        }
        let identity = Self.feedIdentity(url)
        if let first = seenURLs[identity] {
            reader.report(urlNode, "\(path).url", "the same feed is already listed at line \(first)")
        }
        seenURLs[identity] = line
        var category: NewsCategory?
        if let n = m["category"], let value = reader.string(n, path: "\(path).category") {
            category = reader.category(n, name: value, path: "\(path).category")
        }
        var firstRun: PolicySettings.FirstRun?
        if let n = m["first_run"], let v = reader.string(n, path: "\(path).first_run") {
            firstRun = PolicySettings.FirstRun(rawValue: v)
            if firstRun == nil {
                reader.report(n, "\(path).first_run", "must be baseline or send, not '\(reader.written(n))'")
            }
        }
        let language = m["language"].flatMap { reader.language($0, path: "\(path).language") }
        var feed = FeedSettings(
            url: url, name: name, category: category, firstRun: firstRun, language: language, line: line)
        if let n = m["websub"], let v = reader.string(n, path: "\(path).websub") {
            feed.webSub =
                v.lowercased() == "off"
                ? .off : reader.url(n, path: "\(path).websub", schemes: ["http", "https"]).map { .hub($0) }
        }
        return feed
    }

    /// `link_params:`: query parameters added to every pushed URL, in order.
    private func readLinkParams(_ node: Node, reader: NodeReader) -> [(name: String, value: String)] {
        var params: [(name: String, value: String)] = []
        for (keyNode, valueNode) in reader.pairs(node, path: "link_params") {
            guard let name = reader.string(keyNode, path: "link_params"),
                let value = reader.string(valueNode, path: "link_params.\(name)")
            else { continue }
            if name.isEmpty { reader.report(keyNode, "link_params", "a parameter needs a name") }
            params.append((name, value))
        }
        return params
    }

    /// `expiry`, `importance`, `messages`, `names` and `max_length` of a category.
    private func readAlertSettings(
        _ m: NodeReader.MappingView, path: String, into settings: inout CategorySettings, reader: NodeReader
    ) {
        if let n = m["expiry"], let v = reader.duration(n, path: "\(path).expiry") {
            if v >= 1 && v <= 28 * 86400 {
                settings.expiry = v
            } else {
                reader.report(
                    n, "\(path).expiry", "must be between 1s and 28d (APNs and FCM keep an alert at most four weeks)")
            }
        }
        if let n = m["importance"], let v = reader.string(n, path: "\(path).importance") {
            if let importance = Importance(rawValue: v) {
                settings.importance = importance
            } else {
                reader.report(n, "\(path).importance", "must be major or minor, not '\(reader.written(n))'")
            }
        }
        if let n = m["max_length"], let v = reader.integer(n, path: "\(path).max_length", range: 20...4000) {
            settings.maxLength = v
        }
        if let n = m["messages"] {
            for (keyNode, valueNode) in reader.pairs(n, path: "\(path).messages") {
                guard let language = reader.language(keyNode, path: "\(path).messages"),
                    let template = reader.string(valueNode, path: "\(path).messages.\(language)")
                else { continue }
                let unknown = MessageTemplate.placeholders(in: template).subtracting(CategorySettings.placeholders)
                if unknown.isEmpty, MessageTemplate.rendersBlank(template) {
                    reader.report(valueNode, "\(path).messages.\(language)", MessageTemplate.blankProblem)
                } else if unknown.isEmpty {
                    settings.messages[language] = template
                } else {
                    reader.report(valueNode, "\(path).messages.\(language)", MessageTemplate.unknownProblem(unknown))
                }
            }
        }
        if let n = m["names"] {
            for (keyNode, valueNode) in reader.pairs(n, path: "\(path).names") {
                guard let language = reader.language(keyNode, path: "\(path).names"),
                    let name = reader.string(valueNode, path: "\(path).names.\(language)")
                else { continue }
                settings.names[language] = name
            }
        }
    }

    /// `desk: {users: desk-users.yaml, trusted_proxies: [127.0.0.1]}`: the users file's absolute
    /// path (relative to the config's folder; that name beside the config when not given), and
    /// the reverse proxies whose `X-Forwarded-For` and `X-Forwarded-Proto` the desk believes.
    private func readDesk(_ node: Node?, folder: String, reader: NodeReader) -> (String, [String]) {
        var path = "desk-users.yaml"
        var proxies: [String] = []
        if let node {
            let m = reader.mapping(node, path: "desk", allowed: ["users", "trusted_proxies"])
            if let users = m["users"], let value = reader.string(users, path: "desk.users") { path = value }
            if let list = m["trusted_proxies"] {
                for element in reader.elements(list, path: "desk.trusted_proxies") {
                    guard let address = reader.string(element, path: "desk.trusted_proxies") else { continue }
                    guard Self.isIPAddress(address) else {
                        reader.report(element, "desk.trusted_proxies", "'\(address)' is not an IP address")
                        continue
                    }
                    proxies.append(address)
                }
            }
        }
        return (path.hasPrefix("/") ? path : (folder as NSString).appendingPathComponent(path), proxies)
    }

    /// The tags the categories' expressions name, in category order (the default `api.topics`).
    static func tags(of categories: [NewsCategory: CategorySettings]) -> [String] {
        var seen = Set<String>()
        return NewsCategory.allCases.flatMap { category -> [String] in
            let expression = categories[category]?.tags ?? category.rawValue
            return expression.split { !ApiSettings.isTag(String($0)) }.map(String.init)
                .filter { seen.insert($0).inserted }
        }
    }

    /// Whether `text` is an IPv4 or IPv6 address (no names: a proxy is trusted by its address).
    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// `review: {rules: [{category: Politics, mode: review}, …], notify: {tags: "newsroom-editors"}}`.
    private func readReview(_ node: Node, reader: NodeReader) -> ReviewSettings {
        let m = reader.mapping(node, path: "review", allowed: ["rules", "notify"])
        var settings = ReviewSettings()
        if let rules = m["rules"] {
            for (index, item) in reader.elements(rules, path: "review.rules").enumerated() {
                if let rule = readReviewRule(item, index: index, reader: reader) { settings.rules.append(rule) }
            }
        }
        if let notify = m["notify"] {
            let n = reader.mapping(notify, path: "review.notify", allowed: ["tags"])
            if let tags = n["tags"] {
                settings.notifyTags = reader.string(tags, path: "review.notify.tags")
            } else {
                reader.report(notify, "review.notify", "needs tags (the editors' tag expression)")
            }
        }
        return settings
    }

    /// One `review.rules` entry: at least one condition, and a mode.
    private func readReviewRule(_ item: Node, index: Int, reader: NodeReader) -> ReviewRule? {
        let path = "review.rules[\(index)]"
        let m = reader.mapping(item, path: path, allowed: ["category", "feed", "title", "mode"])
        guard m.present else { return nil }
        var rule = ReviewRule(mode: .review, index: index)
        if let n = m["category"], let v = reader.string(n, path: "\(path).category") {
            rule.category = NewsCategory(rawValue: v)
            if rule.category == nil {
                let names = NewsCategory.allCases.map(\.rawValue).joined(separator: ", ")
                reader.report(n, "\(path).category", "'\(reader.written(n))' is not one of \(names)")
            }
        }
        if let n = m["feed"] { rule.feed = reader.string(n, path: "\(path).feed") }
        if let n = m["title"], let pattern = reader.string(n, path: "\(path).title") {
            if (try? NSRegularExpression(pattern: pattern)) == nil {
                reader.report(n, "\(path).title", "'\(reader.written(n))' is not a regular expression")
            }
            rule.title = pattern
        }
        if let n = m["mode"], let v = reader.string(n, path: "\(path).mode") {
            if let mode = ReviewRule.Mode(rawValue: v) {
                rule.mode = mode
            } else {
                reader.report(n, "\(path).mode", "must be auto or review, not '\(reader.written(n))'")
            }
        } else {
            reader.report(item, path, "needs mode (auto or review)")
        }
        if rule.category == nil && rule.feed == nil && rule.title == nil {
            reader.report(item, path, "needs category, feed or title (a regular expression)")
        }
        return rule
    }

    /// `importance_rules: [{title: "^(BREAKING|LIVE):"}, {feed: "Wire", importance: minor}]`.
    private func importanceRules(_ node: Node, reader: NodeReader) -> [ImportanceRule] {
        var rules: [ImportanceRule] = []
        for (index, item) in reader.elements(node, path: "importance_rules").enumerated() {
            let path = "importance_rules[\(index)]"
            let m = reader.mapping(item, path: path, allowed: ["title", "feed", "importance"])
            guard m.present else { continue }
            var rule = ImportanceRule()
            if let n = m["title"], let pattern = reader.string(n, path: "\(path).title") {
                if (try? NSRegularExpression(pattern: pattern)) == nil {
                    reader.report(n, "\(path).title", "'\(reader.written(n))' is not a regular expression")
                }
                rule.title = pattern
            }
            if let n = m["feed"] { rule.feed = reader.string(n, path: "\(path).feed") }
            if let n = m["importance"], let v = reader.string(n, path: "\(path).importance") {
                if let importance = Importance(rawValue: v) {
                    rule.importance = importance
                } else {
                    reader.report(n, "\(path).importance", "must be major or minor, not '\(reader.written(n))'")
                }
            }
            if rule.title == nil && rule.feed == nil {
                reader.report(item, path, "needs title (a regular expression) or feed (a feed's name or URL)")
            }
            rules.append(rule)
        }
        return rules
    }

    /// The hub's connection string, from `connection_string: ${VAR}` (the whole value one
    /// reference) or `connection_string_file: ${VAR}/name` (a file named through a reference,
    /// such as systemd's `$CREDENTIALS_DIRECTORY`). Anything else is refused, however the key is
    /// spelt: a key written into the file, or glued to other text around a reference, is never
    /// used. Problems name the key and the part that is wrong, never the value.
    private func connectionString(_ m: NodeReader.MappingView, hubNode: Node, reader: NodeReader) -> String? {
        let reference = #/\$\{[A-Za-z_][A-Za-z0-9_]*\}/#
        switch (m["connection_string"], m["connection_string_file"]) {
        case (nil, nil):
            reader.report(hubNode, "hub.connection_string", "is required; use ${NEWSPUSH_HUB_CONNECTION_STRING}")
            return nil
        case (.some(let node), .some):
            reader.report(node, "hub", "give connection_string or connection_string_file, not both")
            return nil
        case (.some(let node), nil):
            let raw = (node.scalar?.string ?? "").trimmingCharacters(in: .whitespaces)
            guard (try? reference.wholeMatch(in: raw)) != nil else {
                reader.report(
                    node, "hub.connection_string",
                    "must be one ${VAR} reference and nothing else: secrets never live in the file (the value was "
                        + "not used)"
                )
                return nil
            }
            return reader.string(node, path: "hub.connection_string").flatMap {
                validated($0, node: node, key: "hub.connection_string", reader: reader)
            }
        case (nil, .some(let node)):
            let raw = (node.scalar?.string ?? "").trimmingCharacters(in: .whitespaces)
            guard (try? reference.prefixMatch(in: raw)) != nil,
                let path = reader.string(node, path: "hub.connection_string_file")
            else {
                if node.scalar != nil {
                    reader.report(
                        node, "hub.connection_string_file",
                        "must start with a ${VAR} reference, e.g. ${CREDENTIALS_DIRECTORY}/hub-connection")
                }
                return nil
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                reader.report(node, "hub.connection_string_file", "cannot read \(reader.written(node))")
                return nil
            }
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return validated(text, node: node, key: "hub.connection_string_file", reader: reader)
        }
    }

    private func validated(_ connection: String, node: Node, key: String, reader: NodeReader) -> String? {
        do {
            _ = try HubConnectionString(parsing: connection)
            return connection
        } catch {
            reader.report(node, key, error.description)
            return nil
        }
    }

    /// A YAML error at the line where the problem starts: libyaml notices an unclosed `[` or
    /// quote only where the text runs out, and names the opening in its context.
    static func problem(from error: YamlError, file: String) -> ConfigProblem {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            if let context, context.mark.line > 0, context.mark.line < mark.line {
                return ConfigProblem(
                    file: file, line: context.mark.line, key: "",
                    message:
                        "not valid YAML: \(context.text) that starts here: \(problem) (noticed at line \(mark.line))")
            }
            return ConfigProblem(file: file, line: mark.line, key: "", message: "not valid YAML: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ConfigProblem(
                file: file, line: context.mark.line, key: duplicates.joined(separator: ", "), message: "key given twice"
            )
        default:
            return ConfigProblem(file: file, line: 0, key: "", message: "not valid YAML: \(error)")
        }
    }

    static func reason(_ error: any Error) -> String { SystemErrors.reason(error) }

    /// A feed URL as its server reads it: scheme and host in any case, a default port or an
    /// empty path name the same feed.
    static func feedIdentity(_ url: String) -> String {
        guard var components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else { return url }
        components.scheme = scheme
        components.host = components.host?.lowercased()
        if (scheme == "http" && components.port == 80) || (scheme == "https" && components.port == 443) {
            components.port = nil
        }
        if components.path.isEmpty { components.path = "/" }
        return components.string ?? url
    }
}
