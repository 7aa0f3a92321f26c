import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsClassifier
@testable import NewsPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A run's items kept out of memory: the log gives back what it was given, the report
/// written in pieces is the report encoded whole, and the same-story question over the log
/// answers as it did over every item of the run.
@Suite("Item log: a run's items out of memory")
struct ItemLogTests {
    let now = Date(timeIntervalSince1970: 1_795_330_800)  // 2026-11-22T07:00:00Z

    func listed(_ key: String, title: String?, decision: ItemDecision?, previous: Bool = false) -> ListedItem {
        ListedItem(
            key: key, linkKey: "example.org/\(key)", title: title, link: "https://example.org/\(key)",
            published: now.addingTimeInterval(-60), updated: nil, firstSeen: now,
            classification: Classification(category: .science, confidence: 0.8125), tombstoned: false,
            inBaselineFeed: decision == .baseline,
            previous: previous
                ? ListedItem.KnownStory(key: key, title: "Earlier: \(title ?? "")", status: .pushed, origin: .publish)
                : nil,
            decision: decision, reason: decision == nil ? nil : "why \(key)")
    }

    @Test func chunksComeBackAsTheyWentInWhateverOrderTheFeedsFinished() {
        let log = ItemLog(feedCount: 3)
        let second = [
            listed("b1", title: "Ünïcode – “quotes” and emoji 🚀", decision: .seen, previous: true),
            listed("b2", title: nil, decision: nil),
        ]
        let first = [listed("a1", title: "A plain headline", decision: .baseline)]
        log.append(feed: 1, second)
        log.append(feed: 0, first)
        #expect(log.isOnDisk)
        #expect(log.items(ofFeed: 0) == first)
        #expect(log.items(ofFeed: 1) == second)
        #expect(log.items(ofFeed: 2).isEmpty)  // a feed that failed lists nothing
    }

    // A chunk that cannot be read back whole is said, never read as no items.
    @Test func aShortReadIsAFailureNotAnEmptyFeed() throws {
        let folder = NSTemporaryDirectory() + "newspush-itemlog-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let log = ItemLog(feedCount: 2, folder: folder)
        log.append(feed: 0, [listed("a1", title: "A headline", decision: .seen, previous: true)])
        #expect(log.isOnDisk)
        // The scratch file is unlinked: find it among this process's descriptors and cut it short.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        let scratch = try #require(
            descriptors.compactMap(Int32.init).first { fd in
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
                return target?.hasPrefix(folder + "/newspush-items-") == true
            }, "no scratch file under \(folder)")
        #expect(ftruncate(scratch, 3) == 0)
        #expect(log.readFailure == nil)
        #expect(log.items(ofFeed: 0).isEmpty)
        #expect(log.readFailure?.contains("could not be read back") == true, "\(log.readFailure ?? "nil")")
    }

    @Test func withoutAWritableTemporaryFolderTheChunksStayInMemory() {
        let log = ItemLog(feedCount: 2, folder: "/nonexistent/newspush-test")
        let items = [listed("a1", title: "Kept in memory", decision: .seen, previous: true)]
        log.append(feed: 1, items)
        #expect(!log.isOnDisk)
        #expect(log.items(ofFeed: 1) == items)
        #expect(log.items(ofFeed: 0).isEmpty)
    }

    @Test func aReportWrittenInPiecesIsTheReportEncodedWhole() throws {
        var report = RunReport(dryRun: true, startedAt: now, finishedAt: now)
        report.feeds = [
            FeedReport(
                name: "Desk", url: "https://example.org/rss", status: .ok, httpStatus: 200, items: 2, new: 2, error: nil
            )
        ]
        let items = [
            ItemReport(
                key: "guid:a", feed: "Desk", title: "A / B \"quoted\"", link: nil, category: .world, confidence: 0.93,
                decision: .wouldPush, reason: nil),
            ItemReport(
                key: "guid:b", feed: "Desk", title: nil, link: "https://example.org/b", category: nil, confidence: 0,
                decision: .unclassified, reason: "no evidence for any category"),
        ]
        for list in [[], items] {
            report.items = ReportItems(list)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let whole = String(decoding: try encoder.encode(report), as: UTF8.self)
            #expect(report.jsonText() == whole)
        }
    }

    @Test func theReportWalksTheLogAndPutsThePlansLinesInPlace() {
        let log = ItemLog(feedCount: 2)
        log.append(feed: 0, [listed("a1", title: "One", decision: .seen), listed("a2", title: "Two", decision: nil)])
        log.append(feed: 1, [listed("b1", title: "Three", decision: .baseline)])
        let planned = ItemReport(
            key: "a2", feed: "A", title: "Two", link: nil, category: .science, confidence: 0.8, decision: .wouldPush,
            reason: nil)
        let extra = ItemReport(
            key: "manual:x", feed: "publish", title: "Four", link: nil, category: .world, confidence: 1,
            decision: .pending, reason: "hub answered 503")
        let items = ReportItems(
            log: log, feedNames: ["A", "B"], replaced: [ItemPosition(feed: 0, item: 1): planned], extra: [extra])
        #expect(items.map(\.key) == ["a1", "a2", "b1", "manual:x"])
        #expect(items.map(\.decision) == [.seen, .wouldPush, .baseline, .pending])
        #expect(items.map(\.feed) == ["A", "A", "B", "publish"])
        #expect(items.count == 4)
        #expect(items.decidedByThePlan.map(\.key) == ["a2", "manual:x"])
    }

    /// Random runs over a small vocabulary, so keys, links and near-identical titles repeat
    /// across feeds: the open items' matches (and so their decisions) over the log and its
    /// neighbours are those over every item at once.
    @Test(arguments: 1...40) func theSameStoryQuestionAnswersAsOverTheWholeRun(seed: Int) {
        var random = ClassifierTraining.SplitMix(seed: UInt64(seed))
        let words = ["storm", "hits", "coast", "minister", "resigns", "after", "vote", "markets", "fall", "sharply"]
        let feedCount = 4
        var all: [Candidate] = []
        for feed in 0..<feedCount {
            let baselineFeed = random.next() % 4 == 0
            for index in 0..<Int(random.next() % 6 + 1) {
                let title = (0..<5).map { _ in words[Int(random.next() % UInt64(words.count))] }.joined(separator: " ")
                let key = "k\(random.next() % 12)"
                let link = random.next() % 3 == 0 ? nil : "https://example.org/\(random.next() % 10)"
                var item = FeedItem(id: key, title: title, link: link)
                item.published = now.addingTimeInterval(-Double(random.next() % 100) * 1800)
                let known = !baselineFeed && random.next() % 3 == 0
                var candidate = Candidate(
                    key: key, linkKey: link.flatMap(StoryKey.canonicalLink), feedName: "F\(feed)",
                    feedURL: "https://f\(feed).example/rss", item: item,
                    previous: known
                        ? StoryRecord(
                            key: key, feed: "x", title: title, link: link, category: nil, firstSeen: now,
                            lastSeen: now, published: nil, status: .seen)
                        : nil,
                    firstSeen: now, inBaselineFeed: baselineFeed)
                candidate.classification = Classification(
                    category: .world, confidence: Double(random.next() % 10) / 10)
                candidate.position = ItemPosition(feed: feed, item: index)
                all.append(candidate)
            }
        }
        // Keys the ledger knows are known for every item with them, as the identify stage has it.
        let knownKeys = Set(all.filter { $0.previous != nil }.map(\.key))
        all = all.map { candidate in
            var candidate = candidate
            if candidate.previous == nil, knownKeys.contains(candidate.key) {
                candidate.previous = all.first { $0.key == candidate.key && $0.previous != nil }?.previous
            }
            return candidate
        }
        let whole = StoryMatcher.match(all, recentPushes: [])
        let log = ItemLog(feedCount: feedCount)
        var open: [Candidate] = []
        for feed in 0..<feedCount {
            let (listed, opened) = ItemSettling.settle(all.filter { $0.position.feed == feed }, sendInitial: nil)
            log.append(feed: feed, listed)
            open += opened
        }
        let feeds = (0..<feedCount).map { (name: "F\($0)", url: "https://f\($0).example/rss") }
        let decided = (open + StoryMatcher.neighbours(of: open, in: log, feeds: feeds)).sorted {
            $0.position < $1.position
        }
        let streamed = StoryMatcher.match(decided, recentPushes: [])
        for (candidate, match) in zip(decided, streamed) where candidate.isNew && !candidate.inBaselineFeed {
            let index = all.firstIndex { $0.position == candidate.position } ?? -1
            #expect(match == whole[index], "seed \(seed), item \(candidate.position)")
        }
    }
}
