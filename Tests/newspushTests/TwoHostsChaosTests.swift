import Foundation
import HubEmulator
import NewsPushTesting
import Synchronization
import Testing

@testable import NewsClassifier
@testable import NewsPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Two hosts on one PostgreSQL ledger: each runs 70 times back to back, either is killed with
/// SIGKILL at random moments, and the database restarts once (after one host's 40th run),
/// while the feed publishes a new story every third fetch. Every story reaches the hub exactly
/// once, or is recorded as `unknown` (a send cut off mid-request, never repeated); none is lost.
/// Driven by events, never by the wall clock.
@Suite("PostgreSQL ledger: two hosts under kills and a restart", .enabled(if: LocalPostgres.missing == nil))
struct TwoHostsChaosTests {
    /// A made-up headline for story `n`: five words of a made-up vocabulary, so no two
    /// headlines look alike to the near-duplicate check.
    static func headline(_ n: Int) -> String {
        let syllables = ["ka", "lo", "mi", "ru", "ten", "va", "zor", "pel", "dri", "su", "nax", "bo", "quin", "fe"]
        var generator = ClassifierTraining.SplitMix(seed: UInt64(n) &* 7919 &+ 13)
        let words = (0..<5).map { _ in
            (0..<3).map { _ in syllables[Int(generator.next() % UInt64(syllables.count))] }.joined()
        }
        return "Story \(n) " + words.joined(separator: " ")
    }

    /// What one host did in the minute.
    final class HostLog: @unchecked Sendable {
        var runs = 0
        var kills = 0
        var statuses: [Int32: Int] = [:]
    }

    /// Runs `newspush run` back to back `runs` times, killing about one run in two at a random
    /// moment within its first 120 ms (the chaos; nothing waits for a time).
    static func cron(_ binary: URL, config: String, environment: [String: String], runs: Int) -> HostLog {
        let log = HostLog()
        while log.runs < runs {
            guard
                let process = try? ChildProcess.start(
                    binary.path, ["run", "--config", config, "-q"], environment: environment, output: .discard,
                    errors: .discard)
            else { break }
            log.runs += 1
            if Bool.random() {
                usleep(UInt32.random(in: 0..<120_000))
                if process.isRunning {
                    process.signal(SIGKILL)
                    log.kills += 1
                }
            }
            log.statuses[process.waitForExit(), default: 0] += 1
        }
        return log
    }

    @Test(.timeLimit(.minutes(4))) func everyStoryReachesTheHubOnceOrIsRecordedUnknown() async throws {
        let server = try await LocalPostgres.start()
        defer { server.stop() }
        let state = try await server.createDatabase()
        let hub = try await LocalHub.start(devicesYAML: PostgresLedgerTests.devices)
        defer { hub.stop() }
        // The wire publishes a new story every third fetch: the hosts' own reads move it on.
        let start = Date()
        let fetches = Mutex(0)
        let feed = try await LocalHTTPServer.start { _ in
            let newest = fetches.withLock { count in
                count += 1
                return count / 3
            }
            let items = (max(0, newest - 30)...newest).reversed().map { n in
                (guid: "story-\(n)", title: Self.headline(n), published: start.addingTimeInterval(Double(n) / 100))
            }
            return CannedResponse(text: rssFeed(title: "Wire", dated: items))
        }
        defer { feed.stop() }
        let folders = [try TemporaryFolder(), try TemporaryFolder()]
        defer { folders.forEach { $0.cleanup() } }
        let configs = try folders.enumerated().map { index, folder in
            try PostgresLedgerTests.host(
                folder, name: "host\(index)", state: state, hub: hub, feeds: ["\(feed.baseURL)/wire.xml"])
        }
        var environment = hubEnvironment
        environment.merge(server.environment) { $1 }
        let binary = try binaryURL()
        let environmentCopy = environment
        // The database restarts once, in the thick of it: after the first host's 40th run, while
        // the second host is running.
        async let second = offThePool { Self.cron(binary, config: configs[1], environment: environmentCopy, runs: 80) }
        let before = await offThePool { Self.cron(binary, config: configs[0], environment: environmentCopy, runs: 40) }
        try await server.restart()
        let after = await offThePool { Self.cron(binary, config: configs[0], environment: environmentCopy, runs: 40) }
        let logs = [before, after, await second]
        let published = fetches.withLock { $0 } / 3
        // A last run with nobody killing it sends what is still pending.
        var last = try await newspush(["run", "--config", configs[0]], environment: environment)
        for _ in 0..<5 where last.status != 0 {
            last = try await newspush(["run", "--config", configs[0]], environment: environment)
        }
        #expect(last.status == 0, "\(last.stderr)")

        let delivered = await hub.emulator.allDeliveries().map(\.payload)
        let export = try await newspush(["state", "export", "--config", configs[0]], environment: environment)
        let outbox = try #require(
            (try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: Any])?["outbox"]
                as? [[String: Any]])
        let unknown = Set(
            outbox.filter { $0["status"] as? String == "unknown" }.compactMap {
                ($0["properties"] as? [String: String])?["title"]
            })
        var twice: [String] = []
        var lost: [String] = []
        for n in 0...published {
            let title = Self.headline(n)
            let count = delivered.filter { $0.contains(title) }.count
            if count > 1 { twice.append(title) }
            if count == 0 && !unknown.contains(title) { lost.append(title) }
        }
        let kills = logs.map(\.kills).reduce(0, +)
        let runs = logs.map(\.runs).reduce(0, +)
        #expect(runs >= 100 && kills >= 10, "runs \(runs), kills \(kills)")
        #expect(twice.isEmpty, "pushed twice: \(twice)")
        #expect(lost.isEmpty, "lost: \(lost) of \(published + 1); unknown \(unknown.count)")
        print(
            "two hosts: \(runs) runs (\(logs.map { $0.statuses.description })), \(kills) killed, "
                + "\(published + 1) stories, \(delivered.count) delivered, \(unknown.count) unknown")
    }
}
