import Foundation
import NewsPushModel
import Prometheus

#if canImport(Glibc)
    import Glibc
#endif

/// What the metrics say of the ledger: its engine, and how long the run waited for its lock
/// (nil when the run stopped before it had the lock).
public struct LedgerFacts: Sendable {
    /// `sqlite` or `postgres`.
    public var backend: String
    /// Seconds the run waited for the lock.
    public var lockWait: Double?

    /// The facts of one run over the ledger `state:` names.
    public init(state: String, lockWait: Double? = nil) {
        backend = PostgresAddress.isPostgres(state) ? "postgres" : "sqlite"
        self.lockWait = lockWait
    }
}

/// The `--metrics-file` of a run: Prometheus text format for node exporter's textfile
/// collector, replaced atomically so the collector never reads half a file.
public enum RunMetrics {
    /// The metrics of a run that produced a report (`report`), or of one that stopped before it
    /// could (`report` nil, `failure` set). The last success is carried over from the previous
    /// file when this run was not one.
    public static func text(
        report: RunReport?, failure: Bool, duration: Double, now: Date, previousFile: String?,
        ledger: LedgerFacts = LedgerFacts(state: "")
    ) -> String {
        let gauges = Gauges()
        let outcome: String =
            report.map { report in
                switch report.outcome {
                case .complete: return "complete"
                case .partial: return "partial"
                case .stopped: return "stopped"
                }
            } ?? "error"
        for name in ["complete", "partial", "stopped", "error"] {
            gauges.make(
                "run_outcome", "1 for how the last run ended (error: it stopped before reporting)", [("outcome", name)]
            )
            .set(name == outcome ? 1.0 : 0.0)
        }
        gauges.make("run_duration", unit: "seconds", "How long the last run took").set(duration)
        for backend in ["sqlite", "postgres"] {
            gauges.make(
                "ledger_backend", "1 for the ledger's engine (postgres: shared by several hosts)",
                [("backend", backend)]
            )
            .set(backend == ledger.backend ? 1.0 : 0.0)
        }
        if let wait = ledger.lockWait {
            gauges.make("lock_wait", unit: "seconds", "How long the last run waited for the ledger's lock").set(wait)
        }
        gauges.make("last_run_timestamp", unit: "seconds", "When the last run ended (Unix time)").set(
            now.timeIntervalSince1970)
        let lastSuccess =
            outcome == "complete" ? now.timeIntervalSince1970 : previousFile.flatMap(Self.lastSuccess(in:))
        if let lastSuccess {
            gauges.make(
                "last_success_timestamp", unit: "seconds",
                "When a run last fetched every feed and sent every push (Unix time)"
            ).set(lastSuccess)
        }
        if let report { reportGauges(report, gauges) }
        return gauges.registry.emitToString()
    }

    /// The metrics' gauges, all in the `newspush` namespace.
    private struct Gauges {
        let registry = PrometheusCollectorRegistry()

        func make(_ name: String, unit: String = "", _ help: String, _ labels: [(String, String)] = []) -> Gauge {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "newspush", metricName: name, unitName: unit, helpText: help),
                labels: labels)
        }
    }

    /// What the report says: feeds, new items, waiting reviews and pushes by category and outcome.
    private static func reportGauges(_ report: RunReport, _ gauges: Gauges) {
        let s = report.summary
        gauges.make("feeds", "Feeds of the last run by outcome", [("status", "ok")]).set(Double(s.feedsOk))
        gauges.make("feeds", "Feeds of the last run by outcome", [("status", "failed")]).set(Double(s.feedsFailed))
        gauges.make("items_new", "Items of the last run that no earlier run had seen").set(Double(s.itemsNew))
        gauges.make("review_waiting", "Pushes held for an editor after the last run (review.rules)").set(
            Double(s.reviewWaiting))
        for category in NewsCategory.allCases {
            let pushes = report.pushes.filter { $0.category == category }
            let counts: [(String, Int)] = [
                ("sent", pushes.filter { $0.status == .sent }.count),
                ("failed", pushes.filter { $0.status == .failed || $0.status == .unknown }.count),
                (
                    "pending",
                    report.items.decidedByThePlan.filter { $0.category == category && $0.decision == .pending }.count
                ),
            ]
            for (status, count) in counts {
                gauges.make(
                    "pushes", "Pushes of the last run by category and outcome (pending: waiting in the outbox)",
                    [("category", category.rawValue), ("status", status)]
                ).set(Double(count))
            }
        }
    }

    /// Why a metrics file cannot be written at `path` (its temporary file beside it cannot be
    /// made); nil when it can. Asked before a run, so a wrong path is said before anything is done.
    public static func cannotWrite(_ path: String) -> String? {
        let probe = "\(path).tmp-\(getpid())"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        close(fd)
        unlink(probe)
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
            return "it is not a regular file"
        }
        return nil
    }

    /// Writes `text` to `path` through a temporary file in the same folder and a rename.
    public static func write(_ text: String, to path: String) throws {
        let temporary = "\(path).tmp-\(getpid())"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw CocoaError(
                .fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot replace \(path): \(reason)"])
        }
    }

    /// The last-success timestamp of an earlier metrics file.
    static func lastSuccess(in path: String) -> Double? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("newspush_last_success_timestamp_seconds ") {
            return Double(line.split(separator: " ").last ?? "")
        }
        return nil
    }
}
