import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushSessions

/// `newspush report` (SPEC §11): what each alert did.
struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "What each alert did: its audience, latency, the hub's outcome, and how many phones received and opened it.",
        discussion:
            "One row per alert the hub accepted (newest first). The counts come from the apps (POST "
            + "/api/alerts/{alertId}/events); no report knows who opened what.")

    @OptionGroup var options: StateCommand.Options
    @Option(help: "Only alerts sent this far back, e.g. 24h or 7d.") var since: String = "7d"
    @Option(help: "Only this alert (an id as `review list` and the desk show it).") var alert: String?
    @Option(help: "text or json") var format: OutputFormat = .text

    func validate() throws {
        if Durations.parse(since) == nil {
            throw ValidationError("--since '\(since)' is not a duration (e.g. 24h, 7d)")
        }
    }

    func run() throws {
        _ = options.global.bootstrapLogging()
        let session = ReportSession(location: try options.path(), clock: GlobalOptions.clock)
        let reports = try session.alerts(since: Durations.parse(since) ?? 7 * 86400, id: alert, limit: 100_000)
        if let alert, reports.isEmpty { Terminal.error("no alert \(alert) was accepted by the hub") }
        if format == .json {
            Terminal.output(JSONText.encode(["alerts": reports.map(ReportRow.init)]))
        } else {
            Terminal.output(ReportSession.text(reports))
        }
        if alert != nil && reports.isEmpty { try ExitStatus.finish(1) }
    }
}
