import ArgumentParser
import Foundation
import NewsPushCore
import NotificationHubs

extension NewsCategory: ExpressibleByArgument {}

struct Publish: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish one notification by hand, for a category or a tag expression.",
        discussion: """
            The push goes through the ledger's outbox like the scheduled run's, so the run never \
            repeats the story (recognised by --url, by its key, or by a near-identical headline). A \
            story already pushed is refused unless --force. --tags sends to other devices than the \
            category's (e.g. --tags user:alice to try it on one device first); such trials and --test \
            sends are not recorded. Asks for confirmation unless --yes; the run lock is taken first \
            (--wait DURATION waits for a running job instead of exiting 75).
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "World, Politics, Business, Technology, Science or Sports (with --replace: the corrected story's, unless given).")
    var category: NewsCategory?

    @Option(help: "The headline; the message is the category's template with it.")
    var title: String?

    @Option(help: "The exact message text (messageParam).")
    var message: String?

    @Option(help: "The story's URL.")
    var url: String?

    @Option(help: "A tag expression instead of the category's.")
    var tags: String?

    @Flag(help: "Push the story even if it was pushed before (recorded as a deliberate repeat).")
    var force = false

    @Option(help: "major (time-sensitive, with sound) or minor (silent); default: the category's, or an importance rule's.")
    var importance: Importance?

    @Option(help: "Have the hub deliver it at this time: an RFC 3339 time (2026-11-23T18:00:00Z) or +DURATION (+2h); at most 7 days ahead (Standard tier).")
    var at: String?

    @Option(name: .customLong("replace"), help: "Correct the alert of this story (its key, as `state show` prints it): same collapse id, new text.")
    var replacing: String?

    @Option(help: "The language of the text: picks the category's message template for it (default en).")
    var language: String = "en"

    @Option(help: "Wait this long (e.g. 2m) for a running job's lock instead of exiting 75.")
    var wait: String?

    @Flag(help: "Say exactly what the real command would do, refusal included; send and record nothing.")
    var dryRun = false

    @Flag(help: "Use the hub's test flag (at most 10 devices) and print each device's outcome.")
    var test = false

    @Flag(help: "Do not ask for confirmation.")
    var yes = false

    @Option(help: "text or json (one object on stdout).")
    var format: OutputFormat = .text

    func validate() throws {
        if (title == nil) == (message == nil) { throw ValidationError("give exactly one of --title and --message") }
        if let text = title ?? message, text.allSatisfy(\.isWhitespace) {
            throw ValidationError("--\(title != nil ? "title" : "message") is blank: a push needs words")
        }
        if let url, !(url.hasPrefix("http://") || url.hasPrefix("https://")) { throw ValidationError("--url must be an http(s) URL") }
        if let wait, Durations.parse(wait) == nil { throw ValidationError("--wait '\(wait)' is not a duration (e.g. 30s, 2m)") }
        if category == nil && replacing == nil { throw ValidationError("give --category (or --replace KEY to correct a story)") }
        if replacing != nil && force { throw ValidationError("--replace sends a correction; --force is for repeats") }
        if let at { _ = try ScheduleTime.parse(at, now: Date()) }
    }

    func run() throws {
        let logger = global.bootstrapLogging()
        let config = try global.loadConfig()
        let publisher = Publisher(config: config, logger: logger)
        let push = ManualPush(category: try category ?? correctedCategory(config), title: title, message: message, url: url, tags: tags,
                              test: test, force: force, importance: importance, at: try at.map { try ScheduleTime.parse($0, now: Date()) },
                              replacing: replacing, language: Languages.normalized(language))
        try PublishFlow.execute(push, publisher: publisher, dryRun: dryRun, confirm: !yes, wait: wait.flatMap(Durations.parse), format: format)
    }

    /// The category of the story `--replace` corrects.
    private func correctedCategory(_ config: NewsPushConfig) throws -> NewsCategory {
        guard let replacing else { throw ValidationError("give --category") }
        do {
            let story = try Ledger.open(configured: config.statePath, access: .read).stories(keys: [replacing])[replacing]
            guard let category = story?.category.flatMap(NewsCategory.init(rawValue:)) else {
                throw ExitStatus.failing(RunError.unknownStory(replacing, reason: story == nil ? "the ledger has no story with this key" : "it has no category: give --category"))
            }
            return category
        } catch let error as LedgerError {
            throw ExitStatus.failing(error)
        }
    }
}

extension Importance: ExpressibleByArgument {}

/// `publish --at`: an RFC 3339 time or `+DURATION`, in the future and at most 7 days ahead (the
/// hub's limit for scheduled sends).
enum ScheduleTime {
    static func parse(_ text: String, now: Date) throws -> Date {
        let time: Date
        if text.hasPrefix("+") {
            guard let seconds = Durations.parse(String(text.dropFirst())) else { throw ValidationError("--at '\(text)' is not +DURATION (e.g. +2h)") }
            time = now.addingTimeInterval(seconds)
        } else {
            guard let date = FeedDates.parseISO8601(text) else {
                throw ValidationError("--at '\(text)' is not a time: give an RFC 3339 time with its zone (2026-11-23T18:00:00Z) or +DURATION")
            }
            time = date
        }
        guard time > now.addingTimeInterval(1) else { throw ValidationError("--at \(FeedDates.format(time)) is not in the future") }
        guard time <= now.addingTimeInterval(7 * 86400) else { throw ValidationError("--at \(FeedDates.format(time)) is more than 7 days ahead: the hub schedules at most a week") }
        return time
    }
}

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
            let logger = global.bootstrapLogging()
            let config = try global.loadConfig()
            let publisher = Publisher(config: config, logger: logger)
            try PublishFlow.execute(ManualPush(category: category, title: title, test: true), publisher: publisher,
                                    dryRun: false, confirm: false, format: format)
        }
    }
}

/// What `publish` and `hub test-send` print with `--format json`: one object.
struct PublishOutput: Encodable {
    struct Device: Encodable {
        var platform: String
        var registrationId: String
        var outcome: String
        enum CodingKeys: String, CodingKey { case platform, outcome, registrationId = "registration_id" }
    }

    var test: Bool
    var dryRun: Bool
    var category: String
    var tags: String
    var format: String
    var properties: [String: String]
    var storyKey: String
    /// push, or repeat (`--force` on a story already pushed).
    var kind: String
    /// would-send, refused, sent, failed, pending, unknown.
    var status: String
    var refusal: String?
    var httpStatus: Int?
    var notificationId: String?
    var error: String?
    /// The request as it would go out (dry runs), signature redacted.
    var request: RequestReport?
    /// Per-device outcomes of a test send.
    var devices: [Device]?

    enum CodingKeys: String, CodingKey {
        case test, category, tags, format, properties, kind, status, refusal, error, request, devices
        case dryRun = "dry_run", storyKey = "story_key", httpStatus = "http_status", notificationId = "notification_id"
    }

    init(_ plan: PublishPlan, dryRun: Bool) {
        test = plan.push.test
        self.dryRun = dryRun
        category = plan.entry.category.rawValue
        tags = plan.entry.tags
        format = plan.entry.format.rawValue
        properties = plan.entry.properties
        storyKey = plan.entry.storyKey
        kind = plan.entry.kind.rawValue
        status = "would-send"
        refusal = plan.refusal?.description
        request = dryRun ? RequestReport(plan.request) : nil
    }
}

/// The shared steps of `publish` and `hub test-send`: plan, show, refuse a repeat, lock,
/// confirm, send, report (as text, or one JSON object).
enum PublishFlow {
    static func execute(_ push: ManualPush, publisher: Publisher, dryRun: Bool, confirm: Bool, wait: Double? = nil,
                        format: OutputFormat = .text) throws {
        // Planned against the ledger as it is now (read only: a dry run writes nothing).
        let preview = try call { try publisher.plan(push, ledger: try Ledger.open(configured: publisher.config.statePath, access: .read)) }
        var output = PublishOutput(preview, dryRun: dryRun)
        let text = preview.entry.properties["messageParam"] ?? preview.entry.properties["url"] ?? ""
        if format == .text {
            Terminal.output("\(push.test ? "test push" : "push") to [\(preview.entry.tags)] (\(preview.entry.format.rawValue)): \(text)")
        }
        if let refusal = preview.refusal {
            output.status = "refused"
            if format == .json { Terminal.output(JSONText.encode(output)) }
            if dryRun && format == .text { Terminal.output("dry run: the real command would refuse to send this") }
            Terminal.error(refusal.description)
            throw ExitCode(1)
        }
        if dryRun {
            if format == .json { return Terminal.output(JSONText.encode(output)) }
            Terminal.output(preview.request.redactedDescription())
            Terminal.output("dry run: nothing sent, nothing recorded\(preview.entry.kind == .repeat ? " (it would be recorded as a deliberate repeat)" : "")")
            return
        }
        if push.isTrial {
            if confirm { try ask() }
            let result = try call { try publisher.sendTrial(preview) }
            return try report(result, push: push, output: output, format: format)
        }
        // The lock first, so a running job is reported before anyone is asked to confirm.
        let (lock, ledger, plan) = try call { () throws -> (LedgerLock, Ledger, PublishPlan) in
            let lock = try LedgerLock(ledgerPath: LedgerLocation(configured: publisher.config.statePath).databasePath, wait: wait)
            let ledger = try Ledger.open(configured: publisher.config.statePath, access: .write)
            // Planned again under the lock: a run may have pushed the story meanwhile.
            return (lock, ledger, try publisher.plan(push, ledger: ledger))
        }
        if let refusal = plan.refusal {
            output.status = "refused"
            output.refusal = refusal.description
            if format == .json { Terminal.output(JSONText.encode(output)) }
            Terminal.error(refusal.description)
            throw ExitCode(1)
        }
        if confirm { try ask() }
        let result = try call { try publisher.send(plan, ledger: ledger) }
        withExtendedLifetime(lock) {}
        try report(result, push: push, output: PublishOutput(plan, dryRun: false), format: format)
    }

    /// Runs a ledger or publisher call; its error is printed and becomes the exit status.
    private static func call<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as LedgerError {
            throw ExitStatus.failing(error)
        } catch let error as RunError {
            throw ExitStatus.failing(error)
        }
    }

    private static func ask() throws {
        FileHandle.standardError.write(Data("Send it? [y/N] ".utf8))
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard answer == "y" || answer == "yes" else {
            Terminal.error("not confirmed; nothing sent")
            throw ExitCode(1)
        }
    }

    private static func report(_ result: PublishResult, push: ManualPush, output: PublishOutput, format: OutputFormat) throws {
        let outcome = result.outcome
        var output = output
        output.status = outcome.status == .sent ? "sent" : outcome.status == .pending ? "pending" : outcome.status == .unknown ? "unknown" : "failed"
        output.httpStatus = outcome.httpStatus
        output.notificationId = outcome.notificationId
        output.error = outcome.error
        output.devices = result.testOutcome?.results.map { .init(platform: $0.platform, registrationId: $0.registrationId, outcome: $0.outcome) }
        switch outcome.status {
        case .sent:
            if format == .text {
                Terminal.output("sent (\(outcome.httpStatus ?? 201))\(outcome.notificationId.map { ", notification id \($0)" } ?? "")")
            }
        case .scheduled:
            output.status = "scheduled"
            if format == .text {
                let when = push.at.map(FeedDates.format) ?? ""
                Terminal.output("scheduled for \(when)\(outcome.notificationId.map { ", scheduled notification id \($0) (newspush hub cancel \($0) cancels it)" } ?? "")")
            }
        case .cancelled:
            Terminal.error("not sent: cancelled")
        case .pending:
            let kept = push.isTrial ? "" : "; it waits in the outbox and the next run sends it while it is fresh"
            Terminal.error("not sent: \(outcome.error ?? "the hub did not take it")\(kept)")
        case .failed, .expired:
            Terminal.error("not sent: \(outcome.error ?? "refused")")
        case .unknown, .sending:
            Terminal.error("outcome unknown (it may have been delivered; it will not be re-sent): \(outcome.error ?? "")")
        }
        if format == .json {
            Terminal.output(JSONText.encode(output))
        } else if let testOutcome = result.testOutcome {
            Terminal.output("\(testOutcome.success) succeeded, \(testOutcome.failure) failed")
            for device in testOutcome.results {
                Terminal.output("  \(device.platform) \(device.registrationId): \(device.outcome)")
            }
        } else if push.test && outcome.status == .sent {
            Terminal.output("the hub returned no per-device outcomes")
        }
        let status = ExitStatus.code(for: outcome.status, stopped: result.stop != nil)
        if status != 0 { throw ExitCode(status) }
    }
}
