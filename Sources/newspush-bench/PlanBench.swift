import ArgumentParser
import FeedParsing
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NewsPushSessions

/// `newspush-bench plan`: same-story matching and the policy over N items whose titles differ
/// only by numbers (the case that made the old matcher quadratic), beside that old matcher.
struct PlanItems: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract:
            "Time matching and planning N items whose titles differ only by numbers, beside the pairwise matcher it "
            + "replaced."
    )

    @Option(help: "Items planned by newspush's matcher and policy.") var items = 30_000
    @Option(help: "Items given to the pairwise reference (it is quadratic: keep this smaller).") var referenceItems =
        3_000
    @Option(help: "Repetitions; the best is reported.") var repeats = 3

    func run() throws {
        let now = Date()
        func candidates(_ count: Int) -> [Candidate] {
            (0..<count).map { i in
                var item = FeedItem(
                    id: "g\(i)", title: "Live: the latest on the storm as it moves north along the coast, update \(i)",
                    link: "https://news.example.org/\(i)")
                item.published = now.addingTimeInterval(-Double(i % 600) * 60)
                var candidate = Candidate(
                    key: "guid:news.example.org/g\(i)", linkKey: "news.example.org/\(i)", feedName: "Desk",
                    feedURL: "https://news.example.org/rss", item: item, firstSeen: now)
                candidate.classification = Classification(category: .world, confidence: 1)
                return candidate
            }
        }
        let policy = PushPolicy(settings: PolicySettings())
        func plan(_ list: [Candidate]) -> Int {
            let matches = StoryMatcher.match(list, recentPushes: [])
            return policy.decide(list, matches: matches, now: now).filter { $0 == .wouldPush }.count
        }
        let large = candidates(items), small = candidates(referenceItems)
        var selected = 0
        let ours = fastest((0..<repeats).map { _ in seconds { selected = plan(large) } })
        let oursSmall = fastest((0..<repeats).map { _ in seconds { _ = plan(small) } })
        var merges = 0
        let reference = seconds { merges = PairwiseReference.clusters(small).filter { $0.count > 1 }.count }
        print(
            String(
                format: "newspush: %d items matched and planned in %.3f s (%.1f µs per item; %d would push)",
                items, ours, ours / Double(items) * 1e6, selected))
        print(
            String(
                format:
                    "same %d items: newspush %.3f s, pairwise reference %.3f s (%.0f× faster; reference merged %d "
                    + "clusters)",
                referenceItems, oursSmall, reference, reference / oursSmall, merges))
    }
}

/// The same-story matcher of 2026-11-23 (before the ledger issue), kept as the benchmark's
/// reference: string shingles, and every earlier item sharing a shingle counted and compared.
enum PairwiseReference {
    struct Fingerprint {
        let words: [String]
        let shingles: Set<String>

        init(_ title: String) {
            words = title.lowercased().split { !$0.isLetter && !$0.isNumber }.map(String.init)
            var shingles = Set<String>()
            for i in words.indices.dropLast() { shingles.insert(words[i] + " " + words[i + 1]) }
            self.shingles = shingles
        }

        func matches(_ other: Fingerprint) -> Bool {
            guard words.count >= 4, other.words.count >= 4 else { return false }
            if Set(words).symmetricDifference(other.words).contains(where: { $0.allSatisfy(\.isNumber) }) {
                return false
            }
            let common = shingles.intersection(other.shingles).count
            return Double(common) / Double(shingles.count + other.shingles.count - common) >= 0.6
        }
    }

    static func clusters(_ candidates: [Candidate]) -> [[Int]] {
        var parent = Array(candidates.indices)
        func find(_ i: Int) -> Int {
            var i = i
            while parent[i] != i {
                parent[i] = parent[parent[i]]
                i = parent[i]
            }
            return i
        }
        var byShingle: [String: [Int]] = [:]
        var prints: [Fingerprint] = []
        var shared = [Int](repeating: 0, count: candidates.count)
        var touched: [Int] = []
        for (index, candidate) in candidates.enumerated() {
            let print = Fingerprint(candidate.item.title ?? "")
            prints.append(print)
            for shingle in print.shingles {
                for other in byShingle[shingle] ?? [] {
                    if shared[other] == 0 { touched.append(other) }
                    shared[other] += 1
                }
                byShingle[shingle, default: []].append(index)
            }
            for other in touched {
                let common = shared[other]
                shared[other] = 0
                guard Double(common) >= 0.6 * Double(print.shingles.count + prints[other].shingles.count) / 1.6,
                    find(other) != find(index),
                    abs(candidates[other].effectiveDate.timeIntervalSince(candidate.effectiveDate)) <= 36 * 3600,
                    prints[other].matches(print)
                else { continue }
                parent[max(find(other), find(index))] = min(find(other), find(index))
            }
            touched.removeAll(keepingCapacity: true)
        }
        var groups: [Int: [Int]] = [:]
        for index in candidates.indices { groups[find(index), default: []].append(index) }
        return Array(groups.values)
    }
}
