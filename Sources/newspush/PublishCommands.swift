import ArgumentParser
import Foundation
import NewsPushCore
import NotificationHubs

extension NewsCategory: ExpressibleByArgument {}

struct Publish: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish one notification by hand, for a category or a tag expression.",
        discussion: """
            The push is recorded in the state file, so the next scheduled run does not repeat the \
            story (matched by --url when given). --tags sends to other devices than the category's \
            (e.g. --tags user:alice to try it on one device first); such trials and --test sends are \
            not recorded. Asks for confirmation unless --yes.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "World, Politics, Business, Technology, Science or Sports.")
    var category: NewsCategory

    @Option(help: "The headline; the message is the category's template with it.")
    var title: String?

    @Option(help: "The exact message text (messageParam).")
    var message: String?

    @Option(help: "The story's URL.")
    var url: String?

    @Option(help: "A tag expression instead of the category's.")
    var tags: String?

    @Flag(help: "Show the request; send nothing.")
    var dryRun = false

    @Flag(help: "Use the hub's test flag (at most 10 devices) and print each device's outcome.")
    var test = false

    @Flag(help: "Do not ask for confirmation.")
    var yes = false

    func validate() throws {
        if (title == nil) == (message == nil) { throw ValidationError("give exactly one of --title and --message") }
        if let url, !(url.hasPrefix("http://") || url.hasPrefix("https://")) { throw ValidationError("--url must be an http(s) URL") }
    }

    func run() throws {
        let logger = global.bootstrapLogging()
        let config = try global.loadConfig()
        let publisher = Publisher(config: config, logger: logger)
        let push = ManualPush(category: category, title: title, message: message, url: url, tags: tags, test: test)
        try PublishFlow.execute(push, publisher: publisher, dryRun: dryRun, confirm: !yes)
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

        func run() throws {
            let logger = global.bootstrapLogging()
            let config = try global.loadConfig()
            let publisher = Publisher(config: config, logger: logger)
            try PublishFlow.execute(ManualPush(category: category, title: title, test: true), publisher: publisher,
                                    dryRun: false, confirm: false)
        }
    }
}

/// The shared steps of `publish` and `hub test-send`: plan, show, confirm, send, report.
enum PublishFlow {
    static func execute(_ push: ManualPush, publisher: Publisher, dryRun: Bool, confirm: Bool) throws {
        let plan: PublishPlan
        do { plan = try publisher.plan(push) } catch {
            Terminal.error(error.description)
            // A bad --tags expression is a usage error; anything else stops the publish.
            throw ExitCode(push.tags != nil && error.description.contains("tag") ? 64 : 1)
        }
        let text = plan.properties["messageParam"] ?? plan.properties["url"] ?? ""
        Terminal.output("\(push.test ? "test push" : "push") to [\(plan.tags)] (\(plan.format.rawValue)): \(text)")
        if dryRun {
            Terminal.output(plan.request.redactedDescription())
            Terminal.output("dry run: nothing sent, nothing recorded")
            return
        }
        if plan.recordsStory {
            do {
                if let previous = try publisher.previousPush(plan) {
                    Terminal.error("this story was already pushed (\(previous.status.rawValue) \(previous.pushedAt.map(FeedDates.format) ?? "")): \(previous.title ?? plan.key); not sending it twice")
                    throw ExitCode(1)
                }
            } catch let error as RunError {
                Terminal.error(error.description)
                throw ExitCode(1)
            }
        }
        if confirm {
            FileHandle.standardError.write(Data("Send it? [y/N] ".utf8))
            let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            guard answer == "y" || answer == "yes" else {
                Terminal.error("not confirmed; nothing sent")
                throw ExitCode(1)
            }
        }
        let result: PublishResult
        do { result = try publisher.send(plan) } catch {
            Terminal.error(error.description)
            if case .state(.locked) = error { throw ExitCode(75) }
            throw ExitCode(1)
        }
        switch result.outcome {
        case .accepted(let status, let id, _, _):
            Terminal.output("sent (\(status))\(id.map { ", notification id \($0)" } ?? "")")
        case .refused(_, let reason), .notAccepted(_, let reason):
            Terminal.error("not sent: \(reason)")
            throw ExitCode(2)
        case .unknown(_, let reason):
            Terminal.error("outcome unknown (it may have been delivered; it will not be re-sent): \(reason)")
            throw ExitCode(2)
        }
        if let outcome = result.testOutcome {
            Terminal.output("\(outcome.success) succeeded, \(outcome.failure) failed")
            for device in outcome.results {
                Terminal.output("  \(device.platform) \(device.registrationId): \(device.outcome)")
            }
        } else if push.test {
            Terminal.output("the hub returned no per-device outcomes")
        }
    }
}

