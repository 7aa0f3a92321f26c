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
    @Option(name: .long, help: "The config file.", completion: .file(extensions: ["yaml", "yml"]))
    var config: String = "feeds.yaml"

    @Flag(name: .shortAndLong, help: "Log more (to stderr).")
    var verbose = false

    @Flag(name: .shortAndLong, help: "Quiet: log only errors; `run` prints only failures.")
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
        guard FileManager.default.fileExists(atPath: config) else {
            let tried = URL(fileURLWithPath: config).standardizedFileURL.path
            Terminal.error("no config file at \(tried) (\(config == "feeds.yaml" ? "the default: feeds.yaml in the working directory" : "given by --config")); give the path of yours with --config PATH")
            throw ExitCode(78)
        }
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
        // https://no-color.org: NO_COLOR set to anything but the empty string turns colour off.
        let noColor = ProcessInfo.processInfo.environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        let useColor = isatty(STDERR_FILENO) == 1 && !noColor
        let line = useColor ? "\u{1B}[31merror:\u{1B}[0m \(text)\n" : "error: \(text)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

/// A progress line on the terminal while a run fetches and sends: only when stderr is a terminal
/// (never in a pipe or a cron mail), rewritten in place and cleared at the end.
final class ProgressLine: Sendable {
    let enabled: Bool

    init(enabled: Bool) {
        self.enabled = enabled && isatty(STDERR_FILENO) == 1
    }

    func show(_ progress: RunProgress) {
        guard enabled else { return }
        let text: String
        switch progress {
        case .fetching(let done, let total): text = "fetching feeds \(done)/\(total)"
        case .sending(let done, let total): text = "sending pushes \(done)/\(total)"
        }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
    }

    func clear() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
