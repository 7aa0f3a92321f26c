import ArgumentParser
import Foundation
import Logging
import NewsPushCore
import NewsPushModel
import NewsPushSessions
import NotificationHubs

enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

/// How much of a run's report is printed in text form.
enum ReportMode: String, ExpressibleByArgument, CaseIterable {
    /// Every item and its decision, per category (what `preview` shows).
    case full
    /// A line per push sent and per failure, and a summary; nothing at all for a quiet run (cron).
    case changes
}

/// The options `run` and `preview` share.
struct RunArguments: ParsableArguments {
    @Option(help: "The ledger (default: `state` from the config).", completion: .file())
    var state: String?

    @Option(help: "Output format: text or json (one JSON document on stdout).")
    var format: OutputFormat = .text

    @Option(
        name: .customLong("report"),
        help:
            ArgumentHelp(
                "Text report: changes (default for run: a line per push and per failure, nothing when nothing "
                    + "happened) or full (default for previews: every item and why).")
    )
    var reportMode: ReportMode?

    @Flag(
        help: "Print each hub request as it would go out (signature redacted); with --format json, inside the report.")
    var showRequests = false

    @Option(name: .customLong("feed"), help: "Only this feed (its name or URL); repeatable.")
    var feeds: [String] = []

    @Option(
        help:
            ArgumentHelp(
                "Feeds read for the first time (all of them on a first run) push their N newest eligible items instead "
                    + "of a silent baseline.")
    )
    var sendInitial: Int?

    @Option(
        help: "Write Prometheus metrics of the run here (atomically), for node exporter's textfile collector.",
        completion: .file())
    var metricsFile: String?

    func validate() throws {
        if let sendInitial, sendInitial < 0 { throw ValidationError("--send-initial must be 0 or more") }
        if let metricsFile, let reason = RunMetrics.cannotWrite(metricsFile) {
            throw ValidationError("--metrics-file \(metricsFile) cannot be written: \(reason)")
        }
    }

    /// Runs (or previews) through the run session, prints the report, writes the metrics.
    func execute(dryRun: Bool, global: GlobalOptions) throws {
        let started = Date()
        _ = global.bootstrapLogging()
        let config: NewsPushConfig
        do { config = try global.loadConfig() } catch {
            writeMetrics(nil, started: started, ledger: LedgerFacts(state: state ?? ""))
            throw error
        }
        var context = global.context(config)
        if let state { context.config.statePath = state }
        var session = RunSession(context: context)
        let progress = ProgressLine(enabled: format == .text && !global.quiet)
        session.progress = progress.show
        let result: RunResult
        do {
            result = try session.run(
                RunRequest(dryRun: dryRun, feeds: feeds, sendInitial: sendInitial, keepRequests: showRequests))
        } catch {
            progress.clear()
            writeMetrics(nil, started: started, ledger: LedgerFacts(state: context.config.statePath))
            throw error
        }
        progress.clear()
        render(result, dryRun: dryRun, global: global)
        var metricsWritten = true
        if !dryRun {
            metricsWritten = writeMetrics(
                result.report, started: started,
                ledger: LedgerFacts(state: context.config.statePath, lockWait: result.lockWait))
        }
        // The run did its work; the metrics it was asked for could not be written: partial.
        let code = ExitStatus.code(for: result.report.outcome)
        try ExitStatus.finish(metricsWritten ? code : max(code, 2))
    }

    /// The report as JSON, or as text (the full preview or the changes), with the requests.
    private func render(_ result: RunResult, dryRun: Bool, global: GlobalOptions) {
        var report = result.report
        switch format {
        case .json:
            if showRequests {
                report.requests = result.requests.map { request in
                    switch request {
                    case .success(let request): return RequestReport(request)
                    case .failure(let error): return RequestReport(failure: error.description)
                    }
                }
            }
            report.writeJSON { Terminal.output($0, terminator: "") }
            Terminal.output("")
        case .text:
            if showRequests {
                for request in result.requests {
                    switch request {
                    case .success(let request): Terminal.output(request.redactedDescription() + "\n")
                    case .failure(let error): Terminal.output("request not built: \(error)\n")
                    }
                }
            }
            switch reportMode ?? (dryRun ? .full : .changes) {
            case .full where !global.quiet:
                report.writeText(verbose: global.verbose) { Terminal.output($0) }
            case .full, .changes:
                if let text = report.changesText(failuresOnly: global.quiet) { Terminal.output(text) }
            }
        }
    }

    /// The metrics file, when asked for; a run that could not report writes its failure. False
    /// when it could not be written (said on stderr).
    @discardableResult
    private func writeMetrics(_ report: RunReport?, started: Date, ledger: LedgerFacts) -> Bool {
        guard let metricsFile else { return true }
        let now = Date()
        let text = RunMetrics.text(
            report: report, failure: report == nil, duration: now.timeIntervalSince(started), now: now,
            previousFile: metricsFile, ledger: ledger)
        do { try RunMetrics.write(text, to: metricsFile) } catch {
            Terminal.error("\(metricsFile): \(error.localizedDescription)")
            return false
        }
        return true
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

    @Argument(help: "Feed files, http(s) URLs, or - for standard input.", completion: .file())
    var sources: [String]

    func validate() throws {
        if sources.isEmpty { throw ValidationError("give at least one feed file, URL or -") }
        if sources.filter({ $0 == "-" }).count > 1 { throw ValidationError("standard input (-) can be read once") }
    }

    @Option(help: "json (one object, an array for several sources) or jsonl (one line per source).")
    var format: ParseFormat = .json

    enum ParseFormat: String, ExpressibleByArgument { case json, jsonl }

    func run() throws {
        _ = global.bootstrapLogging()
        let outputs = ParseSession.parse(
            sources, baseFolder: FileManager.default.currentDirectoryPath, clock: GlobalOptions.clock
        ) {
            FileHandle.standardInput.readDataToEndOfFile()
        }
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
        try ExitStatus.finish(ExitStatus.code(failures: outputs.filter { $0.feed == nil }.count))
    }
}
