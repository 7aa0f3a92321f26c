import ArgumentParser
import Foundation
import NewsPushCore

struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Inspect and maintain the state file.",
        subcommands: [Show.self, Prune.self, Forget.self, CheckState.self])

    /// The options every state subcommand takes.
    struct Options: ParsableArguments {
        @OptionGroup var global: GlobalOptions

        @Option(help: "The state file (default: `state` from the config).")
        var state: String?

        /// The state file's path: --state, else the config's.
        func path() throws -> String {
            if let state { return state }
            return try global.loadConfig().statePath
        }

        func load(_ store: StateStore) throws -> NewsPushState {
            do {
                guard let state = try store.load() else {
                    Terminal.error("no state file at \(store.path) (no run has recorded anything yet)")
                    throw ExitCode(1)
                }
                return state
            } catch let error as StateError {
                Terminal.error(error.description)
                throw ExitCode(1)
            }
        }

        func locked(_ store: StateStore) throws {
            do { try store.lock() } catch {
                Terminal.error(error.description)
                if case .locked = error { throw ExitCode(75) }
                throw ExitCode(1)
            }
        }

        func save(_ state: NewsPushState, _ store: StateStore) throws {
            do { try store.save(state) } catch {
                Terminal.error(error.description)
                throw ExitCode(1)
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print what the state file remembers, newest first.")
        @OptionGroup var options: Options
        @Option(help: "text or json") var format: OutputFormat = .text

        func run() throws {
            _ = options.global.bootstrapLogging()
            let store = StateStore(path: try options.path())
            let state = try options.load(store)
            if format == .json {
                Terminal.output(StateReport.json(state))
                return
            }
            Terminal.output(StateReport.text(state, path: store.path))
        }
    }

    struct Prune: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop stories not seen in their feed for longer than state_retention (tombstones keep them from coming back).")
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
            let store = StateStore(path: try options.path())
            try options.locked(store)
            var state = try options.load(store)
            let removed = state.prune(retention: seconds, now: Date())
            try options.save(state, store)
            Terminal.output("pruned \(removed) stor\(removed == 1 ? "y" : "ies"); \(state.stories.count) kept, \(state.tombstones.count) tombstones")
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget one story (by its key, as `state show` prints it) so a later run treats it as new.")
        @OptionGroup var options: Options
        @Argument(help: "The story key.") var id: String

        func run() throws {
            _ = options.global.bootstrapLogging()
            let store = StateStore(path: try options.path())
            try options.locked(store)
            var state = try options.load(store)
            guard state.stories.removeValue(forKey: id) != nil || state.tombstones.removeValue(forKey: id) != nil else {
                Terminal.error("no story with key '\(id)' in \(store.path)")
                throw ExitCode(1)
            }
            state.tombstones[id] = nil
            try options.save(state, store)
            Terminal.output("forgot \(id)")
        }
    }

    struct CheckState: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check", abstract: "Check that the state file (and its journal) can be read; exit 1 if not.")
        @OptionGroup var options: Options

        func run() throws {
            _ = options.global.bootstrapLogging()
            let store = StateStore(path: try options.path())
            let state = try options.load(store)
            let problems = StateReport.problems(state)
            for problem in problems { Terminal.output("problem: \(problem)") }
            Terminal.output("\(store.path): version \(state.version), \(state.stories.count) stories, \(state.feeds.count) feeds, \(state.tombstones.count) tombstones\(problems.isEmpty ? ": ok" : "")")
            if !problems.isEmpty { throw ExitCode(1) }
        }
    }
}
