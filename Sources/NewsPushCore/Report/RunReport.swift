import FeedParsing
import Foundation
import NewsPushModel
import NotificationHubs

/// The report of one run: SPEC §3's `run --format json` object.
public struct RunReport: Encodable, Sendable {
    /// A preview: nothing was sent or written.
    public var dryRun: Bool
    /// The run's clock reading.
    @Timestamped public var startedAt: Date
    /// When the report was made.
    @Timestamped public var finishedAt: Date
    /// Every feed of the run.
    public var feeds: [FeedReport] = []
    /// Every item, with its decision (read from the run's item log as they are walked).
    public var items = ReportItems([])
    /// Every push, with what became of it.
    public var pushes: [PushReport] = []
    /// The counts.
    public var summary = RunSummary()
    /// Why sending stopped before the outbox was empty (exit status 1), when it did.
    public var stop: SendStop? {
        didSet { sendingStopped = stop?.reason }
    }
    /// `stop`'s reason, as the JSON names it.
    private var sendingStopped: String?
    /// The hub requests (signature redacted), when `--show-requests` asks for them in the JSON.
    public var requests: [RequestReport]?
    /// Pushes a killed run left half-sent, settled by this run as `unknown` (never re-sent);
    /// absent when there were none.
    public var interruptedSends: [PushReport]?

    enum CodingKeys: String, CodingKey {
        case dryRun = "dry_run", startedAt = "started_at", finishedAt = "finished_at", feeds, items, pushes, summary
        case sendingStopped = "sending_stopped", requests, interruptedSends = "interrupted_sends"
    }

    /// An empty report of a run (or, `dryRun`, a preview) between two times.
    public init(dryRun: Bool, startedAt: Date, finishedAt: Date) {
        self.dryRun = dryRun
        self.startedAt = startedAt
        self.finishedAt = finishedAt
    }

    /// Whether anything failed (exit status 2).
    public var isPartial: Bool { summary.feedsFailed > 0 || summary.pushesFailed > 0 }

    /// How the run ended, for the exit status.
    public var outcome: RunOutcome {
        if stop != nil { return .stopped }
        return isPartial ? .partial : .complete
    }
}

/// An optional value the JSON shows as `null` when it is absent (SPEC §3 lists these fields
/// always), where the synthesized encoding would leave the key out.
@propertyWrapper
public struct Nullable<Value: Encodable & Sendable>: Encodable, Sendable {
    /// The value, or nil (`null`).
    public var wrappedValue: Value?

    /// The value, or nil.
    public init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    /// The value, or `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

/// A time the JSON shows in newspush's one form (RFC 3339 in UTC), whatever the encoder's
/// date strategy; `null` when absent.
@propertyWrapper
public struct Timestamped<Value: Sendable>: Encodable, Sendable {
    /// The time (a `Date` or an optional one).
    public var wrappedValue: Value

    /// The time (or an optional time).
    public init(wrappedValue: Value) {
        self.wrappedValue = wrappedValue
    }

    /// RFC 3339 in UTC, or `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch wrappedValue {
        case let date as Date: try container.encode(Timestamp.format(date))
        case let date as Date?:
            if let date { try container.encode(Timestamp.format(date)) } else { try container.encodeNil() }
        default: try container.encodeNil()
        }
    }
}

/// How a run ended (SPEC §7): everything done, something failed, or sending had to stop.
public enum RunOutcome: Sendable {
    case complete
    case partial
    case stopped
}

/// A hub request as `--show-requests` prints it: the signature of its token redacted; or why the
/// request of a push could not be built.
public struct RequestReport: Encodable, Sendable {
    /// The request's method.
    public var method: String?
    /// The request's URL.
    public var url: String?
    /// Its headers, the token's signature redacted.
    public var headers: [String: String]?
    /// Its body.
    public var body: String?
    /// Why the request could not be built (the push is refused when it is sent).
    public var error: String?

    /// The request, its signature redacted.
    public init(_ request: HubRequest) {
        method = request.method
        url = request.url
        headers = Dictionary(
            request.headers.map {
                ($0.name, $0.name.lowercased() == "authorization" ? HubRequest.redactSignature($0.value) : $0.value)
            },
            uniquingKeysWith: { a, _ in a })
        body = String(decoding: request.body, as: UTF8.self)
    }

    /// A request that could not be built, and why.
    public init(failure: String) {
        error = failure
    }
}

/// One feed of a run, as the report shows it.
public struct FeedReport: Encodable, Sendable {
    /// The feed's name (or title, or URL).
    public var name: String
    /// The feed's URL as configured.
    public var url: String
    /// ok, not-modified or error.
    public var status: FetchedFeed.Status
    /// The HTTP status of the fetch.
    @Nullable public var httpStatus: Int?
    /// How many items it listed.
    public var items: Int
    /// How many of them no run had seen.
    public var new: Int
    /// Why it failed, naming it.
    @Nullable public var error: String?
    /// The feed's new address when it answered with a permanent redirect: update the config.
    public var movedTo: String?
    /// Read for the first time this run: its items are a baseline, not pushed (absent
    /// otherwise).
    public var baseline: Bool?

    enum CodingKeys: String, CodingKey {
        case name, url, status, httpStatus = "http_status", items, new, error, movedTo = "moved_to", baseline
    }

    /// Whether the feed was read for the first time this run.
    public var isBaseline: Bool { baseline == true }
}

/// The items of a run's report, in order: each feed's items in document order, feeds in the
/// config's order, then the outbox entries that no feed listed. A run's items are read back
/// from its `ItemLog` one feed at a time as they are walked (a run of 300,000 items never holds
/// their lines); the lines of the items the plan decided are held and take the place of theirs.
public struct ReportItems: Sequence, Encodable, Sendable {
    private let log: ItemLog?
    private let feedNames: [String]
    private let replaced: [ItemPosition: ItemReport]
    private let extra: [ItemReport]
    /// The lines the plan decided, in order: every item whose decision is not one the reading
    /// of its feed settles (seen, baseline, held, scheduled, rejected). Pushed, failed,
    /// pending and expired items are all here, without walking the log.
    public let decidedByThePlan: [ItemReport]

    /// Items held in memory.
    public init(_ items: [ItemReport]) {
        log = nil
        feedNames = []
        replaced = [:]
        extra = items
        decidedByThePlan = items
    }

    /// A run's items: those of `log` (feeds named by `feedNames`, in order), with `replaced`
    /// lines in place of theirs, then `extra`.
    init(log: ItemLog, feedNames: [String], replaced: [ItemPosition: ItemReport], extra: [ItemReport]) {
        self.log = log
        self.feedNames = feedNames
        self.replaced = replaced
        self.extra = extra
        decidedByThePlan = replaced.sorted { $0.key < $1.key }.map(\.value) + extra
    }

    /// How many items (one walk of the log).
    public var count: Int { reduce(0) { count, _ in count + 1 } }

    /// Walks the items in order, one feed's chunk of the log in memory at a time.
    public func makeIterator() -> AnyIterator<ItemReport> {
        var feed = 0
        var chunk: [ItemReport] = []
        var inChunk = 0
        var extraIndex = 0
        return AnyIterator {
            while inChunk == chunk.count {
                guard let log, feed < feedNames.count else {
                    defer { extraIndex += 1 }
                    return extraIndex < extra.count ? extra[extraIndex] : nil
                }
                chunk = log.items(ofFeed: feed).enumerated().map { index, item in
                    replaced[ItemPosition(feed: feed, item: index)] ?? item.report(feed: feedNames[feed])
                }
                inChunk = 0
                feed += 1
            }
            defer { inChunk += 1 }
            return chunk[inChunk]
        }
    }

    /// The items as a JSON array.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for item in self { try container.encode(item) }
    }
}

/// One item of a run and the decision it got.
public struct ItemReport: Encodable, Sendable {
    /// The story key.
    public var key: String
    /// The feed's name.
    public var feed: String
    /// The headline.
    @Nullable public var title: String?
    /// The link.
    @Nullable public var link: String?
    /// The category it was filed under.
    @Nullable public var category: NewsCategory?
    /// The classifier's confidence, to three decimals.
    public var confidence: Double
    /// What happened to it (SPEC §3).
    public var decision: ItemDecision
    /// Why, in more words than the decision: the story it repeats and where, when quiet hours
    /// end, the best guess below `min_confidence`, what the hub said.
    @Nullable public var reason: String?

    enum CodingKeys: String, CodingKey { case key, feed, title, link, category, confidence, decision, reason }

    /// An item's line in the report; `confidence` is kept to three decimals.
    public init(
        key: String, feed: String, title: String?, link: String?, category: NewsCategory?, confidence: Double,
        decision: ItemDecision, reason: String?
    ) {
        self.key = key
        self.feed = feed
        self.title = title
        self.link = link
        self.category = category
        self.confidence = (confidence * 1000).rounded() / 1000
        self.decision = decision
        self.reason = reason
    }
}

/// One push of a run and what became of it.
public struct PushReport: Encodable, Sendable {
    /// What became of a push (SPEC §3).
    public enum Status: String, Encodable, Sendable {
        case sent
        case wouldSend = "would-send"
        case failed
        case pending
        case unknown
    }

    /// The push's category.
    public var category: NewsCategory
    /// The tag expression it went to.
    public var tags: String
    /// Its template properties.
    public var properties: [String: String]
    /// Its story key.
    public var itemKey: String
    /// What became of it.
    public var status: Status
    /// The hub's answer.
    @Nullable public var httpStatus: Int?
    /// The hub's id of the notification.
    @Nullable public var notificationId: String?
    /// Why it failed or waits.
    @Nullable public var error: String?
    /// When the push was planned: its story first seen (not in the JSON report: the watcher's
    /// latency).
    public var firstSeen: Date?
    /// When the hub accepted it, by the machine's clock (not in the JSON report).
    public var acceptedAt: Date?
    /// The story's own date (`pubDate`), when the feed gave one (not in the JSON report).
    public var published: Date?

    enum CodingKeys: String, CodingKey {
        case category, tags, properties, itemKey = "item_key", status, httpStatus = "http_status"
        case notificationId = "notification_id", error
    }
}

extension PushReport {
    /// A push of an earlier run that was killed while sending it: its outcome is unknown, and it
    /// is never sent again.
    public static func interrupted(_ entry: OutboxEntry) -> PushReport {
        PushReport(
            category: entry.category, tags: entry.tags, properties: entry.properties, itemKey: entry.storyKey,
            status: .unknown, httpStatus: nil, notificationId: nil,
            error: "the run sending it was interrupted; outcome unknown, not re-sent")
    }
}

/// The counts of a run.
public struct RunSummary: Encodable, Sendable {
    /// Feeds fetched (or unchanged).
    public var feedsOk = 0
    /// Feeds that failed.
    public var feedsFailed = 0
    /// Items no run had seen.
    public var itemsNew = 0
    /// Pushes the hub took.
    public var pushesSent = 0
    /// Pushes refused or of unknown outcome.
    public var pushesFailed = 0
    /// Pushes waiting in the outbox after this run.
    public var pushesPending = 0
    /// When the last of them stops being fresh: until then each run tries again.
    @Timestamped public var pendingUntil: Date?
    /// Pushes this run held for an editor (`review.rules`; a preview: would hold).
    public var reviewHeld = 0
    /// Pushes held for an editor after this run (in a preview, with those it would hold).
    public var reviewWaiting = 0
    /// How long the oldest of them has waited, in seconds.
    @Nullable public var reviewOldestAgeSeconds: Int?

    enum CodingKeys: String, CodingKey {
        case feedsOk = "feeds_ok", feedsFailed = "feeds_failed", itemsNew = "items_new"
        case pushesSent = "pushes_sent", pushesFailed = "pushes_failed", pushesPending = "pushes_pending"
        case pendingUntil = "pending_until", reviewHeld = "review_held", reviewWaiting = "review_waiting"
        case reviewOldestAgeSeconds = "review_oldest_age_seconds"
    }

    /// All counts zero.
    public init() {}
}

extension RunReport {
    /// The report as pretty JSON with keys sorted (stable for scripts and diffs).
    public func jsonText() -> String {
        var text = ""
        writeJSON { text += $0 }
        return text
    }

    /// The report as `jsonText` has it, handed to `write` in pieces as it is made: the items one
    /// by one (each encoded alone and indented as in the whole document), so a report of
    /// 300,000 items is never one string in memory.
    public func writeJSON(_ write: (String) -> Void) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var shell = self
        shell.items = ReportItems([])
        guard let data = try? encoder.encode(shell) else { return write("{}") }
        let whole = String(decoding: data, as: UTF8.self)
        let empty = "\n  \"items\" : [\n\n  ]"
        guard let range = whole.range(of: empty) else { return write(whole) }
        write(String(whole[..<range.lowerBound]) + "\n  \"items\" : [")
        var first = true
        for item in items {
            guard let encoded = try? encoder.encode(item) else { continue }
            let lines = String(decoding: encoded, as: UTF8.self).split(
                separator: "\n", omittingEmptySubsequences: false)
            write((first ? "\n" : ",\n") + lines.map { $0.isEmpty ? "" : "    " + $0 }.joined(separator: "\n"))
            first = false
        }
        write(first ? "\n\n  ]" : "\n  ]")
        write(String(whole[range.upperBound...]))
    }

    /// The cron view (`--report changes`): one line per push sent, one per failure (a feed that
    /// failed, a push refused, of unknown outcome, still pending or expired), one per feed read
    /// for the first time, and a summary. Nil when nothing was pushed, failed or recorded as a
    /// baseline: a quiet run prints nothing. `failuresOnly` (`-q`) keeps the failures.
    public func changesText(failuresOnly: Bool = false) -> String? {
        var pushed: [String] = [], failures: [String] = [], notes: [String] = []
        for push in pushes {
            let text = "[\(push.tags)] \(push.properties["messageParam"] ?? push.properties["url"] ?? push.itemKey)"
            switch push.status {
            case .sent: pushed.append("pushed \(text)")
            case .wouldSend: pushed.append("would push \(text)")
            case .failed: failures.append("FAILED \(text): \(push.error ?? "refused")")
            case .unknown: failures.append("UNKNOWN \(text): \(push.error ?? "no answer")")
            case .pending: failures.append("PENDING \(text): \(push.error ?? "not sent")")
            }
        }
        for item in items.decidedByThePlan where item.decision == .expired {
            failures.append("EXPIRED \(item.title ?? item.key): \(item.reason ?? item.decision.explanation)")
        }
        for feed in feeds where feed.status == .error {
            failures.append("FEED FAILED \(feed.name): \(feed.error ?? "error")")
        }
        if let stop { failures.append("SENDING STOPPED: \(stop.reason)") }
        for push in interruptedSends ?? [] {
            let text = push.properties["messageParam"] ?? push.properties["url"] ?? push.itemKey
            failures.append("UNKNOWN [\(push.tags)] \(text): \(push.error ?? "interrupted")")
        }
        for feed in feeds where feed.isBaseline {
            notes.append(
                "baseline: \(feed.name) read for the first time: \(feed.items) item\(feed.items == 1 ? "" : "s") "
                    + "recorded as already known, none pushed (first_run: send on the feed pushes them)"
            )
        }
        if failuresOnly { return failures.isEmpty ? nil : failures.joined(separator: "\n") }
        if summary.reviewHeld > 0 {
            // Held for an editor and nothing else new: one line says so.
            if pushed.isEmpty && failures.isEmpty && notes.isEmpty { return reviewLine }
            notes.append(reviewLine)
        }
        guard !(pushed.isEmpty && failures.isEmpty && notes.isEmpty) else { return nil }
        return (pushed + failures + notes + [summaryLine]).joined(separator: "\n")
    }

    /// "2 pushes wait for an editor (the oldest for 14 min): newspush review list".
    public var reviewLine: String {
        let waiting = summary.reviewWaiting
        let age = summary.reviewOldestAgeSeconds.map { " (the oldest for \(max(0, $0) / 60) min)" } ?? ""
        return "\(waiting) push\(waiting == 1 ? "" : "es") \(waiting == 1 ? "waits" : "wait") for an editor\(age): "
            + "newspush review list"
    }

    /// "3 feeds ok, 0 failed; 7 new items; sent 6 pushes, 0 failed, 0 pending" (with when the
    /// pending ones stop being retried).
    public var summaryLine: String {
        let s = summary
        let verbSent = dryRun ? "would send" : "sent"
        let sentCount = dryRun ? pushes.filter { $0.status == .wouldSend }.count : s.pushesSent
        var line =
            "\(s.feedsOk) feed\(s.feedsOk == 1 ? "" : "s") ok, \(s.feedsFailed) failed; \(s.itemsNew) new "
            + "item\(s.itemsNew == 1 ? "" : "s"); \(verbSent) \(sentCount) push\(sentCount == 1 ? "" : "es"), "
            + "\(s.pushesFailed) failed, \(s.pushesPending) pending"
        if s.pushesPending > 0, let until = s.pendingUntil {
            line += " (retried each run until \(FeedDates.format(until)) at the latest)"
        }
        return line
    }

    /// The human form: per category the pushes (tag expression and message), then each item
    /// that was not pushed with its reason; feed problems, the outbox and a summary last.
    public func text(verbose: Bool = false) -> String {
        var lines: [String] = []
        writeText(verbose: verbose) { lines.append($0) }
        return lines.joined(separator: "\n")
    }

    /// `text`, one line at a time to `write` (the items are walked, not held).
    public func writeText(verbose: Bool = false, _ write: (String) -> Void) {
        let mode = dryRun ? "Preview (dry run: nothing sent, nothing written)" : "Run"
        write("\(mode) at \(FeedDates.format(startedAt))")
        writeCategoryBlocks(verbose: verbose, write)
        var lines = feedNotes()
        if let stop { lines += ["", "Sending stopped: \(stop.reason)"] }
        if let interrupted = interruptedSends {
            lines += ["", "Pushes of an interrupted run (outcome unknown, never re-sent)"]
            for push in interrupted { lines.append(Self.pushLine(push)) }
        }
        let s = summary
        if s.pushesPending > 0, let until = s.pendingUntil {
            lines.append("")
            lines.append(
                "\(s.pushesPending) push\(s.pushesPending == 1 ? "" : "es") "
                    + "\(s.pushesPending == 1 ? "waits" : "wait") in the outbox; each run tries again until "
                    + "\(FeedDates.format(until)) at the latest, when the last one is no longer fresh"
            )
        }
        if s.reviewWaiting > 0 { lines += ["", reviewLine] }
        lines += ["", summaryLine]
        lines.forEach(write)
    }

    /// The block an item's line goes in: its category, or Unclassified (index 6) for items
    /// without a confident category.
    private static func block(of item: ItemReport) -> Int {
        guard let category = item.category, item.decision != .unclassified else { return NewsCategory.allCases.count }
        return NewsCategory.allCases.firstIndex(of: category) ?? NewsCategory.allCases.count
    }

    /// One block per category (and one for items without a confident category, with the best
    /// guess): its pushes, then each item not pushed with its reason. One walk of the items
    /// counts the blocks and finds the pushes' lines; one more per block writes its items.
    private func writeCategoryBlocks(verbose: Bool, _ write: (String) -> Void) {
        let pushesByKey = Dictionary(pushes.map { ($0.itemKey, $0) }, uniquingKeysWith: { _, b in b })
        let names = NewsCategory.allCases.map(\.rawValue) + ["Unclassified"]
        let withPush: Set<ItemDecision> = [.pushed, .wouldPush, .failed, .pending]
        var counts = [Int](repeating: 0, count: names.count)
        var seen = counts
        var pushLines = [[String]](repeating: [], count: names.count)
        for item in items {
            let block = Self.block(of: item)
            counts[block] += 1
            if !verbose && item.decision == .seen { seen[block] += 1 }
            if let push = pushesByKey[item.key], withPush.contains(item.decision) {
                pushLines[block].append(Self.pushLine(push))
            }
        }
        for block in names.indices where counts[block] > 0 {
            write("")
            write(names[block])
            pushLines[block].forEach(write)
            if counts[block] > seen[block] {
                for item in items where Self.block(of: item) == block && (verbose || item.decision != .seen) {
                    guard !withPush.contains(item.decision) || pushesByKey[item.key] == nil else { continue }
                    write(
                        "  not pushed: \(item.title ?? item.link ?? item.key)  (\(item.decision.rawValue): "
                            + "\(item.reason ?? item.decision.explanation))")
                }
            }
            let seenCount = seen[block]
            if seenCount > 0 { write("  \(seenCount) item\(seenCount == 1 ? "" : "s") already seen") }
        }
    }

    /// A push's line: what became of it, its tag expression and message, and its error.
    private static func pushLine(_ push: PushReport) -> String {
        let verb: String
        switch push.status {
        case .sent: verb = "pushed    "
        case .wouldSend: verb = "would push"
        case .failed: verb = "FAILED    "
        case .pending: verb = "pending   "
        case .unknown: verb = "UNKNOWN   "
        }
        var line = "  \(verb) [\(push.tags)] \(push.properties["messageParam"] ?? push.properties["url"] ?? "")"
        if let error = push.error { line += "  (\(error))" }
        return line
    }

    /// Feeds that failed, were read for the first time, or moved for good.
    private func feedNotes() -> [String] {
        var lines: [String] = []
        let failedFeeds = feeds.filter { $0.status == .error }
        if !failedFeeds.isEmpty {
            lines += ["", "Feeds that failed"]
            for feed in failedFeeds { lines.append("  \(feed.name): \(feed.error ?? "error")") }
        }
        let firstRead = feeds.filter(\.isBaseline)
        if !firstRead.isEmpty {
            lines.append("")
            lines.append(
                "Feeds read for the first time (their items are a baseline, nothing of theirs is pushed; first_run: "
                    + "send pushes them)"
            )
            for feed in firstRead {
                lines.append("  \(feed.name): \(feed.items) item\(feed.items == 1 ? "" : "s") recorded")
            }
        }
        let moved = feeds.filter { $0.movedTo != nil }
        if !moved.isEmpty {
            lines += ["", "Feeds that moved for good (update feeds.yaml)"]
            for feed in moved { lines.append("  \(feed.name): \(feed.url) -> \(feed.movedTo ?? "")") }
        }
        return lines
    }
}
