import Foundation
import Testing
@testable import NewsPushCore

@Suite("State file")
struct StateStoreTests {
    func record(_ status: StoryRecord.Status, lastSeen: Date = Date()) -> StoryRecord {
        StoryRecord(status: status, feed: "https://a.example/rss", title: "T", link: nil, category: "World", firstSeen: lastSeen,
                    lastSeen: lastSeen, published: nil, pushedAt: nil, notificationId: nil, error: nil)
    }

    @Test func saveIsAtomicAndKeepsThePreviousVersion() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let store = StateStore(path: folder.file("state.json"))
        #expect(try store.load() == nil)
        var state = NewsPushState()
        state.stories["a"] = record(.seen)
        try store.save(state)
        state.stories["b"] = record(.pushed)
        try store.save(state)
        #expect(try store.load()?.stories.count == 2)
        #expect(try StateStore(path: folder.file("state.json.prev")).load()?.stories.count == 1)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".tmp") }
        #expect(leftovers.isEmpty)
    }

    @Test func journalIsAppliedOnLoadAndFoldedOnSave() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let store = StateStore(path: folder.file("state.json"))
        var state = NewsPushState()
        state.stories["a"] = record(.pending)
        state.stories["b"] = record(.pending)
        try store.save(state)
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        try store.appendJournal([JournalEntry(key: "a", status: .sending, at: at), JournalEntry(key: "b", status: .sending, at: at)])
        try store.appendJournal([JournalEntry(key: "a", status: .pushed, at: at, notificationId: "NH-1")])
        let loaded = try #require(try store.load())
        #expect(loaded.stories["a"]?.status == .pushed)
        #expect(loaded.stories["a"]?.notificationId == "NH-1")
        #expect(loaded.stories["b"]?.status == .sending)
        try store.save(loaded)
        #expect(!FileManager.default.fileExists(atPath: store.journalPath))
        #expect(try store.load()?.stories["b"]?.status == .sending)
    }

    @Test func aTornLastJournalLineIsIgnoredButCorruptionIsNot() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let store = StateStore(path: folder.file("state.json"))
        var state = NewsPushState()
        state.stories["a"] = record(.pending)
        try store.save(state)
        try store.appendJournal([JournalEntry(key: "a", status: .sending, at: Date())])
        let handle = try #require(FileHandle(forWritingAtPath: store.journalPath))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"key":"a","stat"#.utf8))
        try handle.close()
        #expect(try store.load()?.stories["a"]?.status == .sending)
        try Data("garbage\n{\"key\":\"a\"}\n".utf8).write(to: URL(fileURLWithPath: store.journalPath))
        #expect(throws: StateError.self) { try store.load() }
    }

    @Test(arguments: ["", "{", "{\"version\": 1}", "[1,2]", "{\"version\": 1, \"feeds\": {}, \"items\": {\"k\": {\"status\": \"sent\"}}}"])
    func unusableFilesAreCorrupt(content: String) throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try content.write(toFile: folder.file("state.json"), atomically: true, encoding: .utf8)
        do {
            _ = try StateStore(path: folder.file("state.json")).load()
            Issue.record("expected corrupt")
        } catch {
            guard case .corrupt = error else { Issue.record("expected corrupt, got \(error)"); return }
            #expect(error.description.contains("nothing was sent"))
        }
    }

    @Test func newerVersionIsReportedAsSuch() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try #"{"version": 2, "feeds": {}, "items": {}, "something_new": true}"#.write(toFile: folder.file("state.json"), atomically: true, encoding: .utf8)
        #expect(throws: StateError.self) { try StateStore(path: folder.file("state.json")).load() }
        do { _ = try StateStore(path: folder.file("state.json")).load() } catch {
            guard case .newerVersion(_, 2) = error else { Issue.record("got \(error)"); return }
        }
    }

    @Test func lockIsExclusive() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let first = StateStore(path: folder.file("state.json"))
        try first.lock()
        #expect(throws: StateError.self) { try StateStore(path: folder.file("state.json")).lock() }
        first.unlock()
        try StateStore(path: folder.file("state.json")).lock()
    }

    @Test func pruningLeavesTombstonesThatExpire() {
        let now = Date()
        var state = NewsPushState()
        state.stories["old"] = record(.pushed, lastSeen: now.addingTimeInterval(-31 * 86400))
        state.stories["recent"] = record(.seen, lastSeen: now.addingTimeInterval(-86400))
        state.tombstones["ancient"] = now.addingTimeInterval(-400 * 86400)
        #expect(state.prune(retention: 30 * 86400, now: now) == 1)
        #expect(state.stories.keys.sorted() == ["recent"])
        #expect(state.tombstones.keys.sorted() == ["old"])
    }
}
