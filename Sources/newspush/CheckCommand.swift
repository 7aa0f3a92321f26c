import ArgumentParser
import Foundation
import NewsPushCore

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate the config and report every problem found: the file, the hub credentials (signing, offline), the ledger's folder; with --fetch, also fetch and parse every feed once.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Also fetch and parse every feed once.")
    var fetch = false

    @Option(help: "text or json")
    var format: OutputFormat = .text

    /// One feed fetched and parsed by `--fetch`.
    struct FeedResult: Encodable {
        var name: String
        var url: String
        var ok: Bool
        var format: String?
        var items: Int?
        var error: String?
        var problems: [String]
    }

    struct Output: Encodable {
        var config: String
        var ok: Bool
        var problems: [String]
        var checks: [ConfigCheck]
        var feeds: [FeedResult]?
    }

    func run() throws {
        _ = global.bootstrapLogging()
        let config: NewsPushConfig
        if format == .text {
            config = try global.loadConfig()   // prints every problem and exits 78
        } else {
            do { config = try ConfigLoader().load(path: global.config) } catch {
                print(Output(config: global.config, ok: false, problems: error.problems.map(\.description), checks: [], feeds: nil))
                throw ExitCode(78)
            }
        }
        let checks = ConfigCheck.run(config)
        let feeds = fetch ? fetchAll(config) : nil
        let problems = checks.filter { $0.severity != .ok }.map { "\($0.check): \($0.detail)" }
        switch format {
        case .json:
            print(Output(config: config.file, ok: problems.isEmpty && feeds?.allSatisfy(\.ok) != false, problems: problems, checks: checks, feeds: feeds))
        case .text:
            for check in checks { Terminal.output("\(check.severity == .ok ? "ok  " : "FAIL") \(check.check): \(check.detail)") }
            for feed in feeds ?? [] {
                if feed.ok {
                    let notes = feed.problems.isEmpty ? "" : " (\(feed.problems.joined(separator: "; ")))"
                    Terminal.output("ok   feed \(feed.name): \(feed.format ?? ""), \(feed.items ?? 0) items\(notes)")
                } else {
                    Terminal.output("FAIL feed \(feed.name): \(feed.error ?? "not read")")
                }
            }
            Terminal.output("\(config.file): \(problems.isEmpty ? "ok" : "\(problems.count) problem\(problems.count == 1 ? "" : "s")") (\(config.feeds.count) feed\(config.feeds.count == 1 ? "" : "s"), hub '\(config.hub.name)')")
        }
        if checks.contains(where: { $0.severity == .config }) { throw ExitCode(78) }
        if checks.contains(where: { $0.severity == .ledger }) { throw ExitCode(1) }
        if feeds?.contains(where: { !$0.ok }) == true { throw ExitCode(2) }
    }

    private func fetchAll(_ config: NewsPushConfig) -> [FeedResult] {
        let fetcher = FeedFetcher(settings: config.fetch, baseFolder: config.folder)
        return zip(config.feeds, fetcher.fetch(config.feeds.map(\.url))).map { feed, fetched in
            let read = FeedRead.read(fetched, base: fetched.finalURL)
            return FeedResult(name: feed.name ?? read.feed?.title ?? feed.url, url: feed.url, ok: read.feed != nil,
                              format: read.feed?.format.rawValue, items: read.feed?.items.count,
                              error: read.feed == nil ? read.error ?? "\(feed.url): not read" : nil, problems: read.feed?.problems ?? [])
        }
    }

    private func print(_ output: Output) {
        Terminal.output(JSONText.encode(output))
    }
}

/// Pretty JSON with sorted keys: what every `--format json` prints.
enum JSONText {
    static func encode(_ value: some Encodable, pretty: Bool = true) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
