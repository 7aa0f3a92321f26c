import ArgumentParser
import Foundation
import Logging
import NewsPushCore

@main
struct NewsPush: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "newspush",
        abstract: "Fetch news feeds, pick the new breaking stories and push them through Azure Notification Hubs.",
        discussion: """
            Run from cron every few minutes with `newspush run`. Preview what the next run would push \
            with `newspush preview`. Exit status: 0 all fine, 1 nothing could be done or sending had to \
            stop (ledger, hub credentials or hub out of reach, disk full; pending pushes are kept), 2 some \
            feed or push failed, 64 usage error, 75 another run holds the lock, 78 configuration error.
            """,
        version: NewsPushVersion.current,
        subcommands: [Run.self, Preview.self, Publish.self, Parse.self, Classify.self, Check.self, StateCommand.self, Hub.self]
    )
}

/// Options every command accepts.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The config file.")
    var config: String = "feeds.yaml"

    @Flag(name: .shortAndLong, help: "Log more (to stderr).")
    var verbose = false

    @Flag(name: .shortAndLong, help: "Log only errors (to stderr).")
    var quiet = false

    func validate() throws {
        if verbose && quiet { throw ValidationError("--verbose and --quiet cannot be used together") }
    }

    /// Sets up logging to stderr once, and returns the logger the core gets.
    func bootstrapLogging() -> Logger {
        let level: Logger.Level = quiet ? .error : (verbose ? .debug : .notice)
        LoggingBootstrap.once(level: level)
        var logger = Logger(label: "newspush")
        logger.logLevel = level
        return logger
    }

    /// Loads the config or exits 78 with every problem listed.
    func loadConfig() throws -> NewsPushConfig {
        do {
            return try ConfigLoader().load(path: config)
        } catch {
            throw ExitStatus.failing(error)
        }
    }
}

enum LoggingBootstrap {
    nonisolated(unsafe) private static var done = false

    static func once(level: Logger.Level) {
        guard !done else { return }
        done = true
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// Results to stdout, errors to stderr.
enum Terminal {
    static func output(_ text: String) {
        print(text)
    }

    static func error(_ text: String) {
        let useColor = isatty(STDERR_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        let line = useColor ? "\u{1B}[31merror:\u{1B}[0m \(text)\n" : "error: \(text)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
