import Foundation
import NotificationHubs
import Testing

@testable import NewsClassifier
@testable import NewsPushCore

/// Whether a `--tags` expression can reach the category's readers (the story's push) or only
/// one person's devices (a trial), checked against every tag set a device could carry.
struct TagReachTests {
    func node(_ text: String) throws -> TagExpression.Node { try TagExpression.parse(text) }

    /// The answer by brute force: every subset of the tags the two expressions name.
    func bruteForce(_ a: TagExpression.Node, _ b: TagExpression.Node, absent: (String) -> Bool) -> Bool {
        let tags = Array(a.tags.union(b.tags).filter { !absent($0) })
        for mask in 0..<(1 << tags.count) {
            let carried = Set(tags.indices.filter { mask & (1 << $0) != 0 }.map { tags[$0] })
            if a.matches(carried) && b.matches(carried) { return true }
        }
        return false
    }

    @Test(arguments: [
        ("World", true), ("World || Politics", true), ("!user:alice", true), ("Politics", true),
        ("user:alice", false), ("World && user:alice", false), ("user:alice || username:bob", false),
        ("World && !World", false), ("(World || Sports) && !World && !Sports", false),
        ("!(user:alice && World)", true),
    ])
    func reachesReadersOfWorld(_ expression: String, _ expected: Bool) throws {
        let world = try node("World")
        let given = try node(expression)
        #expect(given.canOverlap(world, absent: PublishPlanner.isPersonal) == expected, "\(expression)")
        #expect(bruteForce(given, world, absent: PublishPlanner.isPersonal) == expected, "\(expression)")
    }

    @Test func agreesWithBruteForceOnRandomExpressions() throws {
        var random = ClassifierTraining.SplitMix(seed: 40)
        let tags = ["a", "b", "c", "d", "user:x", "e"]
        func expression(_ depth: Int) -> String {
            if depth == 0 || random.next() % 3 == 0 { return tags[Int(random.next() % UInt64(tags.count))] }
            switch random.next() % 3 {
            case 0: return "!(\(expression(depth - 1)))"
            case 1: return "(\(expression(depth - 1)) && \(expression(depth - 1)))"
            default: return "(\(expression(depth - 1)) || \(expression(depth - 1)))"
            }
        }
        var checked = 0
        for _ in 0..<400 {
            guard let a = try? node(expression(3)), let b = try? node(expression(2)) else { continue }
            #expect(
                a.canOverlap(b, absent: PublishPlanner.isPersonal)
                    == bruteForce(a, b, absent: PublishPlanner.isPersonal))
            checked += 1
        }
        #expect(checked > 100)
    }
}

/// The machine's clock against servers' `Date` headers.
struct ClockCheckTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func theMedianDecidesAndOneWrongServerCannot() {
        let readings = [0.0, 2, -1, 18_000].map { ClockReading(server: now.addingTimeInterval(-$0), local: now) }
        #expect(ClockCheck.offset(readings) == 1)
        #expect(ClockCheck.problem(readings, of: "the feeds' servers") == nil)
        let ahead = [18_000.0, 18_002, 17_999].map { ClockReading(server: now.addingTimeInterval(-$0), local: now) }
        let problem = ClockCheck.problem(ahead, of: "the feeds' servers")
        #expect(problem?.contains("5 h 0 min ahead") == true, "\(problem ?? "nil")")
        #expect(ClockCheck.problem([], of: "x") == nil)
    }

    @Test func aCachedAnswerCountsItsAge() {
        let reading = ClockReading(headers: ["date": "Sun, 06 Nov 1994 08:49:37 GMT", "age": "600"], local: now)
        #expect(reading?.server == Date(timeIntervalSince1970: 784_111_777 + 600))
        #expect(ClockReading(headers: ["date": "yesterday"], local: now) == nil)
    }
}
