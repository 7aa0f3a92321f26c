import ArgumentParser
import Foundation
import NewsPushTesting

/// `newspush-bench events` (SPEC §11): the apps' reports of alerts through `newspush api`, beside
/// the registrations of the same run, on SQLite and on PostgreSQL: each engine registers
/// `installations` phones, publishes `alerts` alerts, then 64 clients post `events` events of
/// distinct installations, alerts and kinds; on SQLite the API's resident memory is read after
/// 10,000 events and after `memory`.
struct AlertEvents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Alert events per second through `newspush api` beside registrations, SQLite and PostgreSQL; memory.")

    @Option(help: "Installations registered (and reporting).") var installations = 10_000
    @Option(help: "Alerts published.") var alerts = 50
    @Option(help: "Events per measurement.") var events = 200_000
    @Option(help: "Concurrent clients (each on its own kept-alive connection).") var clients = 64
    @Option(help: "Events before the second memory reading, SQLite (0: skip; at most installations × alerts × 2).")
    var memory = 1_000_000

    func run() async throws {
        let newspush = BenchProcess.binaries.appendingPathComponent("newspush").path
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let hub = try await BenchProcess.emptyHub(in: folder)
        defer { hub.stop() }
        print("\(installations) installations, \(alerts) alerts, \(events) events per measurement, \(clients) clients")
        let sqlite = try folder.write("sqlite.yaml", Self.config(hubPort: hub.port, state: "events-state.db"))
        try await measure("SQLite", newspush, config: sqlite, readMemory: memory > 0)
        let postgres = try await LocalPostgres.start(fsync: true)
        defer { postgres.stop() }
        let pg = try folder.write(
            "pg.yaml", Self.config(hubPort: hub.port, state: try await postgres.createDatabase()))
        try await measure(
            "PostgreSQL", newspush, config: pg, readMemory: false,
            environment: [postgres.environmentEntry])
    }

    static func config(hubPort: Int, state: String) -> String {
        ApiRegistrations.config(hubPort: hubPort, state: state)
            + "\npolicy: {budget: {per_category: 10000, per: 1h}}"
    }

    /// One engine: registrations, then the alerts, then the events, in one `newspush api`.
    private func measure(
        _ engine: String, _ binary: String, config: String, readMemory: Bool, environment: [String] = []
    ) async throws {
        let variables = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"] + environment
        let api = try await BenchProcess.start(
            binary, ["api", "--listen", "127.0.0.1:0", "--config", config], variables)
        defer { api.stop() }
        let registered = try LoadClients.run(ports: [api.port], clients: clients, count: installations) { n in
            let body = #"{"platform":"fcmv1","pushChannel":"events-token-\#(n)","topics":["World","Sports"]}"#
            return "PUT /api/installations/e-\(n) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
        print("\(engine): registrations through newspush api: " + registered.line)
        let ids = try publish(binary, config: config, environment: variables + ["PATH=/usr/bin:/bin"])
        let (phones, perAlert) = (installations, installations * ids.count)
        // Event n: installation n mod phones, alert (n / phones) mod alerts, received then opened.
        let request: @Sendable (Int) -> String = { n in
            let kind = (n / perAlert) % 2 == 0 ? "received" : "opened"
            let body = #"{"installationId":"e-\#(n % phones)","event":"\#(kind)"}"#
            return "POST /api/alerts/\(ids[(n / phones) % ids.count])/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
        let warm = min(10_000, events)
        _ = try LoadClients.run(ports: [api.port], clients: clients, count: warm, expecting: 204, request: request)
        let before = api.residentKilobytes()
        let cpu = api.cpuSeconds()
        var timing = try LoadClients.run(ports: [api.port], clients: clients, count: events, expecting: 204) {
            request($0 + warm)
        }
        timing.unit = "events"
        print(
            "\(engine): events through newspush api: " + timing.line
                + String(
                    format: " (%.1f× the registration rate; CPU per 1,000 events %.2f s)",
                    timing.rate / registered.rate,
                    (api.cpuSeconds() - cpu) * 1000 / Double(events)))
        guard readMemory, memory > warm + events else { return }
        _ = try LoadClients.run(
            ports: [api.port], clients: clients, count: memory - warm - events, expecting: 204
        ) { request($0 + warm + events) }
        let after = api.residentKilobytes()
        print(
            String(
                format:
                    "\(engine): resident memory of newspush api: %.1f MB after %d events, %.1f MB after %d (+%.1f MB)",
                Double(before) / 1024, warm, Double(after) / 1024, memory, Double(after - before) / 1024))
        let report = try BenchProcess.runToEnd(
            binary, ["report", "--since", "1d", "--format", "json", "--config", config],
            variables + ["PATH=/usr/bin:/bin"])
        let counted =
            (try? JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])?["alerts"]
            as? [[String: Any]] ?? []
        let received = counted.compactMap { $0["received"] as? Int }.reduce(0, +)
        let opened = counted.compactMap { $0["opened"] as? Int }.reduce(0, +)
        print(
            "\(engine): newspush report counts \(received) received and \(opened) opened over \(counted.count) alerts")
    }

    /// Publishes the alerts (World and Sports, headlines of distinct words) and returns their ids.
    private func publish(_ binary: String, config: String, environment: [String]) throws -> [String] {
        let words = [
            "harbour", "senate", "copper", "glacier", "orbit", "tariff", "marathon", "vaccine", "drought", "summit",
            "pipeline", "lottery", "comet", "verdict", "ferry", "quarry", "festival", "satellite", "bridge", "reactor",
        ]
        for n in 0..<alerts {
            let title =
                (0..<4).map { words[(n * 7 + $0 * 3 + n / 20) % words.count] }.joined(separator: " ")
                + " \(n)"
            _ = try BenchProcess.runToEnd(
                binary,
                [
                    "publish", "--config", config, "--category", n % 2 == 0 ? "World" : "Sports", "--title", title,
                    "--yes",
                ],
                environment)
        }
        let report = try BenchProcess.runToEnd(
            binary, ["report", "--since", "1d", "--format", "json", "--config", config], environment)
        let rows =
            (try? JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])?["alerts"]
            as? [[String: Any]] ?? []
        let ids = rows.compactMap { $0["id"] as? String }
        guard ids.count == alerts else { throw ValidationError("published \(ids.count) of \(alerts) alerts") }
        return ids
    }
}
