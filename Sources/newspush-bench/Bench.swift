import ArgumentParser
import Foundation
import Logging
import NewsPushCore
import NewsPushTesting
import NotificationHubs

/// Benchmarks (not tests: a timing never fails anything). Each prints its figures.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "newspush-bench",
        abstract: "Benchmarks for newspush.",
        subcommands: [HubPushes.self])
}

/// `newspush-bench hub`: N pushes through the whole run pipeline to the local emulator.
struct HubPushes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "Push N items through a full `newspush run` to the in-process hub emulator, and time the bare client beside it.")

    @Option(help: "Pushes per measurement.")
    var pushes = 1000

    @Option(help: "hub.concurrency for the run.")
    var concurrency = 8

    @Option(help: "Repetitions; the best and median are reported.")
    var repeats = 3

    func run() async throws {
        let hub = try await LocalHub.start(devicesYAML: """
            hub: breaking-news
            devices:
              - {id: phone-1, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
            """)
        defer { hub.stop() }
        var pipelineTimes: [Double] = []
        var sequentialTimes: [Double] = []
        for round in 0..<repeats {
            let items = (0..<pushes).map { (guid: "r\(round)-\($0)", title: "Story \($0) of round \(round)", minutesAgo: Double($0 % 120)) }
            let feeds = try await LocalHTTPServer.serving(["/world.xml": CannedResponse(text: rssFeed(title: "World", items: items))])
            let folder = try TemporaryFolder()
            let configPath = try folder.write("feeds.yaml", """
                hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}", endpoint: "\(hub.endpoint)", concurrency: \(concurrency)}
                policy: {first_run: send, budget: {per_category: \(pushes), per: 1h}}
                feeds:
                  - {url: "\(feeds.baseURL)/world.xml", category: World}
                """)
            let config = try ConfigLoader(environment: ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString]).load(path: configPath)
            var logger = Logger(label: "bench")
            logger.logLevel = .critical
            let pipeline = RunPipeline(config: config, logger: logger)
            let (elapsed, sent) = await offThePool { () -> (Double, Int) in
                let start = DispatchTime.now()
                let result = try? pipeline.run(RunOptions())
                return (Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9, result?.report.summary.pushesSent ?? 0)
            }
            guard sent == pushes else { throw ValidationError("only \(sent) of \(pushes) pushes were sent") }
            pipelineTimes.append(elapsed)

            // The bare client, one request after another on one kept-alive connection.
            let client = try pipeline.makeHubClient()
            let sequential = await offThePool { () -> Double in
                let start = DispatchTime.now()
                for i in 0..<pushes {
                    guard let request = try? client.templateRequest(properties: ["messageParam": "bare \(i)"], tags: "World") else { continue }
                    _ = client.send(request)
                }
                return Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
            }
            sequentialTimes.append(sequential)
            feeds.stop()
            folder.cleanup()
        }
        func summary(_ times: [Double]) -> String {
            let sorted = times.sorted()
            return String(format: "best %.3f s, median %.3f s (%.0f pushes/s at best)", sorted[0], sorted[sorted.count / 2], Double(pushes) / sorted[0])
        }
        print("newspush run, \(pushes) pushes, hub.concurrency \(concurrency), state journalled: \(summary(pipelineTimes))")
        print("bare client, \(pushes) sequential sends, no state:           \(summary(sequentialTimes))")
        print("deliveries logged by the emulator: \(await hub.emulator.allDeliveries().count)")
    }
}
