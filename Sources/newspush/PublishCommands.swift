import ArgumentParser
import FeedParsing
import Foundation
import NewsPushCore
import NewsPushModel
import NewsPushSessions
import NotificationHubs

extension NewsCategory: ExpressibleByArgument {}

struct Publish: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish one notification by hand, for a category or a tag expression.",
        discussion: """
            The push goes through the ledger's outbox like the scheduled run's, so the run never \
            repeats the story (recognised by --url, by its key, or by a near-identical headline). A \
            story already pushed is refused unless --force. --tags sends to another tag expression \
            than the category's: one that can reach the category's readers (World || Politics, \
            !user:alice) is the story's push, recorded and refused as a repeat like any other; one \
            that cannot (user:alice, to try it on one device first) and --test sends are recorded \
            as trials, never as the story's push. --user NAME sends the alert to that reader's devices \
            only (their tag, api.user_tag): a real push, refused only if the story already went to \
            them or to everyone. Asks for confirmation unless --yes; the run lock is taken first \
            (--wait DURATION waits for a running job instead of exiting 75).
            """)

    @OptionGroup var global: GlobalOptions

    @Option(
        help:
            ArgumentHelp(
                "World, Politics, Business, Technology, Science or Sports (with --replace: the corrected story's, "
                    + "unless given).")
    )
    var category: NewsCategory?

    @Option(help: "The headline; the message is the category's template with it.")
    var title: String?

    @Option(help: "The exact message text (messageParam).")
    var message: String?

    @Option(help: "The story's URL.")
    var url: String?

    @Option(help: "A tag expression instead of the category's.")
    var tags: String?

    @Option(help: "Send to this reader's devices only (their tag): a real push, not a trial.")
    var user: String?

    @Flag(help: "Push the story even if it was pushed before (recorded as a deliberate repeat).")
    var force = false

    @Option(
        help: "major (time-sensitive, with sound) or minor (silent); default: the category's, or an importance rule's.")
    var importance: Importance?

    @Option(
        help:
            ArgumentHelp(
                "Have the hub deliver it at this time: an RFC 3339 time (2026-11-23T18:00:00Z) or +DURATION (+2h); at "
                    + "most 7 days ahead (Standard tier).")
    )
    var at: String?

    @Option(
        name: .customLong("replace"),
        help: "Correct the alert of this story (its key, as `state show` prints it): same collapse id, new text.")
    var replacing: String?

    @Option(help: "The language of the text: picks the category's message template for it (default en).")
    var language: String = "en"

    @OptionGroup var lockWait: LockWait

    @Flag(help: "Say exactly what the real command would do, refusal included; send and record nothing.")
    var dryRun = false

    @Flag(help: "Use the hub's test flag (at most 10 devices) and print each device's outcome.")
    var test = false

    @Flag(help: "Do not ask for confirmation.")
    var yes = false

    @Option(help: "text or json (one object on stdout).")
    var format: OutputFormat = .text

    func validate() throws {
        if let problem = request.problem(now: GlobalOptions.clock.now()) { throw ValidationError(problem.description) }
    }

    /// The request the options describe.
    var request: PublishRequest {
        var request = PublishRequest(
            category: category, title: title, message: message, url: url, tags: tags, test: test,
            force: force, importance: importance, at: at, replacing: replacing, language: language,
            dryRun: dryRun, wait: lockWait.seconds)
        request.user = user
        return request
    }

    func run() throws {
        let context = global.context(try global.loadConfig())
        try PublishView.execute(request, context: context, confirm: !yes, format: format)
    }
}

extension Importance: ExpressibleByArgument {}

extension Hub {
    struct TestSend: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test-send",
            abstract: "Send with the hub's test flag and print the outcome for each device (at most 10).")

        @OptionGroup var global: GlobalOptions

        @Option(help: "The category whose tag expression and format to use.")
        var category: NewsCategory

        @Option(help: "The headline.")
        var title: String

        @Option(help: "text or json (one object on stdout).")
        var format: OutputFormat = .text

        func run() throws {
            let context = global.context(try global.loadConfig())
            try PublishView.execute(
                PublishRequest(category: category, title: title, test: true), context: context, confirm: false,
                format: format)
        }
    }
}

/// What `publish` and `hub test-send` print: the push as planned, the refusal or the outcome,
/// as text or one JSON object; the publish session decides everything else.
enum PublishView {
    /// Publishes through the session, asking for confirmation on the terminal when `confirm`.
    static func execute(_ request: PublishRequest, context: SessionContext, confirm: Bool, format: OutputFormat) throws
    {
        let session = PublishSession(context: context)
        let outcome = try session.publish(
            request,
            planned: { plan in
                for note in plan.notes { Terminal.note(note) }
                guard format == .text else { return }
                let text = plan.entry.properties["messageParam"] ?? plan.entry.properties["url"] ?? ""
                let when = plan.entry.scheduledAt.map { " at \(FeedDates.format($0))" } ?? ""
                Terminal.output(
                    "\(plan.push.test ? "test push" : "push") to [\(plan.entry.tags)]\(when) "
                        + "(\(plan.entry.format.rawValue)): \(text)"
                )
            }, confirm: { _ in !confirm || ask() })
        render(outcome, dryRun: request.dryRun, format: format)
        try ExitStatus.finish(ExitStatus.code(for: outcome))
    }

    private static func ask() -> Bool {
        FileHandle.standardError.write(Data("Send it? [y/N] ".utf8))
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return answer == "y" || answer == "yes"
    }

    private static func render(_ outcome: PublishOutcome, dryRun: Bool, format: OutputFormat) {
        if format == .json { Terminal.output(JSONText.encode(PublishOutput(outcome, dryRun: dryRun))) }
        switch outcome {
        case .refused(_, let refusal):
            if dryRun && format == .text { Terminal.output("dry run: the real command would refuse to send this") }
            Terminal.error(refusal.description)
        case .dryRun(let plan):
            guard format == .text else { return }
            Terminal.output(plan.request.redactedDescription())
            let repeatNote = plan.entry.kind == .repeat ? " (it would be recorded as a deliberate repeat)" : ""
            Terminal.output("dry run: nothing sent, nothing recorded\(repeatNote)")
        case .notConfirmed:
            Terminal.error("not confirmed; nothing sent")
        case .attempted(let plan, let result):
            for done in plan.done { Terminal.note(done) }
            report(result, plan: plan, format: format)
        }
    }

    /// What the hub said of a push that was sent or tried (on stdout, or on stderr when it was
    /// not sent), and each device's outcome of a test send.
    private static func report(_ result: PublishResult, plan: PublishPlan, format: OutputFormat) {
        let outcome = result.outcome
        guard format == .text else { return reportErrors(outcome, push: plan.push) }
        reportText(outcome, push: plan.push)
        if let testOutcome = result.testOutcome {
            Terminal.output("\(testOutcome.success) succeeded, \(testOutcome.failure) failed")
            for device in testOutcome.results {
                Terminal.output("  \(device.platform) \(device.registrationId): \(device.outcome)")
            }
        } else if plan.push.test && outcome.status == .sent {
            Terminal.output("the hub returned no per-device outcomes")
        }
    }

    /// The outcome's line on stdout (sent, scheduled), or why it was not sent on stderr.
    private static func reportText(_ outcome: OutboxOutcome, push: ManualPush) {
        switch outcome.status {
        case .sent:
            Terminal.output(
                "sent (\(outcome.httpStatus ?? 201))\(outcome.notificationId.map { ", notification id \($0)" } ?? "")")
        case .scheduled:
            let when = push.at.map(FeedDates.format) ?? ""
            let id =
                outcome.notificationId.map {
                    ", scheduled notification id \($0) (newspush hub cancel \($0) cancels it)"
                } ?? ""
            Terminal.output("scheduled for \(when)\(id)")
        default:
            reportErrors(outcome, push: push)
        }
    }

    /// Why a push was not sent, on stderr (in either format).
    private static func reportErrors(_ outcome: OutboxOutcome, push: ManualPush) {
        if let reason = outcome.notSentReason(trial: push.isTrial) { Terminal.error(reason) }
    }
}
