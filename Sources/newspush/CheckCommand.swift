import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushModel
import NewsPushSessions

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Validate the config and report every problem found: the file, the hub credentials (signing, offline), "
            + "the ledger's folder; with --fetch, also fetch and parse every feed once."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Also fetch and parse every feed once.")
    var fetch = false

    @Flag(
        help: ArgumentHelp(
            "The go-live check: one test push (the hub's test flag, at most 10 devices, nothing recorded) per format "
                + "the config sends, and what the hub's answers say to fix; exit 0 only when every format reached a "
                + "device."))
    var hub = false

    @Option(help: "text or json")
    var format: OutputFormat = .text

    struct Output: Encodable {
        var config: String
        var ok: Bool
        var problems: [String]
        var warnings: [String]?
        var checks: [ConfigCheck]
        var feeds: [FeedCheck]?
    }

    func run() throws {
        let config: NewsPushConfig
        if format == .text {
            config = try global.loadConfig()  // every problem on stderr, exit 78
        } else {
            // Every problem in the document instead.
            do { config = try ConfigLoader().load(path: global.config) } catch {
                print(
                    Output(
                        config: global.config, ok: false, problems: error.problems.map(\.description), checks: [],
                        feeds: nil))
                try ExitStatus.finish(ExitStatus.code(for: error))
                return
            }
        }
        let outcome = CheckSession(context: global.context(config)).check(fetch: fetch, hub: hub)
        let problems = outcome.problems
        switch format {
        case .json:
            print(
                Output(
                    config: config.file, ok: problems.isEmpty && outcome.feeds?.allSatisfy(\.ok) != false,
                    problems: problems, warnings: outcome.warnings.isEmpty ? nil : outcome.warnings,
                    checks: outcome.checks, feeds: outcome.feeds))
        case .text:
            for check in outcome.checks {
                let mark = check.severity == .ok ? "ok  " : check.severity == .warning ? "warn" : "FAIL"
                Terminal.output("\(mark) \(check.check): \(check.detail)")
            }
            for feed in outcome.feeds ?? [] {
                if feed.ok {
                    let notes = feed.problems.isEmpty ? "" : " (\(feed.problems.joined(separator: "; ")))"
                    Terminal.output("ok   feed \(feed.name): \(feed.format ?? ""), \(feed.items ?? 0) items\(notes)")
                } else {
                    Terminal.output("FAIL feed \(feed.name): \(feed.error ?? "not read")")
                }
            }
            let count = problems.isEmpty ? "ok" : "\(problems.count) problem\(problems.count == 1 ? "" : "s")"
            let feeds = "\(config.feeds.count) feed\(config.feeds.count == 1 ? "" : "s")"
            Terminal.output("\(config.file): \(count) (\(feeds), hub '\(config.hub.name)')")
        }
        try ExitStatus.finish(ExitStatus.code(for: outcome))
    }

    private func print(_ output: Output) {
        Terminal.output(JSONText.encode(output))
    }
}
