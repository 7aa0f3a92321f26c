import ArgumentParser
import Foundation
import Logging
import NewsPushCore
import NewsPushModel
import NewsPushSessions

@main
struct NewsPush: AsyncParsableCommand {
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
        subcommands: [
            Run.self, Watch.self, Ping.self, Preview.self, Publish.self, Review.self, Parse.self, Classify.self,
            Check.self,
            StateCommand.self, Hub.self, DeskCommand.self, ApiCommand.self, DevicesCommand.self, Report.self,
        ]
    )

    /// Parses the command line and runs the command; every way it can end goes through
    /// `ExitStatus`, the one place that picks the exit status. (On the main thread: the commands
    /// that block — a run, a publish — block it, never the concurrency pool; the desk's server
    /// is an async command.)
    static func main() async {
        do {
            var command = try parseAsRoot(joiningDashValues(Array(CommandLine.arguments.dropFirst())))
            if var service = command as? any AsyncParsableCommand {
                try await service.run()
            } else {
                try command.run()
            }
        } catch {
            ExitStatus.exit(with: error)
        }
    }
}

extension NewsPush {
    /// Options whose value may start with `-` (a negative duration is a mistake worth naming).
    static let dashValueOptions: Set<String> = ["--wait", "--since", "--retention", "--ttl", "--at"]

    /// `--wait -5s` as `--wait=-5s`: ArgumentParser would take `-5s` for flags (`-h` in `-2h`
    /// shows the help and exits 0, others say "Missing value"); joined, the value reaches the
    /// option's own check, which names it.
    static func joiningDashValues(_ arguments: [String]) -> [String] {
        var joined: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if dashValueOptions.contains(argument), index + 1 < arguments.count,
                arguments[index + 1].hasPrefix("-"), !arguments[index + 1].hasPrefix("--")
            {
                joined.append("\(argument)=\(arguments[index + 1])")
                index += 2
            } else {
                joined.append(argument)
                index += 1
            }
        }
        return joined
    }
}

/// `--wait DURATION` of the commands that take the run lock (publish, review approve|reject,
/// hub cancel): wait that long for a running job instead of exiting 75 at once.
struct LockWait: ParsableArguments {
    @Option(help: "Wait this long (e.g. 2m) for a running job's lock instead of exiting 75 at once.")
    var wait: String?

    func validate() throws {
        if let wait, Durations.parse(wait) == nil {
            throw ValidationError("--wait '\(wait)' is not a duration (e.g. 30s, 2m)")
        }
    }

    /// `--wait` in seconds; nil: exit 75 at once.
    var seconds: Double? { wait.flatMap(Durations.parse) }
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

    /// Loads the config; a missing or wrong one is a configuration error (exit 78) listing
    /// every problem.
    func loadConfig(requireHub: Bool = true) throws(SessionError) -> NewsPushConfig {
        guard FileManager.default.fileExists(atPath: config) else {
            throw .missingConfig(
                path: URL(fileURLWithPath: config).standardizedFileURL.path, isDefault: config == "feeds.yaml")
        }
        var loader = ConfigLoader()
        loader.requireHub = requireHub
        do {
            return try loader.load(path: config)
        } catch {
            throw .config(error)
        }
    }

    /// The sessions' context for `config`: logging set up once, and the session clock (the
    /// system's; debug builds honour `NEWSPUSH_TEST_NOW`, an RFC 3339 time, so tests of
    /// freshness, budgets and schedules do not depend on the machine's speed).
    func context(_ config: NewsPushConfig) -> SessionContext {
        SessionContext(config: config, logger: bootstrapLogging(), clock: Self.clock)
    }

    /// The session clock (see `context`). Debug builds also honour `NEWSPUSH_TEST_CLOCK_RATE`:
    /// the clock starts at `NEWSPUSH_TEST_NOW` (or now) and runs that many times faster, so a
    /// test watches a day in minutes.
    static var clock: SessionClock {
        #if DEBUG
            let environment = ProcessInfo.processInfo.environment
            let start = environment["NEWSPUSH_TEST_NOW"].flatMap(Timestamp.parse)
            if let rate = environment["NEWSPUSH_TEST_CLOCK_RATE"].flatMap(Double.init), rate > 0 {
                return .running(from: start ?? Date(), rate: rate)
            }
            if let start { return .fixed(start) }
        #endif
        return .system
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
    static func output(_ text: String, terminator: String = "\n") {
        print(text, terminator: terminator)
    }

    /// Writes out what `output` buffered: a resident command's lines reach a pipe (journald, a
    /// log collector) as they happen, not when the buffer fills.
    static func flush() {
        fflush(nil)
    }

    /// Something the user should know that is not an error, on stderr.
    static func note(_ text: String) {
        FileHandle.standardError.write(Data("note: \(text)\n".utf8))
    }

    /// Asks for a secret on the terminal without echoing it.
    static func secret(_ prompt: String) -> String {
        FileHandle.standardError.write(Data(prompt.utf8))
        var settings = termios()
        tcgetattr(STDIN_FILENO, &settings)
        let saved = settings
        settings.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &settings)
        defer {
            var restore = saved
            tcsetattr(STDIN_FILENO, TCSANOW, &restore)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return readLine(strippingNewline: true) ?? ""
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
