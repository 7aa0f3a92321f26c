import ArgumentParser
import Foundation
import NewsPushCore
import NotificationHubs

extension Hub {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the hub's per-message telemetry (Standard tier): state, times, and per-platform outcome counts.",
            discussion: "Give a notification id (as `run` and `publish` print it), or --last N for the latest pushes in the ledger.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "A notification id.") var notificationId: String?
        @Option(help: "The latest N pushes the hub took, from the ledger.") var last: Int?
        @Option(help: "text or json") var format: OutputFormat = .text

        struct Row: Encodable {
            var notificationId: String
            var storyKey: String?
            var message: String?
            var telemetry: NotificationDetails?
            var error: String?
            enum CodingKeys: String, CodingKey { case telemetry, error, message, notificationId = "notification_id", storyKey = "story_key" }
        }

        func validate() throws {
            if (notificationId == nil) == (last == nil) { throw ValidationError("give a NOTIFICATION_ID or --last N") }
            if let last, last < 1 || last > 100 { throw ValidationError("--last takes 1 to 100") }
        }

        func run() throws {
            let logger = global.bootstrapLogging()
            let config = try global.loadConfig()
            let client: NotificationHubClient
            do { client = try RunPipeline(config: config, logger: logger).makeHubClient() } catch { throw ExitStatus.failing(error) }
            var rows: [Row] = []
            if let notificationId {
                rows = [Row(notificationId: notificationId)]
            } else if let last {
                let entries: [OutboxEntry]
                do { entries = try Ledger.open(configured: config.statePath, access: .read).latestNotifications(last) } catch {
                    throw ExitStatus.failing(error)
                }
                rows = entries.map { Row(notificationId: $0.notificationId ?? "", storyKey: $0.storyKey, message: $0.properties["messageParam"] ?? $0.properties["url"]) }
                if rows.isEmpty { Terminal.error("the ledger holds no push with a notification id yet (ids come from Standard-tier hubs)") }
            }
            var worst: Int32 = 0
            for index in rows.indices {
                switch client.telemetry(id: rows[index].notificationId) {
                case .details(let details): rows[index].telemetry = details
                case .failed(let status, let reason):
                    rows[index].error = reason
                    worst = max(worst, status == 403 || status == 401 ? 1 : 2)
                case .unreachable(let reason):
                    rows[index].error = reason
                    worst = 1
                }
            }
            if format == .json {
                Terminal.output(JSONText.encode(rows))
            } else {
                for row in rows { Terminal.output(Self.text(row)) }
            }
            if worst != 0 { throw ExitCode(worst) }
        }

        static func text(_ row: Row) -> String {
            var lines = ["\(row.notificationId)\(row.message.map { "  \($0)" } ?? "")"]
            if let error = row.error { lines.append("  \(error)") }
            if let t = row.telemetry {
                lines.append("  state \(t.state ?? "?"); enqueued \(t.enqueueTime ?? "-"), started \(t.startTime ?? "-"), ended \(t.endTime ?? "-")")
                if t.outcomeCounts.isEmpty { lines.append("  no device outcomes yet") }
                for (platform, counts) in t.outcomeCounts.sorted(by: { $0.key < $1.key }) {
                    lines.append("  \(platform): " + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
                }
            }
            return lines.joined(separator: "\n")
        }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a scheduled send (`publish --at`) by its scheduled notification id.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The scheduled notification id `publish --at` printed.") var scheduledId: String

        func run() throws {
            let logger = global.bootstrapLogging()
            let config = try global.loadConfig()
            let client: NotificationHubClient
            do { client = try RunPipeline(config: config, logger: logger).makeHubClient() } catch { throw ExitStatus.failing(error) }
            switch client.perform(client.cancelScheduledRequest(id: scheduledId)) {
            case .failure(.notSent(let why)), .failure(.outcomeUnknown(let why)):
                Terminal.error("could not reach the hub: \(why); nothing was cancelled")
                throw ExitCode(1)
            case .success(let response) where response.status == 200:
                break
            case .success(let response):
                let why = response.status == 404 ? "the hub has no scheduled send '\(scheduledId)' (already delivered, or cancelled)"
                    : response.status == 403 ? "scheduled sends need the Standard tier (403)" : "the hub answered \(response.status)"
                Terminal.error("not cancelled: \(why)")
                throw ExitCode(response.status == 404 ? 2 : 1)
            }
            do {
                let lock = try LedgerLock(ledgerPath: LedgerLocation(configured: config.statePath).databasePath, wait: 30)
                let recorded = try Ledger.open(configured: config.statePath, access: .write).cancelScheduled(notificationId: scheduledId, at: Date())
                withExtendedLifetime(lock) {}
                Terminal.output("cancelled \(scheduledId)\(recorded ? "" : " (the ledger had no record of it)")")
            } catch {
                Terminal.error("cancelled at the hub, but the ledger could not record it: \(error)")
                throw ExitCode(1)
            }
        }
    }
}
