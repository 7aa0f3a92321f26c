import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NewsPushSessions

struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Inspect and maintain the ledger (stories, feeds, the outbox of pushes).",
        subcommands: [
            Show.self, Prune.self, Forget.self, CheckState.self, Export.self, Migrate.self, Import.self,
        ])

    /// The options every state subcommand takes.
    struct Options: ParsableArguments {
        @OptionGroup var global: GlobalOptions

        @Option(help: "The ledger (default: `state` from the config).")
        var state: String?

        /// The configured ledger path: --state, else the config's.
        func path() throws(SessionError) -> String {
            if let state { return state }
            return try global.loadConfig(requireHub: false).statePath
        }

        /// The session over that ledger.
        func session() throws(SessionError) -> StateSession {
            _ = global.bootstrapLogging()
            return StateSession(location: try path(), clock: GlobalOptions.clock)
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print what the ledger remembers, newest story first, with each story's push and why it failed.")
        @OptionGroup var options: Options
        @Option(help: "text or json (the same document as `state export`)") var format: OutputFormat = .text

        func run() throws {
            let view = try options.session().view()
            Terminal.output(format == .json ? view.json() : view.text())
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the whole ledger as one JSON document.")
        @OptionGroup var options: Options

        func run() throws {
            Terminal.output(try options.session().view().json())
        }
    }

    struct Prune: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Drop stories no feed has listed for longer than state_retention (tombstones keep them from coming "
                + "back)."
        )
        @OptionGroup var options: Options
        @Option(help: "Retention instead of the config's state_retention, e.g. 7d.")
        var retention: String?

        func validate() throws {
            if let retention, Durations.parse(retention) == nil {
                throw ValidationError("--retention '\(retention)' is not a duration")
            }
        }

        func run() throws {
            let session = try options.session()
            let config = options.state == nil ? try options.global.loadConfig(requireHub: false) : nil
            let seconds = retention.flatMap(Durations.parse) ?? config?.stateRetention ?? 30 * 86400
            // A story pushed within max_age must stay known, or it could be pushed again.
            let maxAge = config?.policy.maxAge ?? PolicySettings().maxAge
            if let retention, seconds < maxAge {
                throw SessionError.usage(
                    "--retention \(retention) is shorter than policy.max_age (\(Int(maxAge)) s): a story "
                        + "pushed within max_age could be forgotten and pushed again; give at least the max_age")
            }
            let outcome = try session.prune(retention: seconds)
            let removed = outcome.removed
            Terminal.output(
                "pruned \(removed) stor\(removed == 1 ? "y" : "ies"); \(outcome.kept) kept, \(outcome.tombstones) "
                    + "tombstones"
            )
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Forget one story (by its key, as `state show` prints it) so a later run treats it as new; its "
                + "feeds are read in full next run."
        )
        @OptionGroup var options: Options
        @Argument(help: "The story key.") var id: String

        func run() throws {
            let session = try options.session()
            let found = try session.forget(id)
            if found {
                Terminal.output("forgot \(id)")
            } else {
                Terminal.error(
                    "no story with key '\(id)' in \(LedgerLocation(configured: session.location).databasePath)")
            }
            try ExitStatus.finish(ExitStatus.code(forgot: found))
        }
    }

    struct CheckState: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check", abstract: "Check that the ledger can be read and is consistent; exit 1 if not.")
        @OptionGroup var options: Options
        @Option(help: "text or json") var format: OutputFormat = .text

        func run() throws {
            let outcome = try options.session().check()
            if format == .json {
                // An unusable ledger is the answer to the check: one document either way.
                Terminal.output(JSONText.encode(outcome))
                if let error = outcome.error { Terminal.error(error.description) }
            } else if let error = outcome.error {
                Terminal.error(error.description)
            } else {
                for problem in outcome.problems { Terminal.output("problem: \(problem)") }
                Terminal.output(
                    "\(outcome.ledger): schema \(outcome.schemaVersion ?? Ledger.schemaVersion), \(outcome.summary)"
                        + (outcome.ok ? ": ok" : ""))
            }
            try ExitStatus.finish(ExitStatus.code(for: outcome))
        }
    }

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Create the ledger, or bring it to this version's schema; a JSON state file of earlier versions is "
                + "migrated (kept as <name>.json.migrated)."
        )
        @OptionGroup var options: Options

        func run() throws {
            let outcome = try options.session().migrate()
            let how =
                outcome.migratedFrom.map { "migrated from \($0) (kept as \($0).migrated)" }
                ?? (outcome.created ? "created" : "up to date")
            Terminal.output("\(outcome.path): schema \(outcome.schemaVersion), \(how)")
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Load a SQLite ledger, a PostgreSQL ledger (postgres://…), a JSON export or a legacy JSON state into "
                + "an empty ledger (the configured one, or --state), so the next run sends nothing old."
        )
        @OptionGroup var options: Options
        @Argument(help: "The ledger or file to load from.") var source: String

        func run() throws {
            let outcome = try options.session().importLedger(from: source)
            let rows = outcome.counts.rows.filter { $0.value > 0 }.sorted { $0.key < $1.key }
                .map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            Terminal.output(
                "\(outcome.ledger): loaded from a \(outcome.counts.kind): \(rows.isEmpty ? "nothing" : rows)")
        }
    }
}
