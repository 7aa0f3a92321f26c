import ArgumentParser
import Foundation
import Logging
import NewsPushCore
import NotificationHubs

enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

/// The options `run` and `preview` share.
struct RunArguments: ParsableArguments {
    @Option(help: "The ledger (default: `state` from the config).")
    var state: String?

    @Option(help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Flag(help: "Print each hub request as it would go out (signature redacted).")
    var showRequests = false

    @Option(name: .customLong("feed"), help: "Only this feed (its name or URL); repeatable.")
    var feeds: [String] = []

    @Option(help: "Feeds read for the first time (all of them on a first run) push their N newest eligible items instead of a silent baseline.")
    var sendInitial: Int?

    func validate() throws {
        if let sendInitial, sendInitial < 0 { throw ValidationError("--send-initial must be 0 or more") }
    }

    func execute(dryRun: Bool, global: GlobalOptions) throws {
        let logger = global.bootstrapLogging()
        var config = try global.loadConfig()
        if let state { config.statePath = state }
        let pipeline = RunPipeline(config: config, logger: logger)
        let result: RunResult
        do {
            result = try pipeline.run(RunOptions(dryRun: dryRun, feeds: feeds, sendInitial: sendInitial,
                                                 keepRequests: showRequests))
        } catch {
            throw ExitStatus.failing(error)
        }
        if showRequests {
            for request in result.requests {
                Terminal.output(request.redactedDescription())
                Terminal.output("")
            }
        }
        switch format {
        case .json: Terminal.output(result.report.jsonText())
        case .text: Terminal.output(result.report.text(verbose: global.verbose))
        }
        if let stop = result.report.stop { Terminal.error(stop.description) }
        let status = ExitStatus.code(for: result.report.outcome)
        if status != 0 { throw ExitCode(status) }
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The scheduled job: fetch, classify, dedupe, plan and push.",
        discussion: "With --dry-run, the same as `preview`: nothing is sent and nothing is written.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: RunArguments

    @Flag(help: "Preview: print every push it would send, write nothing.")
    var dryRun = false

    func run() throws {
        try arguments.execute(dryRun: dryRun, global: global)
    }
}

struct Preview: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show exactly what the next run would push, without sending or writing anything (run --dry-run).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: RunArguments

    func run() throws {
        try arguments.execute(dryRun: true, global: global)
    }
}

struct Parse: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Parse feed files or URLs and print their items as JSON.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Feed files or http(s) URLs.")
    var sources: [String]

    @Option(help: "json (one object, an array for several sources) or jsonl (one line per source).")
    var format: ParseFormat = .json

    enum ParseFormat: String, ExpressibleByArgument { case json, jsonl }

    func run() throws {
        _ = global.bootstrapLogging()
        let fetcher = FeedFetcher(settings: FetchSettings(), baseFolder: FileManager.default.currentDirectoryPath)
        let fetched = fetcher.fetch(sources)
        var outputs: [ParseOutput] = []
        for (source, fetched) in zip(sources, fetched) {
            let base = source.contains("://") ? fetched.finalURL : URL(fileURLWithPath: fetcher.localPath(source)).absoluteString
            let read = FeedRead.read(fetched, base: base)
            outputs.append(ParseOutput(source: source, feed: read.feed, error: read.feed == nil ? read.error ?? "not read" : nil))
        }
        let failed = outputs.contains { $0.feed == nil }
        switch format {
        case .jsonl:
            for output in outputs { Terminal.output(output.jsonText(pretty: false)) }
        case .json:
            if outputs.count == 1 {
                Terminal.output(outputs[0].jsonText(pretty: true))
            } else {
                Terminal.output("[\n" + outputs.map { $0.jsonText(pretty: true) }.joined(separator: ",\n") + "\n]")
            }
        }
        if failed { throw ExitCode(2) }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate the config and report every problem found (with --fetch, also fetch and parse every feed once).")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Also fetch and parse every feed once.")
    var fetch = false

    func run() throws {
        _ = global.bootstrapLogging()
        let config = try global.loadConfig()
        Terminal.output("\(config.file): ok (\(config.feeds.count) feed\(config.feeds.count == 1 ? "" : "s"), hub '\(config.hub.name)')")
        guard fetch else { return }
        let fetcher = FeedFetcher(settings: config.fetch, baseFolder: (config.file as NSString).deletingLastPathComponent)
        let results = fetcher.fetch(config.feeds.map(\.url))
        var failures = 0
        for (feed, fetched) in zip(config.feeds, results) {
            let name = feed.name ?? feed.url
            let read = FeedRead.read(fetched, base: fetched.finalURL)
            guard let parsed = read.feed else {
                failures += 1
                Terminal.output("FAIL \(name): \(read.error ?? "\(feed.url): not read")")
                continue
            }
            let notes = parsed.problems.isEmpty ? "" : " (\(parsed.problems.joined(separator: "; ")))"
            Terminal.output("ok   \(name): \(parsed.format.rawValue), \(parsed.items.count) items\(notes)")
        }
        if failures > 0 { throw ExitCode(2) }
    }
}
