import Foundation
import Logging
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// The time a session runs at: read once when a command starts, and that one reading is handed
/// to every stage (freshness, budgets, quiet hours, schedules, what is recorded). Front ends use
/// `system`; tests set a fixed time.
public struct SessionClock: Sendable {
    private let read: @Sendable () -> Date
    /// How many of its seconds pass per second of the machine's (1 but for a test's fast clock):
    /// a process that waits (the watcher) waits its seconds divided by this.
    public let rate: Double

    /// A clock that reads `read` once per session.
    public init(_ read: @escaping @Sendable () -> Date) {
        self.read = read
        rate = 1
    }

    /// A clock that starts at `start` and runs `rate` times as fast as the machine's (tests).
    public static func running(from start: Date, rate: Double) -> SessionClock {
        let origin = Date()
        return SessionClock(read: { start.addingTimeInterval(Date().timeIntervalSince(origin) * rate) }, rate: rate)
    }

    private init(read: @escaping @Sendable () -> Date, rate: Double) {
        self.read = read
        self.rate = rate
    }

    /// The system's clock.
    public static let system = SessionClock { Date() }

    /// A clock that always reads `date`.
    public static func fixed(_ date: Date) -> SessionClock { SessionClock { date } }

    /// The clock's reading now.
    public func now() -> Date { read() }

    /// The machine's own time, whatever the session's clock reads: hub tokens are signed with it
    /// (the hub checks their expiry against the real time).
    public static func signingTime() -> Date { Date() }
}

/// What every session of one newsroom shares: its config, where it logs, its clock and, for
/// tests, what stands in for the hub's transport and the waits between retries.
public struct SessionContext: Sendable {
    /// The loaded `feeds.yaml`.
    public var config: NewsPushConfig
    /// Where the session logs (the core never bootstraps logging).
    public var logger: Logger
    /// When the session runs.
    public var clock: SessionClock = .system
    /// Replaces the libcurl transport to the hub (tests only).
    public var hubTransport: (any HubTransport)?
    /// Replaces the wait between retries (tests record instead of sleeping).
    public var retrySleep: (@Sendable (Double) -> Void)?

    /// The context of `config`, logging to `logger`, on the system clock.
    public init(config: NewsPushConfig, logger: Logger, clock: SessionClock = .system) {
        self.config = config
        self.logger = logger
        self.clock = clock
    }

    /// `SessionLedger.with` on the config's ledger.
    func withLedger<T>(
        _ access: LedgerAccess, wait: Double? = nil, checked: Bool = false, _ body: (Ledger, LedgerLock?) throws -> T
    ) throws(SessionError) -> T {
        try SessionLedger.with(config.statePath, access, wait: wait, checked: checked, body)
    }

    /// The hub client for the configured hub over libcurl (or the injected transport).
    public func hubClient() throws(SessionError) -> NotificationHubClient {
        do {
            return try HubClients.make(config.hub, transport: hubTransport, retrySleep: retrySleep)
        } catch {
            throw .connectionString(error)
        }
    }
}

/// The one way a session reaches its ledger.
enum SessionLedger {
    /// The ledger configured as `location`: to write, the run lock is taken first (waiting up to
    /// `wait` seconds for a running job) and held until `body` returns (it gets the lock, nil
    /// when reading); to read, the ledger is opened without it. A ledger error becomes
    /// `SessionError.ledger`, anything else that is not a session error `.unreadable`.
    /// `checked`: this process found the ledger whole before, so its pages are not checked again.
    static func with<T>(
        _ location: String, _ access: LedgerAccess, wait: Double? = nil, checked: Bool = false,
        _ body: (Ledger, LedgerLock?) throws -> T
    ) throws(SessionError) -> T {
        do {
            let lock = access == .write ? try LedgerLock(configured: location, wait: wait) : nil
            defer { withExtendedLifetime(lock) {} }
            let ledger = try Ledger.open(configured: location, access: access, lock: lock, verify: !checked)
            return try body(ledger, lock)
        } catch let error as SessionError {
            throw error
        } catch let error as LedgerError {
            throw .ledger(error)
        } catch {
            throw .unreadable(path: LedgerLocation(configured: location).databasePath, reason: "\(error)")
        }
    }
}

/// Why a session could not do what it was asked. `ExitStatus` in the command line turns each
/// into its exit code (SPEC §7); the desk into an HTTP answer.
public enum SessionError: Error, Sendable, CustomStringConvertible {
    /// The config file is wrong (exit 78).
    case config(ConfigError)
    /// There is no config file at `path` (exit 78); `default` when it is the default one.
    case missingConfig(path: String, isDefault: Bool)
    /// The hub's connection string cannot be used (exit 78).
    case connectionString(HubError)
    /// The ledger cannot be used, or another run holds its lock (exit 1, or 75 when locked).
    case ledger(LedgerError)
    /// The request names something that is not there or cannot be (exit 64).
    case usage(String)
    /// A push that cannot be made into a request: a bad `--tags` expression, a message too
    /// large (exit 64).
    case request(HubError)
    /// `publish --replace KEY` names no story that was pushed (exit 64).
    case unknownStory(String, reason: String)
    /// A file the session was given cannot be read (exit 1).
    case unreadable(path: String, reason: String)
    /// A file the session writes cannot be written (exit 1).
    case cannotWrite(path: String, reason: String)
    /// The machine's clock is too far from the servers' to decide by it (exit 1): nothing that
    /// depends on it was recorded.
    case clockSkew(String)

    /// What went wrong, naming the file, ledger, feed or story.
    public var description: String {
        switch self {
        case .config(let error): return error.description
        case .missingConfig(let path, let isDefault):
            let which = isDefault ? "the default: feeds.yaml in the working directory" : "given by --config"
            return "no config file at \(path) (\(which)); give the path of yours with --config PATH"
        case .connectionString(let error), .request(let error): return error.description
        case .ledger(let error): return error.description
        case .usage(let message): return message
        case .unknownStory(let key, let reason): return "cannot correct '\(key)': \(reason)"
        case .unreadable(let path, let reason): return "\(path): \(reason)"
        case .cannotWrite(let path, let reason): return "cannot write \(path): \(reason)"
        case .clockSkew(let problem): return problem
        }
    }

    /// The session error for a publish that cannot be planned.
    init(_ error: PublishPlanError) {
        switch error {
        case .unknownStory(let key, let reason): self = .unknownStory(key, reason: reason)
        case .request(let error): self = .request(error)
        case .blank, .scheduledTest, .scheduledSecure: self = .usage(error.description)
        }
    }
}
