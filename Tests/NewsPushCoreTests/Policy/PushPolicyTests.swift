import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

@Suite("Push policy: one decision per item")
struct PushPolicyTests {
    let now = Date(timeIntervalSince1970: 1_795_330_800)  // 2026-11-22T07:00:00Z

    func candidate(
        _ key: String, title: String? = nil, minutesAgo: Double = 10, category: NewsCategory? = .world,
        confidence: Double = 1, link: String? = nil, previous: StoryRecord.Status? = nil, feed: String = "A",
        baseline: Bool = false
    ) -> Candidate {
        var item = FeedItem(id: key, title: title ?? "Story \(key) with enough words here", link: link)
        item.published = now.addingTimeInterval(-minutesAgo * 60)
        let record = previous.map {
            StoryRecord(
                key: key, feed: feed, title: item.title, link: link, category: category?.rawValue, firstSeen: now,
                lastSeen: now, published: item.published, status: $0)
        }
        var candidate = Candidate(
            key: key, linkKey: link.flatMap(StoryKey.canonicalLink), feedName: feed,
            feedURL: "https://\(feed).example/rss",
            item: item, previous: record, firstSeen: now, inBaselineFeed: baseline)
        candidate.classification = Classification(category: category, confidence: confidence)
        return candidate
    }

    /// The matcher's answer, then the policy's: what a run does with these items.
    func decide(
        _ candidates: [Candidate], settings: PolicySettings = PolicySettings(), used: [NewsCategory: Int] = [:],
        sendInitial: Int? = nil, recent: [StoryRecord] = []
    ) -> [ItemDecision] {
        let matches = StoryMatcher.match(candidates, recentPushes: recent)
        return PushPolicy(settings: settings).decide(
            candidates, matches: matches, budgetUsed: used, sendInitial: sendInitial, now: now)
    }

    @Test func freshClassifiedNewItemsWouldPush() {
        #expect(decide([candidate("a"), candidate("b")]) == [.wouldPush, .wouldPush])
    }

    @Test func aFeedReadForTheFirstTimeIsABaselineUnlessToldOtherwise() {
        #expect(decide([candidate("a", baseline: true), candidate("b")]) == [.baseline, .wouldPush])
        // --send-initial N: only the N newest eligible items of new feeds; the rest are the baseline.
        let items = [
            candidate("old", minutesAgo: 50, baseline: true), candidate("new", minutesAgo: 1, baseline: true),
            candidate("mid", minutesAgo: 20, baseline: true), candidate("other", minutesAgo: 30),
        ]
        #expect(decide(items, sendInitial: 2) == [.baseline, .wouldPush, .wouldPush, .wouldPush])
    }

    @Test func knownStoriesAreNotPushedAgainAndWaitingOnesStayInTheOutbox() {
        #expect(
            decide([
                candidate("a", previous: .pushed), candidate("b", previous: .seen), candidate("c", previous: .unknown),
                candidate("d", previous: .failed), candidate("e", previous: .pending),
                candidate("f", previous: .expired),
            ])
                == [.seen, .seen, .seen, .seen, .pending, .seen])
    }

    @Test func unclassifiedAndStale() {
        #expect(
            decide([candidate("a", category: nil), candidate("b", minutesAgo: 200), candidate("c", minutesAgo: 170)])
                == [.unclassified, .stale, .wouldPush])
    }

    @Test func undatedItemsAreJudgedByFirstSeen() {
        var undated = candidate("u")
        undated.item.published = nil
        undated.firstSeen = now.addingTimeInterval(-4 * 3600)
        var fresh = candidate("f")
        fresh.item.published = nil
        #expect(decide([undated, fresh]) == [.stale, .wouldPush])
    }

    @Test func budgetKeepsTheNewest() {
        var settings = PolicySettings()
        settings.budgetPerCategory = 2
        let items = [
            candidate("a", minutesAgo: 30), candidate("b", minutesAgo: 5), candidate("c", minutesAgo: 60),
            candidate("d", minutesAgo: 1), candidate("s", category: .sports),
        ]
        #expect(decide(items, settings: settings) == [.overBudget, .wouldPush, .overBudget, .wouldPush, .wouldPush])
    }

    @Test func budgetCountsPushesOfEarlierRunsInTheWindow() {
        var settings = PolicySettings()
        settings.budgetPerCategory = 2
        // One push in the window already (sent, or waiting in the outbox): one slot left.
        #expect(
            decide(
                [candidate("a", minutesAgo: 5), candidate("b", minutesAgo: 2)], settings: settings, used: [.world: 1])
                == [.overBudget, .wouldPush])
    }

    @Test func quietHoursHoldEverything() {
        var settings = PolicySettings()
        settings.quietHours = QuietHours(from: 6 * 60, to: 8 * 60, timeZone: TimeZone(identifier: "UTC")!)
        #expect(decide([candidate("a")], settings: settings) == [.quietHours])
        settings.quietHours = QuietHours(
            from: 23 * 60, to: 6 * 60 + 30, timeZone: TimeZone(identifier: "Europe/London")!)
        #expect(decide([candidate("a")], settings: settings) == [.wouldPush])
        // 07:00 UTC is 08:00 in Berlin in November: inside 07:30–09:00.
        settings.quietHours = QuietHours(
            from: 7 * 60 + 30, to: 9 * 60, timeZone: TimeZone(identifier: "Europe/Berlin")!)
        #expect(decide([candidate("a")], settings: settings) == [.quietHours])
    }

    @Test func sameStoryThroughSeveralFeedsIsPushedOnceWithTheStrongestEvidence() {
        let wire = candidate(
            "wire-1", title: "Parliament passes the emergency budget after all-night session", confidence: 0.7,
            link: "https://wire.example/1", feed: "Wire")
        let section = candidate(
            "paper-9", title: "Parliament passes emergency budget after all-night session", category: .politics,
            confidence: 1.0, link: "https://paper.example/9", feed: "Paper")
        let sameLink = candidate(
            "other", title: "Completely different words", link: "http://www.wire.example/1?utm_source=x")
        #expect(decide([wire, section, sameLink]) == [.sameStory, .wouldPush, .sameStory])
    }

    @Test func seriesTitlesAreNotMerged() {
        let one = candidate("d1", title: "Game of the Year 2026: Day One deliberations")
        let two = candidate("d2", title: "Game of the Year 2026: Day Two deliberations")
        let score1 = candidate("s1", title: "Final score: Rovers 2 United 1 in cup replay")
        let score2 = candidate("s2", title: "Final score: Rovers 3 United 1 in cup replay")
        var settings = PolicySettings()
        settings.budgetPerCategory = 10
        #expect(
            decide([one, two, score1, score2], settings: settings) == [.wouldPush, .wouldPush, .wouldPush, .wouldPush])
    }

    @Test func aCopyOfAStoryPushedEarlierIsTheSameStory() {
        let recent = StoryRecord(
            key: "guid:x", feed: "B", title: "Parliament passes the emergency budget after all-night session",
            link: nil, category: "World", firstSeen: now, lastSeen: now, published: now.addingTimeInterval(-3600),
            status: .pushed, pushedAt: now.addingTimeInterval(-3500))
        let copy = candidate("late", title: "Parliament passes emergency budget after all-night session")
        #expect(decide([copy], recent: [recent]) == [.sameStory])
        let match = StoryMatcher.match([copy], recentPushes: [recent])
        #expect(match == [.sameStory(SameStory(key: "guid:x", title: recent.title, place: .earlierRun))])
        // A copy of a story already handled in an earlier run, arriving next to it.
        let handled = candidate("k1", title: "Storm closes the harbour barrier for the first time", previous: .pushed)
        let newCopy = candidate("k2", title: "Storm closes harbour barrier for the first time")
        #expect(decide([handled, newCopy]) == [.seen, .sameStory])
    }

    @Test func tombstonedStoriesStayOld() {
        var ghost = candidate("ghost")
        ghost.tombstoned = true
        ghost.item.published = nil
        #expect(decide([ghost]) == [.seen])
    }

    @Test func everyItemGetsExactlyOneDecision() {
        let items = (0..<200).map {
            candidate(
                "k\($0 % 150)", title: "Headline number \($0 % 150) about things", minutesAgo: Double($0),
                category: $0 % 7 == 0 ? nil : .world)
        }
        let decisions = decide(items)
        #expect(decisions.count == items.count)
        #expect(decisions.filter { $0 == .wouldPush }.count == 3)
    }

    /// An item listed again while its push waits for an editor, or after an editor rejected it.
    @Test func aStoryHeldOrRejectedForReviewIsDecidedSo() {
        let decisions = decide([
            candidate("h", previous: .held), candidate("r", previous: .rejected), candidate("s", previous: .seen),
        ])
        #expect(decisions == [.held, .rejected, .seen])
    }

    /// review.rules: first match wins, auto by default, every condition of a rule must match.
    @Test func reviewRulesHoldByCategoryFeedAndTitle() {
        let rules = ReviewRules([
            ReviewRule(feed: "Trusted", mode: .auto, index: 0),
            ReviewRule(category: .politics, mode: .review, index: 1),
            ReviewRule(title: "(?i)\\bkilled\\b", mode: .review, index: 2),
            ReviewRule(category: .world, feed: "Wire", mode: .review, index: 3),
        ])
        func held(_ category: NewsCategory, _ title: String, _ feed: String) -> Int? {
            rules.holdingRule(category: category, title: title, feedName: feed, feedURL: nil)?.index
        }
        #expect(held(.politics, "Vote tonight", "Trusted") == nil)
        #expect(held(.politics, "Vote tonight", "Desk") == 1)
        #expect(held(.sports, "Two killed at stadium", "Desk") == 2)
        #expect(held(.world, "Talks resume", "Wire") == 3)
        #expect(held(.business, "Talks resume", "Wire") == nil)
        #expect(held(.world, "Talks resume", "Desk") == nil)
    }
}
