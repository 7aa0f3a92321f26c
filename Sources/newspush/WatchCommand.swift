import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushSessions
import UnixSignals

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The resident watcher: the run's stages continuously, each feed fetched when it is due.",
        discussion: """
            Each feed has its own schedule (watch.interval, within watch.min_interval and \
            watch.max_interval): it adapts to how often the feed changes, never fetches sooner than \
            the server allows (Cache-Control max-age, Expires, Retry-After, RSS <ttl>) and backs \
            off on errors. Each cycle is a run of the due feeds (the same lock, ledger and report \
            as `run`; a line per push and per failure). SIGTERM finishes the cycle in hand and exits 0.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The ledger (default: `state` from the config).", completion: .file())
    var state: String?

    func run() throws {
        var context = global.context(try global.loadConfig())
        if let state { context.config.statePath = state }
        let stop = WatchStop()
        let signals = Task {
            for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
                Terminal.error("newspush watch: stopping after the cycle in hand")
                stop.raise()
            }
        }
        defer { signals.cancel() }
        let quiet = global.quiet
        try WatchSession(context: context).watch(until: stop) { result in
            if let text = result.report.changesText(failuresOnly: quiet) { Terminal.output(text) }
        }
    }
}
