import ArgumentParser
import Foundation
import NewsPushCore

struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Inspect and maintain the ledger (stories, feeds, the outbox of pushes).",
        subcommands: [Show.self, Prune.self, Forget.self, CheckState.self, Export.self, Migrate.self])

    /// The options every state subcommand takes.
    struct Options: ParsableArguments {
        @OptionGroup var global: GlobalOptions

        @Option(help: "The ledger (default: `state` from the config).")
        var state: String?

        /// The configured ledger path: --state, else the config's.
        func path() throws -> String {
            if let state { return state }
            return try global.loadConfig().statePath
        }

        /// Opens the ledger to read; a missing ledger is an error here (nothing to show).
        func reading() throws -> Ledger {
            let path = try path()
            do {
                let ledger = try Ledger.open(configured: path, access: .read)
                if ledger.isNew { throw LedgerError.noLedger(path: ledger.path) }
                return ledger
            } catch let error as LedgerError {
                throw ExitStatus.failing(error)
            }
        }

        /// Takes the run lock and opens the ledger to change it.
        func writing() throws -> (LedgerLock, Ledger) {
            let path = try path()
            do {
                let lock = try LedgerLock(ledgerPath: LedgerLocation(configured: path).databasePath)
                return (lock, try Ledger.open(configured: path, access: .write))
            } catch {
                throw ExitStatus.failing(error)
            }
        }

        /// Runs a ledger call; its error is printed and becomes the exit status.
        func call<T>(_ body: () throws -> T) throws -> T {
            do { return try body() } catch let error as LedgerError { throw ExitStatus.failing(error) }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print what the ledger remembers, newest story first, with each story's push and why it failed.")
        @OptionGroup var options: Options
        @Option(help: "text or json (the same document as `state export`)") var format: OutputFormat = .text

        func run() throws {
            _ = options.global.bootstrapLogging()
            let ledger = try options.reading()
            let view = try options.call { try LedgerView.read(ledger) }
            Terminal.output(format == .json ? view.json() : view.text())
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the whole ledger as one JSON document.")
        @OptionGroup var options: Options

        func run() throws {
            _ = options.global.bootstrapLogging()
            let ledger = try options.reading()
            Terminal.output(try options.call { try LedgerView.read(ledger) }.json())
        }
    }

    struct Prune: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop stories no feed has listed for longer than state_retention (tombstones keep them from coming back).")
        @OptionGroup var options: Options
        @Option(help: "Retention instead of the config's state_retention, e.g. 7d.") var retention: String?

        func run() throws {
            _ = options.global.bootstrapLogging()
            let seconds: Double
            if let retention {
                guard let parsed = Durations.parse(retention) else { throw ValidationError("--retention '\(retention)' is not a duration") }
                seconds = parsed
            } else {
                seconds = try options.global.loadConfig().stateRetention
            }
            let (lock, ledger) = try options.writing()
            let removed = try options.call { try ledger.prune(retention: seconds, now: Date()) }
            let view = try options.call { try LedgerView.read(ledger) }
            withExtendedLifetime(lock) {}
            Terminal.output("pruned \(removed) stor\(removed == 1 ? "y" : "ies"); \(view.stories.count) kept, \(view.tombstones.count) tombstones")
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget one story (by its key, as `state show` prints it) so a later run treats it as new; its feeds are read in full next run.")
        @OptionGroup var options: Options
        @Argument(help: "The story key.") var id: String

        func run() throws {
            _ = options.global.bootstrapLogging()
            let (lock, ledger) = try options.writing()
            let found = try options.call { try ledger.forget(id) }
            withExtendedLifetime(lock) {}
            guard found else {
                Terminal.error("no story with key '\(id)' in \(ledger.path)")
                throw ExitCode(1)
            }
            Terminal.output("forgot \(id)")
        }
    }

    struct CheckState: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check", abstract: "Check that the ledger can be read and is consistent; exit 1 if not.")
        @OptionGroup var options: Options
        @Option(help: "text or json") var format: OutputFormat = .text

        struct Output: Encodable {
            var ledger: String
            var ok: Bool
            var schemaVersion: Int
            var summary: String
            var problems: [String]
            enum CodingKeys: String, CodingKey { case ledger, ok, summary, problems, schemaVersion = "schema_version" }
        }

        func run() throws {
            _ = options.global.bootstrapLogging()
            let ledger: Ledger
            do {
                ledger = try Ledger.open(configured: try options.path(), access: .read)
                if ledger.isNew { throw LedgerError.noLedger(path: ledger.path) }
            } catch let error as LedgerError {
                // An unusable ledger is the answer to the check, in either form.
                if format == .json {
                    Terminal.output(JSONText.encode(Output(ledger: LedgerLocation(configured: try options.path()).databasePath, ok: false,
                                                           schemaVersion: Ledger.schemaVersion, summary: "", problems: [error.description])))
                }
                throw ExitStatus.failing(error)
            }
            let problems = try options.call { try ledger.problems() }
            let view = try options.call { try LedgerView.read(ledger) }
            if format == .json {
                Terminal.output(JSONText.encode(Output(ledger: ledger.path, ok: problems.isEmpty, schemaVersion: Ledger.schemaVersion,
                                                       summary: view.summary, problems: problems)))
            } else {
                for problem in problems { Terminal.output("problem: \(problem)") }
                Terminal.output("\(ledger.path): schema \(Ledger.schemaVersion), \(view.summary)\(problems.isEmpty ? ": ok" : "")")
            }
            if !problems.isEmpty { throw ExitCode(1) }
        }
    }

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the ledger, or bring it to this version's schema; a JSON state file of earlier versions is migrated (kept as <name>.json.migrated).")
        @OptionGroup var options: Options

        func run() throws {
            _ = options.global.bootstrapLogging()
            let (lock, ledger) = try options.writing()
            withExtendedLifetime(lock) {}
            let how = ledger.migratedFrom.map { "migrated from \($0) (kept as \($0).migrated)" } ?? (ledger.isNew ? "created" : "up to date")
            Terminal.output("\(ledger.path): schema \(Ledger.schemaVersion), \(how)")
        }
    }
}
