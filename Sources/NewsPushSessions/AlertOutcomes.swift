import Foundation
import Logging
import NewsPushLedger
import NotificationHubs

/// The hub's outcome counts of the alerts sent (SPEC §11, the Standard tier's per-message
/// telemetry), fetched after a run's sends, never before one: an alert accepted between a
/// minute and a day ago whose counts are not kept yet is asked about once per run, a few at a
/// time, and its counts are kept once the hub has finished with it.
enum AlertOutcomes {
    /// Alerts asked about per run.
    static let perRun = 10

    /// Asks the hub about the alerts waiting for their counts and keeps the final ones; stops
    /// at the first answer that concerns the hub (the tier has no telemetry, a wrong key, out of
    /// reach). Nothing here stops a run: what cannot be asked or kept is logged.
    static func collect(client: NotificationHubClient, ledger: Ledger, now: Date, logger: Logger) {
        let waiting: [(id: String, notificationId: String)]
        do {
            waiting = try ledger.alertsAwaitingOutcome(
                after: now.addingTimeInterval(-86400), before: now.addingTimeInterval(-60), limit: perRun)
        } catch {
            logger.info("the hub's outcome counts were not asked for: \(error.description)")
            return
        }
        for alert in waiting {
            switch client.telemetry(id: alert.notificationId) {
            case .details(let details):
                guard let counts = final(details) else { continue }
                do {
                    try ledger.noteAlertOutcome(
                        id: alert.id, delivered: counts.delivered, failed: counts.failed, at: now)
                } catch {
                    logger.info("the hub's outcome counts of alert \(alert.id) were not kept: \(error.description)")
                    return
                }
            case .notProcessedYet: continue
            case .failed(let status, let reason):
                logger.info("the hub gave no outcome counts (\(status)): \(reason)")
                return
            case .unreachable(let reason):
                logger.info("the hub's outcome counts were not asked for: \(reason)")
                return
            }
        }
    }

    /// Delivered (`Success`) and failed (every other outcome) once the hub has finished with
    /// the notification; nil while it is still at work.
    static func final(_ details: NotificationDetails) -> (delivered: Int, failed: Int)? {
        guard let state = details.state, !["Enqueued", "Processing", "Scheduled"].contains(state) else { return nil }
        var delivered = 0
        var failed = 0
        for outcomes in details.outcomeCounts.values {
            for (outcome, count) in outcomes {
                if outcome == "Success" { delivered += count } else { failed += count }
            }
        }
        return (delivered, failed)
    }
}
