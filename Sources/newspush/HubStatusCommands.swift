import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushModel
import NewsPushSessions
import NotificationHubs

extension Hub {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Show the hub's per-message telemetry (Standard tier): state, times, and per-platform outcome counts.",
            discussion:
                "Give a notification id (as `run` and `publish` print it), or --last N for the latest pushes in the "
                + "ledger."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "A notification id.") var notificationId: String?
        @Option(help: "The latest N pushes the hub took, from the ledger.") var last: Int?
        @Option(help: "text or json") var format: OutputFormat = .text
        @Option(
            help:
                "Ask again every 10 s, up to this long (e.g. 2m), about a notification the hub has not processed yet.")
        var wait: String?

        func validate() throws {
            if (notificationId == nil) == (last == nil) { throw ValidationError("give a NOTIFICATION_ID or --last N") }
            if let last, last < 1 || last > 100 { throw ValidationError("--last takes 1 to 100") }
            if let wait, Durations.parse(wait) == nil {
                throw ValidationError("--wait '\(wait)' is not a duration (e.g. 30s, 2m)")
            }
        }

        func run() throws {
            let session = HubSession(context: global.context(try global.loadConfig()))
            let outcome = try session.status(
                notificationId: notificationId, last: last, wait: wait.flatMap(Durations.parse))
            if outcome.nothingInLedger {
                Terminal.error("the ledger holds no push with a notification id yet (ids come from Standard-tier hubs)")
            }
            if format == .json {
                Terminal.output(JSONText.encode(outcome.rows))
            } else {
                for row in outcome.rows { Terminal.output(row.text) }
            }
            try ExitStatus.finish(ExitStatus.code(for: outcome))
        }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a scheduled send (`publish --at`) by its scheduled notification id.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The scheduled notification id `publish --at` printed.") var scheduledId: String

        @OptionGroup var lockWait: LockWait

        func run() throws {
            let config = try global.loadConfig()
            let outcome = try HubSession(context: global.context(config)).cancel(
                scheduledId, wait: lockWait.seconds)
            switch outcome {
            case .cancelled(let recorded):
                Terminal.output("cancelled \(scheduledId)\(recorded ? "" : " (the ledger had no record of it)")")
            case .refused(.unreachable(let why)):
                Terminal.error("could not reach the hub: \(why); nothing was cancelled")
            case .refused(let answer):
                let why: String
                switch answer {
                case .notFound: why = "the hub has no scheduled send '\(scheduledId)' (already delivered, or cancelled)"
                case .hubNotFound:
                    why =
                        "the hub '\(config.hub.name)' is not found (404): check hub.name and the connection "
                        + "string's Endpoint"
                case .notAllowed: why = "scheduled sends need the Standard tier (403)"
                case .failed(let status): why = "the hub answered \(status)"
                case .cancelled, .unreachable: why = ""
                }
                Terminal.error("not cancelled: \(why)")
            case .notRecorded(let error):
                Terminal.error("cancelled at the hub, but the ledger could not record it: \(error)")
            }
            try ExitStatus.finish(ExitStatus.code(for: outcome))
        }
    }
}
