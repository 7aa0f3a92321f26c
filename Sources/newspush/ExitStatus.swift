import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushHTTP
import NewsPushLedger
import NewsPushModel
import NewsPushSessions
import NotificationHubs

/// The one place where outcomes and errors become exit statuses (SPEC §7): 0 all done, 1
/// nothing could be done or sending had to stop, 2 partial, 64 usage, 75 locked, 78
/// configuration. Commands render what they have, then hand the outcome or the error here.
enum ExitStatus {
    /// A command that finished with something to say in its exit status (its output is
    /// already printed).
    struct Finished: Error {
        let status: Int32
    }

    /// Ends the command with `status`: returns for 0, throws for anything else.
    static func finish(_ status: Int32) throws {
        if status != 0 { throw Finished(status: status) }
    }

    /// How a run ended.
    static func code(for outcome: RunOutcome) -> Int32 {
        switch outcome {
        case .complete: return 0
        case .partial: return 2
        case .stopped: return 1
        }
    }

    /// A single push (publish): sent or scheduled 0; refused as a repeat, not confirmed, or kept
    /// pending because sending had to stop 1; refused by the hub or of unknown outcome 2.
    static func code(for outcome: PublishOutcome) -> Int32 {
        switch outcome {
        case .refused, .notConfirmed: return 1
        case .dryRun: return 0
        case .attempted(_, let result):
            // Sending had to stop (the hub unreachable, the key refused): 1, a trial too.
            if result.stop != nil, result.outcome.status != .sent { return 1 }
            switch result.outcome.status {
            case .sent, .scheduled: return 0
            case .pending, .failed, .unknown, .sending, .expired, .cancelled, .held, .rejected: return 2
            }
        }
    }

    /// An editor's decision: approved and sent, or rejected, 0; nothing done (not held, expired,
    /// already decided) or kept pending because sending had to stop 1; approved but refused by
    /// the hub or of unknown outcome 2.
    static func code(for outcome: ReviewOutcome) -> Int32 {
        switch outcome {
        case .rejected: return 0
        case .notHeld: return 1
        case .approved(_, let result, let stop):
            switch result.status {
            case .sent, .scheduled: return 0
            case .pending: return stop != nil ? 1 : 2
            default: return 2
            }
        }
    }

    /// `hub status`: 1 when nothing could be told (the hub unreachable, the credentials or the
    /// tier refused, or no id known), 2 when some ids were told and others not, whatever the
    /// tier: one cause, one status.
    static func code(for outcome: HubStatusOutcome) -> Int32 {
        let failed = outcome.rows.filter { $0.unreachable || $0.failedStatus != nil }
        if failed.isEmpty { return 0 }
        let hubWide = failed.contains { $0.unreachable || [401, 403].contains($0.failedStatus ?? 0) }
        return hubWide || failed.count == outcome.rows.count ? 1 : 2
    }

    /// `hub cancel`: 1 when nothing was cancelled, for every cause (no such scheduled send, the
    /// tier, the hub unreachable, the ledger not written).
    static func code(for outcome: HubCancelOutcome) -> Int32 {
        switch outcome {
        case .cancelled: return 0
        case .refused, .notRecorded: return 1
        }
    }

    /// `check`: 78 when the config must change, 1 when the ledger cannot be used or (`--hub`) a
    /// format the config sends reached no device, 2 when a feed cannot be read.
    static func code(for outcome: CheckOutcome) -> Int32 {
        if outcome.checks.contains(where: { $0.severity == .config }) { return 78 }
        if outcome.checks.contains(where: { $0.severity == .ledger || $0.severity == .hub }) { return 1 }
        if outcome.feeds?.contains(where: { !$0.ok }) == true { return 2 }
        return 0
    }

    /// `state check`: 1 unless the ledger is healthy (75 when another run holds it).
    static func code(for outcome: StateCheckOutcome) -> Int32 {
        if let error = outcome.error { return code(for: SessionError.ledger(error)) }
        return outcome.ok ? 0 : 1
    }

    /// `state forget`: 1 when the ledger knows no such story.
    static func code(forgot found: Bool) -> Int32 { found ? 0 : 1 }

    /// Commands that handle many inputs (`parse`, `classify --input`): 2 when some failed.
    static func code(failures: Int) -> Int32 { failures > 0 ? 2 : 0 }

    /// The exit status an error stands for.
    static func code(for error: any Error) -> Int32 {
        switch error {
        case let finished as Finished: return finished.status
        case is ConfigError: return 78
        case let error as LedgerError:
            switch error {
            case .locked, .busy: return 75
            default: return 1
            }
        case let error as SessionError:
            switch error {
            case .config, .missingConfig, .connectionString: return 78
            case .ledger(let ledger): return code(for: ledger)
            case .usage, .request, .unknownStory: return 64
            case .unreadable, .cannotWrite, .clockSkew: return 1
            }
        case let error as UsersFileError:
            switch error {
            case .badName, .badPassword: return 64
            case .unreadable, .cannotWrite: return 1
            }
        case is CannotServe: return 1
        case is DevicesCommand.DevicesIncomplete: return 2
        default: return NewsPush.exitCode(for: error).rawValue
        }
    }

    /// Prints what `error` has to say (ArgumentParser's usage and help texts included) and
    /// exits with the status it stands for. With `--format json`, stdout also gets one JSON
    /// document: `{"error": "…", "exit_status": N}`, so a script always has something to read.
    static func exit(with error: any Error) -> Never {
        if let finished = error as? Finished { Foundation.exit(finished.status) }
        let status = code(for: error)
        let message: String
        switch error {
        case let error as SessionError: message = error.description
        case let error as LedgerError: message = error.description
        case let error as ConfigError: message = error.description
        case let error as UsersFileError: message = error.description
        case let error as CannotServe: message = error.reason
        case let error as DevicesCommand.DevicesIncomplete:
            message = "\(error.count) hub deletes could not be made; they stay owed (run devices prune again)"
        default:
            if status == 0 || !wantsJSON { NewsPush.exit(withError: error) }
            message = NewsPush.message(for: error)
        }
        // A `devices` command that printed its document already says what failed in it: one
        // document per command, never two.
        if wantsJSON && !(error is DevicesCommand.DevicesIncomplete) {
            Terminal.output(JSONText.encode(ErrorDocument(error: message, exitStatus: status)))
        }
        if status != 0 { Terminal.error(message) }
        Foundation.exit(status)
    }

    /// One JSON document for a command that failed with `--format json`.
    private struct ErrorDocument: Encodable {
        var error: String
        var exitStatus: Int32
        enum CodingKeys: String, CodingKey { case error, exitStatus = "exit_status" }
    }

    /// Whether the command line asks for JSON (`--format json` or `--format=json`).
    private static var wantsJSON: Bool {
        let arguments = CommandLine.arguments
        if arguments.contains("--format=json") { return true }
        return zip(arguments, arguments.dropFirst()).contains { $0 == "--format" && $1 == "json" }
    }
}
