import ArgumentParser
import Foundation
import Logging
import NIOCore
import NewsPushAPI
import NewsPushCore
import NewsPushHTTP
import NewsPushLedger
import NewsPushModel
import NewsPushSessions

struct ApiCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract:
            "The app back-end for phones (SPEC §9): devices register through it, so only newspush decides their tags.",
        discussion: """
            Serves JSON over HTTP on 127.0.0.1:8081 (put it behind a TLS reverse proxy). Several instances \
            may share one PostgreSQL ledger. Phones sign in with HTTP Basic (users of api.users, written \
            by `newspush api add-user`) or a bearer JWT (api.jwt); anonymous phones may carry topics only.
            """,
        subcommands: [Serve.self, AddUser.self],
        defaultSubcommand: Serve.self)

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve", abstract: "Serve the app back-end (the default: `newspush api --listen …`).")

        @OptionGroup var global: GlobalOptions

        @Option(help: "ADDRESS:PORT to listen on (0.0.0.0:8081 for every interface; [::1]:8081).")
        var listen = "127.0.0.1:8081"

        func validate() throws {
            _ = try Serving.address(listen)
        }

        func run() async throws {
            let context = global.context(try global.loadConfig())
            let address = try Serving.address(listen)
            let backend = try ApiBackend(context: context)
            let api = context.config.api
            Terminal.note(
                "api: topics \(api.topics.joined(separator: ", ")); anonymous installations "
                    + (api.anonymous ? "taken (topics only)" : "refused")
                    + (api.jwt.map { "; bearer tokens of \($0.issuer)" } ?? "") + "; Basic users from \(api.usersPath)")
            var logger = Logger(label: "newspush-api")
            logger.logLevel = .warning
            try await Serving.serve("api", listen: listen, address: address) { onReady in
                try await ApiServer.run(backend, address: address, logger: logger, onReady: onReady)
            }
        }
    }

    struct AddUser: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-user",
            abstract: "Add an app user for HTTP Basic (or set a user's role and password) in the api.users file.",
            discussion: """
                The password is read from standard input when it is not a terminal (one line), else asked \
                twice. Only its bcrypt hash is stored; the file is created with mode 0600.
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user's name (letters, digits, '.', '_', '-', '@').") var name: String

        @Option(help: "reader (registers their devices) or sender (also sends to users).")
        var role: ApiRole = .reader

        func run() throws {
            guard !ApiSettings.isReservedName(name) else {
                throw ValidationError(
                    "'\(name)' has a reserved form (h., basic:, jwt: are the back-end's own): choose another name")
            }
            try UsersFile<ApiRole>.addUser(
                name, role: role, path: try global.loadConfig(requireHub: false).api.usersPath)
        }
    }
}

extension ApiRole: ExpressibleByArgument {}

struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "The installations registered through `newspush api`: list, count, forget a reader, prune.",
        discussion: """
            Reads the ledger's installation index. Installations registered straight with the hub (the \
            Listen key in an app) are not in it and are not counted.
            """,
        subcommands: [List.self, Count.self, ForgetUser.self, Prune.self])

    struct ForgetUser: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget-user",
            abstract: "Remove every installation of a reader from the hub and the index (on the record, by whom).")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The user's name (as they sign in: the Basic name or the token's sub).") var name: String
        @Option(help: "Who asks, for the audit trail (default: the login name).") var editor: String?
        @Option(help: "text or json") var format: OutputFormat = .text

        func run() throws {
            let session = try DeviceSession.open(context: global.context(try global.loadConfig()))
            let outcome = try session.forget(user: name, by: editor ?? ReviewSession.loginName())
            session.forgetErasedCopies()
            if format == .json {
                Terminal.output(
                    JSONText.encode(["removed": outcome.removed, "hub_deletes_owed": outcome.failed.count]))
            } else {
                Terminal.output("\(outcome.removed) installations of \(name) removed from the hub and the index")
                for failure in outcome.failed { Terminal.note("still owed at the hub: \(failure)") }
            }
            if !outcome.failed.isEmpty { throw DevicesIncomplete(count: outcome.failed.count) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "Installations by id, with owner, platform, tags and when refreshed.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "Only this user's (\"\" for anonymous ones).") var owner: String?
        @Option(help: "Only this platform's (apns, fcmv1, wns).") var platform: String?
        @Option(help: "Only those carrying this tag.") var topic: String?
        @Option(help: "At most this many.") var limit = 1000
        @Option(help: "text or json") var format: OutputFormat = .text

        func run() throws {
            let session = try DeviceSession.open(context: global.context(try global.loadConfig()), reading: true)
            let rows = try session.list(
                InstallationFilter(owner: owner, platform: platform, tag: topic, limit: max(1, limit)))
            guard format == .text else { return Terminal.output(JSONText.encode(DevicesListing(rows))) }
            if rows.isEmpty { return Terminal.output("no installations") }
            for row in rows {
                Terminal.output(
                    "\(row.id)  \(row.platform)  \(row.owner ?? "(anonymous)")  [\(row.tags.joined(separator: ", "))]"
                        + "  refreshed \(Timestamp.format(row.refreshed))")
            }
        }
    }

    struct Count: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "count", abstract: "How many installations: in all, by owner kind, platform and topic.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "Only how many carry this tag.") var topic: String?
        @Option(help: "Only how many this tag expression reaches (\"World && !Sports\").") var tags: String?
        @Option(help: "text or json") var format: OutputFormat = .text

        func run() throws {
            let session = try DeviceSession.open(context: global.context(try global.loadConfig()), reading: true)
            let note = "installations registered through newspush api only (the index)"
            if tags != nil || topic != nil {
                let count = try tags.map(session.count(expression:)) ?? session.count(tag: topic ?? "")
                guard format == .text else {
                    let document = SelectionCount(
                        topic: tags == nil ? topic : nil, tags: tags, installations: count, counted: note)
                    return Terminal.output(JSONText.encode(document))
                }
                let line = tags.map { "\($0) reaches \(count)" } ?? "\(topic ?? ""): \(count)"
                return Terminal.output("\(line) installations (\(note))")
            }
            let counts = try session.counts()
            let cap = session.context.config.api.maxInstallations
            guard format == .text else {
                return Terminal.output(JSONText.encode(DevicesCounts(counts, note: note, maxInstallations: cap)))
            }
            var lines = [
                "\(counts.total) installations (\(note)): \(counts.signedIn) signed in, "
                    + "\(counts.total - counts.signedIn) anonymous",
                "  \(Int((Double(counts.total) / Double(max(1, cap)) * 100).rounded()))% of api.max_installations "
                    + "(\(cap)): past it, new anonymous installations are refused (503)",
            ]
            if counts.oldTemplates > 0 {
                lines.append(
                    "  \(counts.oldTemplates) still carry an older template set (each is written again at its next "
                        + "registration)")
            }
            for (platform, n) in counts.platforms.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(platform): \(n)")
            }
            for (topic, n) in counts.topics.sorted(by: { $0.key < $1.key }) { lines.append("  topic \(topic): \(n)") }
            Terminal.output(lines.joined(separator: "\n"))
        }
    }

    struct Prune: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune",
            abstract: "Delete from hub and index the installations not registered again within api.stale_after.",
            discussion: "Also finishes the deletes at the hub that an earlier removal could not make.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "text or json") var format: OutputFormat = .text

        func run() throws {
            let context = global.context(try global.loadConfig())
            let outcome = try DeviceSession.open(context: context).prune()
            if format == .json {
                Terminal.output(JSONText.encode(outcome))
            } else {
                let days = Int(context.config.api.staleAfter / 86400)
                Terminal.output(
                    "\(outcome.stale) installations not refreshed within \(days) days deleted; "
                        + "\(outcome.finished) owed hub deletes finished")
                for failure in outcome.failed { Terminal.note("still owed: \(failure)") }
            }
            if !outcome.failed.isEmpty { throw DevicesIncomplete(count: outcome.failed.count) }
        }
    }

    /// Some hub deletes could not be made (exit 2: partial).
    struct DevicesIncomplete: Error {
        var count: Int
    }
}

/// `devices list --format json`.
struct DevicesListing: Encodable {
    struct Row: Encodable {
        var id: String
        var owner: String?
        var platform: String
        var tags: [String]
        var language: String?
        var created: String
        var refreshed: String
    }

    var installations: [Row]

    init(_ records: [InstallationRecord]) {
        installations = records.map {
            Row(
                id: $0.id, owner: $0.owner, platform: $0.platform, tags: $0.tags, language: $0.language,
                created: Timestamp.format($0.created), refreshed: Timestamp.format($0.refreshed))
        }
    }
}

/// `devices count --format json`.
struct DevicesCounts: Encodable {
    var total: Int
    var signedIn: Int
    var anonymous: Int
    var platforms: [String: Int]
    var topics: [String: Int]
    var oldTemplates: Int
    var counted: String
    /// `api.max_installations`, and the share of it in use (past it, anonymous phones get 503).
    var maxInstallations: Int
    var quotaUsed: Double

    init(_ counts: InstallationCounts, note: String, maxInstallations: Int) {
        self.maxInstallations = maxInstallations
        quotaUsed = (Double(counts.total) / Double(max(1, maxInstallations)) * 1000).rounded() / 1000
        total = counts.total
        signedIn = counts.signedIn
        anonymous = counts.total - counts.signedIn
        platforms = counts.platforms
        topics = counts.topics
        oldTemplates = counts.oldTemplates
        counted = note
    }

    enum CodingKeys: String, CodingKey {
        case total, anonymous, platforms, topics, counted
        case signedIn = "signed_in"
        case oldTemplates = "old_templates"
        case maxInstallations = "max_installations"
        case quotaUsed = "quota_used"
    }
}

/// `devices count --topic T` or `--tags EXPR` with `--format json` (the one given).
struct SelectionCount: Encodable {
    var topic: String?
    var tags: String?
    var installations: Int
    var counted: String
}
