import ArgumentParser
import NewsPushCore
import NotificationHubs

/// The one place where outcomes and errors become exit statuses (SPEC §7): 0 all done, 1 nothing
/// could be done or sending had to stop, 2 partial, 64 usage, 75 locked, 78 configuration.
enum ExitStatus {
    static func code(for outcome: RunOutcome) -> Int32 {
        switch outcome {
        case .complete: return 0
        case .partial: return 2
        case .stopped: return 1
        }
    }

    /// A single push (publish): sent 0; kept pending because sending had to stop 1; refused or
    /// of unknown outcome 2.
    static func code(for status: OutboxEntry.Status, stopped: Bool) -> Int32 {
        switch status {
        case .sent: return 0
        case .scheduled: return 0
        case .pending: return stopped ? 1 : 2
        case .failed, .unknown, .sending, .expired, .cancelled: return 2
        }
    }

    static func code(for error: any Error) -> Int32 {
        switch error {
        case is ConfigError: return 78
        case let error as LedgerError: return code(for: error)
        case let error as RunError:
            switch error {
            case .ledger(let ledger): return code(for: ledger)
            case .connectionString: return 78
            case .request, .unknownFeed, .unknownStory: return 64
            }
        default: return 1
        }
    }

    private static func code(for error: LedgerError) -> Int32 {
        if case .locked = error { return 75 }
        return 1
    }

    /// Prints `error` to stderr and returns the exit it stands for, for `throw`.
    static func failing(_ error: any Error & CustomStringConvertible) -> ExitCode {
        Terminal.error(error.description)
        return ExitCode(code(for: error))
    }
}
