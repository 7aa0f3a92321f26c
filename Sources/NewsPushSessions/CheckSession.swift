import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel

#if canImport(Glibc)
    import Glibc
#endif

/// One feed fetched and parsed by `check --fetch`.
public struct FeedCheck: Sendable, Encodable {
    /// The feed's name (or its own title, or its URL).
    public var name: String
    /// The feed's URL as configured.
    public var url: String
    /// Whether it was fetched and read as a feed.
    public var ok: Bool
    /// rss2.0, rss0.9x, rss1.0 or atom1.0.
    public var format: String?
    /// How many items it holds.
    public var items: Int?
    /// Why it could not be read.
    public var error: String?
    /// What was wrong with it but did not stop the parse.
    public var problems: [String]
}

/// What `check` found: every check with its outcome and, with `--fetch`, every feed.
public struct CheckOutcome: Sendable {
    /// Every check of the config and the ledger.
    public var checks: [ConfigCheck]
    /// Each feed, with `--fetch`.
    public var feeds: [FeedCheck]?

    /// The problems in one line each (`check: detail`).
    public var problems: [String] {
        checks.filter { [.config, .ledger, .hub].contains($0.severity) }.map { "\($0.check): \($0.detail)" }
    }

    /// What works but is probably not meant, in one line each.
    public var warnings: [String] { checks.filter { $0.severity == .warning }.map { "\($0.check): \($0.detail)" } }
}

/// `check` as a session: the config's own checks, the ledger's folder and file, and with
/// `fetch` every feed through the run's own fetch → parse stage (its limits and parse budget).
public struct CheckSession: Sendable {
    /// The newsroom checked.
    public var context: SessionContext

    /// A check session for `context`.
    public init(context: SessionContext) {
        self.context = context
    }

    /// Every check; nothing is written and, without `fetch` or `hub`, nothing leaves the machine.
    /// With `hub`, the go-live check: one test push per format the config sends (`GoLiveCheck`).
    public func check(fetch: Bool, hub: Bool = false) -> CheckOutcome {
        let config = context.config
        var checks =
            ConfigCheck.run(config) + Self.ledgerChecks(config.statePath, firstRun: Self.firstRun(config))
            + secureReach()
        if hub {
            do {
                checks += GoLiveCheck(config: config, client: try context.hubClient()).run(now: context.clock.now())
                checks += deviceQuota()
            } catch {
                checks.append(ConfigCheck(check: "hub", severity: .config, detail: error.description))
            }
        }
        guard fetch else { return CheckOutcome(checks: checks, feeds: nil) }
        let reads = FeedReading.fetchAndRead(
            config.feeds, records: [:], settings: config.fetch, baseFolder: config.folder,
            now: context.clock.now())
        let feeds = zip(config.feeds, reads).map { feed, read in
            FeedCheck(
                name: feed.name ?? read.feed?.title ?? feed.url, url: feed.url, ok: read.feed != nil,
                format: read.feed?.format.rawValue, items: read.feed?.items.count,
                error: read.feed == nil ? read.error ?? "\(feed.url): not read" : nil,
                problems: read.feed?.problems ?? [])
        }
        return CheckOutcome(checks: checks, feeds: feeds)
    }

    /// For each id-only category, how many installations of the app back-end's index it
    /// reaches that cannot read its secure pushes (not signed in): they get its `secure_alert`,
    /// or nothing (a warning). Nothing when the index cannot be read or is empty.
    func secureReach() -> [ConfigCheck] {
        let idOnly = context.config.categories.filter { $0.value.format == .idOnly }
        guard !idOnly.isEmpty, let session = try? DeviceSession.open(context: context, reading: true),
            (try? session.counts().total) ?? 0 > 0
        else { return [] }
        return idOnly.sorted { $0.key.rawValue < $1.key.rawValue }.compactMap { category, settings in
            guard let count = try? session.count(expression: SecurePush.tags(settings.tags, readers: false)) else {
                return nil
            }
            let path = "categories.\(category.rawValue)"
            let detail =
                "\(count) installations of the app back-end's index reach \(category.rawValue) but cannot "
                + "read its secure pushes (not signed in)"
            guard count > 0 else { return ConfigCheck(check: path, severity: .ok, detail: detail) }
            if let alert = settings.secureAlert {
                return ConfigCheck(
                    check: path, severity: .ok, detail: detail + ": they get its secure_alert, '\(alert)'")
            }
            return ConfigCheck(
                check: path, severity: .warning,
                detail: detail + ": they get nothing (set secure_alert to show them a generic alert)")
        }
    }

    /// How near the index is to `api.max_installations` (past it, new anonymous installations
    /// are refused): a warning from 90 %. Nothing when the index cannot be read or is empty.
    func deviceQuota() -> [ConfigCheck] {
        guard let session = try? DeviceSession.open(context: context, reading: true),
            let total = try? session.counts().total, total > 0
        else { return [] }
        let cap = context.config.api.maxInstallations
        let share = Double(total) / Double(max(1, cap))
        let detail =
            "\(total) installations in the app back-end's index, \(Int((share * 100).rounded()))% of "
            + "api.max_installations (\(cap)); past it, new anonymous installations get 503"
        return [ConfigCheck(check: "api.max_installations", severity: share >= 0.9 ? .warning : .ok, detail: detail)]
    }

    /// What the first run does with the feeds' items: a baseline, a push of what is fresh, or
    /// each feed as its `first_run` says.
    static func firstRun(_ config: NewsPushConfig) -> String {
        let sends = config.feeds.filter { ($0.firstRun ?? config.policy.firstRun) == .send }.count
        switch sends {
        case 0: return "the first run records a baseline and pushes nothing"
        case config.feeds.count:
            return "the first run pushes every fresh item (first_run: send), within the budgets"
        default:
            return "the first run pushes the fresh items of \(sends) of \(config.feeds.count) feeds (their "
                + "first_run: send) and records a baseline of the others"
        }
    }

    /// The ledger's folder is there and writable, and the ledger (if any) can be read; `firstRun`
    /// says what a first run would do.
    static func ledgerChecks(_ configured: String, firstRun: String) -> [ConfigCheck] {
        if PostgresAddress.isPostgres(configured) { return [databaseCheck(configured)] }
        let path = LedgerLocation(configured: configured).databasePath
        let folder =
            (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            return [
                ConfigCheck(
                    check: "ledger folder", severity: .config, detail: "\(folder) does not exist (state: in the config)"
                )
            ]
        }
        // Not writable is a problem for runs; the ledger is still read, to say whether looking works.
        var checks = [
            access(folder, W_OK) == 0
                ? ConfigCheck(check: "ledger folder", severity: .ok, detail: "\(folder) is writable")
                : ConfigCheck(
                    check: "ledger folder", severity: .config,
                    detail: "\(folder) is not writable by this user: runs could not record anything")
        ]
        do {
            let ledger = try Ledger.open(configured: configured, access: .read)
            let detail =
                ledger.isNew ? "no ledger yet at \(path): \(firstRun)" : "\(path) can be read"
            checks.append(ConfigCheck(check: "ledger", severity: .ok, detail: detail))
        } catch {
            checks.append(ConfigCheck(check: "ledger", severity: .ledger, detail: error.description))
        }
        return checks
    }

    /// A PostgreSQL ledger: the database answers, and holds a ledger (or none yet).
    private static func databaseCheck(_ configured: String) -> ConfigCheck {
        do {
            let ledger = try Ledger.open(configured: configured, access: .read)
            let detail =
                ledger.isNew
                ? "no ledger yet in \(ledger.path): the first run (or `newspush state migrate`) creates it"
                : "\(ledger.path) can be read"
            return ConfigCheck(check: "ledger", severity: .ok, detail: detail)
        } catch {
            return ConfigCheck(check: "ledger", severity: .ledger, detail: error.description)
        }
    }
}
