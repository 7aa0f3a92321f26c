import ArgumentParser
import Foundation
import Logging
import NewsPushCore
import NewsPushHTTP
import NewsPushSessions
import NewsPushWatch
import UnixSignals

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The resident watcher: the run's stages continuously, each feed fetched when it is due.",
        discussion: """
            Each feed has its own schedule (watch.interval, within watch.min_interval and \
            watch.max_interval): it adapts to how often the feed changes, never fetches sooner than \
            the server allows (Cache-Control max-age, Expires, Retry-After, RSS <ttl>) and backs \
            off on errors. Each cycle is a run of the due feeds (the same lock, ledger and report \
            as `run`; a line per push and per failure, and one per alert with its latency). The \
            listener (watch.listen) takes WebSub distributions, publish pings (`newspush ping`) \
            and serves /metrics. SIGTERM finishes the cycle in hand and exits 0.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The ledger (default: `state` from the config).", completion: .file())
    var state: String?

    @Option(help: "ADDRESS:PORT the listener takes WebSub callbacks and pings on (default: watch.listen), or off.")
    var listen: String?

    func validate() throws {
        if let listen, listen.lowercased() != "off" { _ = try Serving.address(listen) }
    }

    func run() throws {
        var context = global.context(try global.loadConfig())
        if let state { context.config.statePath = state }
        if let listen { context.config.watch.listen = listen.lowercased() == "off" ? nil : listen }
        let inbox = WatchInbox()
        let signals = Task {
            for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
                // An orderly stop, said as one: journald and operators read "error" as a fault.
                FileHandle.standardError.write(Data("newspush watch: stopping after the cycle in hand\n".utf8))
                inbox.raise()
            }
        }
        defer { signals.cancel() }
        let metrics = WatchMetrics()
        let health = WatchHealth()
        let parts = WatchListener.Parts(
            inbox: inbox, callbacks: WebSubCallbacks(context: context) { inbox.subscriptionChanged() },
            metrics: metrics, health: health)
        let listener = try listen(parts: parts, context: context)
        defer { listener?.cancel() }
        let quiet = global.quiet
        var session = WatchSession(context: context)
        #if DEBUG
            // Debug builds (the tests): how long a cycle waits for another job's lock.
            if let wait = ProcessInfo.processInfo.environment["NEWSPUSH_TEST_LOCK_WAIT"].flatMap(Double.init) {
                session.lockWait = wait
            }
        #endif
        try session.watch(inbox, health: health) { result in
            metrics.record(result)
            if let text = result.report.changesText(failuresOnly: quiet) { Terminal.output(text) }
            if !quiet { for line in Self.latencyLines(result) { Terminal.output(line) } }
            Terminal.flush()
        }
    }

    /// Starts the listener (`watch.listen`) unless it is off; a port that cannot be bound
    /// stops the watcher before it watches (exit 1), so an operator sees it at once.
    private func listen(parts: WatchListener.Parts, context: SessionContext) throws -> Task<Void, Never>? {
        guard let listen = context.config.watch.listen else { return nil }
        let address = try Serving.address(listen)
        let listener = WatchListener(parts: parts, context: context)
        let bound = ListenerStart()
        let task = Task {
            do {
                try await Serving.serve("watch", listen: listen, address: address) { onReady in
                    try await listener.run(address: address) { port in
                        await onReady(port)
                        bound.settle(nil)
                    }
                }
            } catch {
                bound.settle("\(error)")
            }
        }
        if let failure = bound.wait() {
            throw CannotServe(reason: failure)
        }
        return task
    }

    /// `alert KEY accepted 1.4 s after first seen (95 s after its pubDate)`: the latency of
    /// each push the hub accepted this cycle.
    static func latencyLines(_ result: RunResult) -> [String] {
        result.report.pushes.compactMap { push in
            guard let accepted = push.acceptedAt, let seen = push.firstSeen else { return nil }
            let latency = String(format: "%.1f", max(0, accepted.timeIntervalSince(seen)))
            let age = push.published.map {
                String(format: " (%.0f s after its pubDate)", accepted.timeIntervalSince($0))
            }
            return "alert \(push.itemKey) accepted \(latency) s after first seen\(age ?? "")"
        }
    }
}

/// The listener's start, awaited by the watcher's thread: nil once bound, or why it failed.
private final class ListenerStart: @unchecked Sendable {
    private let condition = NSCondition()
    private var outcome: String??

    func settle(_ failure: String?) {
        condition.lock()
        if outcome == nil { outcome = .some(failure) }
        condition.broadcast()
        condition.unlock()
    }

    func wait() -> String? {
        condition.lock()
        defer { condition.unlock() }
        while outcome == nil { condition.wait() }
        return outcome ?? nil
    }
}

struct Ping: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Tells the running watcher that FEED changed: it fetches it now.",
        discussion: """
            Calls POST /ping/FEED on the watcher's listener (watch.listen) with the feed's token \
            from watch.ping_tokens; pings within a second coalesce into one fetch. A CMS calls the \
            same route right after publishing.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The feed: its name in the config (or its URL).")
    var feed: String

    func run() throws {
        // A ping needs the listener and the feed's token, not the hub's key (a CMS host has none).
        let config = try global.loadConfig(requireHub: false)
        guard let listen = config.watch.listen, let address = ListenAddress(listen) else {
            throw ValidationError("watch.listen is off: no watcher listens for pings")
        }
        guard let feed = config.feeds.first(where: { $0.name == self.feed || $0.url == self.feed }) else {
            throw ValidationError("no feed named '\(feed)' in \(config.file)")
        }
        guard let token = config.watch.pingTokens[WatchFeeds.id(feed)] else {
            throw ValidationError("watch.ping_tokens has no token for '\(WatchFeeds.id(feed))'")
        }
        let host =
            ["0.0.0.0", "::"].contains(address.host)
            ? "127.0.0.1" : address.host.contains(":") ? "[\(address.host)]" : address.host
        let url = "http://\(host):\(address.port)/ping/\(WatchFeeds.segment(feed))"
        let answer = DocumentFetch.post(
            url, headers: [("Authorization", "Bearer \(token)")], body: Data(), userAgent: "newspush ping",
            timeout: 10)
        switch answer {
        case .success(let answer) where answer.status == 202:
            Terminal.output("pinged \(WatchFeeds.id(feed)): the watcher fetches it now")
        case .success(let answer):
            let said = String(decoding: answer.body.prefix(300), as: UTF8.self)
            throw CannotServe(reason: "the watcher at \(listen) answered \(answer.status): \(said)")
        case .failure(let failure):
            throw CannotServe(reason: "no watcher answered at \(listen): \(failure)")
        }
    }
}
