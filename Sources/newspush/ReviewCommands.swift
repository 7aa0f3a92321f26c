import ArgumentParser
import FeedParsing
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NewsPushSessions

struct Review: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The pushes `review.rules` hold for an editor: list, approve, reject, and the history of decisions.",
        subcommands: [List.self, History.self, Approve.self, Reject.self])

    /// What `list` and `history` both take: how far back, and the output format.
    struct Window: ParsableArguments {
        @OptionGroup var global: GlobalOptions
        @Option(help: "Only this far back (held, or decided), e.g. 2h or 24h.") var since: String?
        @Option(help: "text or json") var format: OutputFormat = .text

        func validate() throws {
            if let since, Durations.parse(since) == nil {
                throw ValidationError("--since '\(since)' is not a duration")
            }
        }

        /// `--since` in seconds.
        var seconds: Double? { since.flatMap(Durations.parse) }

        /// The review session over the configured ledger (the hub's key is not needed).
        func session() throws -> ReviewSession {
            ReviewSession(context: global.context(try global.loadConfig(requireHub: false)))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The pushes waiting for an editor, oldest first.")
        @OptionGroup var window: Window

        func run() throws {
            let limit = window.seconds
            let held = try window.session().list().filter { limit == nil || Double($0.waitedSeconds) <= limit ?? 0 }
            if window.format == .json {
                Terminal.output(JSONText.encode(ReviewListOutput(held: held.map(HeldOutput.init))))
                return
            }
            guard !held.isEmpty else {
                Terminal.output("nothing waits for an editor")
                return
            }
            for push in held {
                let stale = push.stale ? " NO LONGER FRESH (the next run expires it)" : ""
                Terminal.output(
                    "\(push.entry.id)  \(push.entry.category.rawValue)  waiting \(push.waitedSeconds / 60) min\(stale)\n"
                        + "    \(push.entry.properties["messageParam"] ?? "")\n"
                        + "    held by \(push.rule); fresh until \(FeedDates.format(push.entry.freshUntil))")
            }
            Terminal.output(
                "\(held.count) waiting: newspush review approve ID [--title T | --message M] | reject ID --reason R")
        }
    }

    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every editorial decision (held, approved, edited, rejected, expired, published, corrected, "
                + "cancelled) with its editor and time, newest first.")
        @OptionGroup var window: Window

        func run() throws {
            let records = try window.session().history(since: window.seconds)
            if window.format == .json {
                Terminal.output(JSONText.encode(AuditOutput(records: records)))
                return
            }
            if records.isEmpty { Terminal.output("no decisions on record") }
            for record in records {
                let what = [record.category?.rawValue, record.title.map { "\"\($0)\"" }, record.detail]
                    .compactMap { $0 }.joined(separator: "  ")
                Terminal.output(
                    "\(FeedDates.format(record.at))  \(record.action.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0))  "
                        + "\(record.editor)  \(record.entryID ?? "-")  \(what)")
            }
        }
    }

    struct Approve: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a held push (edited if asked) through the outbox; exactly one push however many approve it."
        )
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The held push's id (`newspush review list`).") var id: String
        @Option(help: "A new headline: the category's message is rendered again with it.") var title: String?
        @Option(help: "The exact message text (messageParam) instead.") var message: String?
        @Option(help: "major or minor instead.") var importance: Importance?
        @OptionGroup var lockWait: LockWait
        @Option(help: "Who approves (default: the login name).") var editor: String?

        func validate() throws {
            if title != nil && message != nil { throw ValidationError("give --title or --message, not both") }
        }

        func run() throws {
            let session = ReviewSession(context: global.context(try global.loadConfig()), editor: editor)
            let outcome = try session.approve(
                id, edit: ReviewEdit(title: title, message: message, importance: importance),
                wait: lockWait.seconds)
            Review.report(outcome)
            try ExitStatus.finish(ExitStatus.code(for: outcome))
        }
    }

    struct Reject: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Never send a held push; recorded with the reason.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The held push's id (`newspush review list`).") var id: String
        @Option(help: "Why (on the record).") var reason: String
        @OptionGroup var lockWait: LockWait
        @Option(help: "Who rejects (default: the login name).") var editor: String?

        func validate() throws {
            if reason.allSatisfy(\.isWhitespace) { throw ValidationError("--reason is empty: say why") }
        }

        func run() throws {
            let session = ReviewSession(
                context: global.context(try global.loadConfig(requireHub: false)), editor: editor)
            let outcome = try session.reject(id, reason: reason, wait: lockWait.seconds)
            Review.report(outcome)
            try ExitStatus.finish(ExitStatus.code(for: outcome))
        }
    }

    /// What an approval or rejection came to: on stdout when done, on stderr when not.
    static func report(_ outcome: ReviewOutcome) {
        if outcome.isDone { Terminal.output(outcome.sentence) } else { Terminal.error(outcome.sentence) }
    }
}
