import Foundation
import NotificationHubs
import Synchronization
import Testing

@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushModel
@testable import NewsPushSessions

@Suite("Ledger (SQLite and PostgreSQL)")
struct LedgerTests {
    let now = Date(timeIntervalSince1970: 1_795_330_800)  // 2026-11-22T07:00:00Z

    func story(
        _ key: String, feed: String = "https://a.example/rss", status: StoryRecord.Status = .seen, at: Date? = nil
    ) -> StoryRecord {
        StoryRecord(
            key: key, feed: feed, title: "Title of \(key)", link: "https://a.example/\(key)", category: "World",
            firstSeen: at ?? now, lastSeen: at ?? now, published: at ?? now, status: status)
    }

    func entry(_ key: String, category: NewsCategory = .world, fresh: Double = 3600) -> OutboxEntry {
        OutboxEntry(
            storyKey: key, origin: .run, category: category, format: .template, tags: category.rawValue,
            properties: ["messageParam": "Breaking: \(key)", "id": key], createdAt: now,
            freshUntil: now.addingTimeInterval(fresh))
    }

    /// The app back-end's shared SQLite connection commits waiting writes together: sixteen
    /// threads writing at once each find their own write committed, and a write that fails is
    /// undone alone (its savepoint), never the others of its batch.
    @Test func writesCommittedTogetherStayEachTheirOwn() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        // Shared by the threads as the app back-end's sessions share it.
        nonisolated(unsafe) let ledger = try Ledger.openIndex(configured: folder.file("index.db"), verify: true)
        #expect(ledger.isShared)
        let failures = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 16 * 20) { n in
            do {
                try ledger.writing {
                    try ledger.db.run("INSERT INTO hub_owed (id, since) VALUES (?, 0)", [.text("id-\(n)")])
                    if n % 7 == 0 { throw DatabaseError(kind: .constraint, message: "refused \(n)") }
                }
            } catch {
                failures.withLock { $0.append(n) }
            }
        }
        let written = try ledger.reading {
            Set(try ledger.db.query("SELECT id FROM hub_owed", []).compactMap { $0.text(0) })
        }
        let failed = failures.withLock { Set($0) }
        #expect(failed == Set((0..<320).filter { $0 % 7 == 0 }))
        #expect(written == Set((0..<320).filter { $0 % 7 != 0 }.map { "id-\($0)" }))
    }

    /// Tasks' writes on the shared connection (an app's reports of alerts) join the batches of
    /// the threads' writes, and are committed without a thread waiting for each: while a
    /// batch is being committed (held here by holding the connection's turn), the writes that
    /// come wait for the next batch and schedule no commit of their own; each write still finds
    /// its own outcome, a failed one undone alone.
    @Test(.timeLimit(.minutes(1))) func tasksWritesJoinTheBatchesWithNoThreadWaitingForEach() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        nonisolated(unsafe) let ledger = try Ledger.openIndex(configured: folder.file("index.db"), verify: true)
        let commit = try #require(ledger.sharedCommit)
        let scheduled = Mutex(0)
        let schedule: GroupCommit.Schedule = { run in
            scheduled.withLock { $0 += 1 }
            DispatchQueue.global().async(execute: run)
        }
        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        DispatchQueue.global().async {
            commit.turn.lock()
            held.signal()
            release.wait()
            commit.turn.unlock()
        }
        held.wait()
        let tasks = 400
        let writes = Task {
            await withTaskGroup(of: Int?.self) { group in
                for n in 0..<tasks {
                    group.addTask {
                        do {
                            try await ledger.writing(redone: true, schedule: schedule) {
                                try ledger.db.run(
                                    "INSERT INTO hub_owed (id, since) VALUES (?, 0)", [.text("task-\(n)")])
                                if n % 7 == 0 { throw DatabaseError(kind: .constraint, message: "refused \(n)") }
                            }
                            return nil
                        } catch {
                            return n
                        }
                    }
                }
                return await group.reduce(into: Set<Int>()) { failed, n in if let n { failed.insert(n) } }
            }
        }
        let threads = Task.detached {
            DispatchQueue.concurrentPerform(iterations: 40) { n in
                _ = try? ledger.writing {
                    try ledger.db.run("INSERT INTO hub_owed (id, since) VALUES (?, 0)", [.text("thread-\(n)")])
                }
            }
        }
        // The first batch holds one write or a few, stuck at the turn; the rest wait.
        while commit.waitingCount < tasks - 8 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(scheduled.withLock { $0 } <= 1, "a commit scheduled while one is under way")
        release.signal()
        let failed = await writes.value
        await threads.value
        let written = try ledger.reading {
            Set(try ledger.db.query("SELECT id FROM hub_owed", []).compactMap { $0.text(0) })
        }
        #expect(failed == Set((0..<tasks).filter { $0 % 7 == 0 }))
        #expect(
            written
                == Set((0..<tasks).filter { $0 % 7 != 0 }.map { "task-\($0)" } + (0..<40).map { "thread-\($0)" }))
        #expect(scheduled.withLock { $0 } <= 2, "the waiting writes committed in one more batch")
    }

    /// A write made inside another write's body on the shared connection is a savepoint of
    /// the same transaction (before, it waited for the batch it was part of: a deadlock).
    @Test(.timeLimit(.minutes(1))) func aWriteInsideAWriteOnTheSharedConnectionIsASavepoint() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let ledger = try Ledger.openIndex(configured: folder.file("index.db"), verify: true)
        try ledger.writing {
            try ledger.db.run("INSERT INTO hub_owed (id, since) VALUES ('outer', 0)", [])
            _ = try ledger.writing { try ledger.db.run("INSERT INTO hub_owed (id, since) VALUES ('inner', 0)", []) }
            _ = try? ledger.writing { () throws -> Void in
                try ledger.db.run("INSERT INTO hub_owed (id, since) VALUES ('undone', 0)", [])
                throw DatabaseError(kind: .constraint, message: "refused")
            }
        }
        let written = try ledger.reading { try ledger.db.query("SELECT id FROM hub_owed ORDER BY id", []) }
        #expect(written.compactMap { $0.text(0) } == ["inner", "outer"])
    }

    /// When SQLite rolls a batch's transaction back by itself (a full disk, an I/O error),
    /// every write of the batch fails with that cause, and none is kept (before, the others were
    /// told "no such savepoint", or that they were written when they were not).
    @Test(.timeLimit(.minutes(1))) func aTransactionSQLiteRolledBackFailsEveryWriteOfItsBatchWithItsCause() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        nonisolated(unsafe) let ledger = try Ledger.openIndex(configured: folder.file("index.db"), verify: true)
        let shared = try #require(ledger.sharedCommit)
        let hold = DispatchSemaphore(value: 0)
        let outcomes = Mutex<[String: String]>([:])
        func write(_ name: String, _ body: @escaping @Sendable () throws -> Void) -> Thread {
            let thread = Thread {
                do {
                    try ledger.writing { try body() }
                    outcomes.withLock { $0[name] = "written" }
                } catch {
                    outcomes.withLock { $0[name] = "\(error)" }
                }
            }
            thread.start()
            return thread
        }
        // A first batch holds the connection while two more writes queue behind it, in order.
        let started = DispatchSemaphore(value: 0)
        _ = write("first") {
            started.signal()
            hold.wait()
        }
        started.wait()
        _ = write("full") {
            try ledger.db.run("INSERT INTO hub_owed (id, since) VALUES ('full', 0)", [])
            // As SQLite does on SQLITE_FULL: the whole transaction rolled back, then the error.
            try ledger.db.run("ROLLBACK", [])
            throw DatabaseError(kind: .diskFull, message: "database or disk is full")
        }
        while shared.waitingCount < 1 { sched_yield() }
        _ = write("other") { try ledger.db.run("INSERT INTO hub_owed (id, since) VALUES ('other', 0)", []) }
        while shared.waitingCount < 2 { sched_yield() }
        hold.signal()
        while outcomes.withLock({ $0.count }) < 3 { sched_yield() }
        let said = outcomes.withLock { $0 }
        #expect(said["first"] == "written")
        #expect(said["full"]?.contains("full") == true, "\(said)")
        #expect(said["other"]?.contains("full") == true, "the batch's cause, not a savepoint's: \(said)")
        let kept = try ledger.reading { try ledger.db.query("SELECT id FROM hub_owed", []) }
        #expect(kept.isEmpty, "nothing of the rolled-back batch is kept")
    }

    /// The send journal's writes on the app back-end's shared connection wait for the disk as
    /// a run's do (`synchronous = FULL`: a power cut never loses a sealed secure push whose id
    /// went out, nor the note of a hub write); the index's own stay at `NORMAL`.
    @Test func theJournalsWritesOnTheSharedConnectionAreDurable() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let ledger = try Ledger.openIndex(configured: folder.file("index.db"), verify: true)
        let level = { try ledger.db.query("PRAGMA synchronous", []).first?.int(0) }
        #expect(try ledger.writing(durable: true) { try level() } == 2)
        #expect(try ledger.writing { try level() } == 1)
        #expect(try ledger.reading { try level() } == 1, "back to NORMAL after a durable commit")
    }

    @Test func aNewLedgerIsCreatedWholeAndReadingNeverCreatesOne() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("ledger.db")
        let read = try Ledger.open(configured: path, access: .read)
        #expect(read.isNew)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        let created = try Ledger.open(configured: path, access: .write)
        #expect(created.isNew)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".tmp") }.isEmpty)
        #expect(try Ledger.open(configured: path, access: .write).isNew == false)
    }

    @Test(arguments: [
        "", "not a database at all, just text", "SQLite format 3\u{0}garbage after the magic header........",
    ])
    func unusableFilesAreCorruptAndLeftUntouched(content: String) throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = try folder.write("ledger.db", content)
        for access in [LedgerAccess.read, .write] {
            #expect {
                _ = try Ledger.open(configured: path, access: access)
            } throws: { error in
                guard case .corrupt(let named, _) = error as? LedgerError else { return false }
                return named == path
            }
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == content)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func aDatabaseThatIsNotALedgerOrIsNewerIsRefused() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let other = folder.file("other.db")
        try SQLiteDatabase(path: other, mode: .create).execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
        #expect(throws: LedgerError.self) { _ = try Ledger.open(configured: other, access: .write) }
        let newer = folder.file("newer.db")
        _ = try Ledger.open(configured: newer, access: .write)
        try SQLiteDatabase(path: newer, mode: .readWrite).execute(
            "UPDATE meta SET value = '99' WHERE name = 'schema_version'")
        #expect(throws: LedgerError.newerSchema(path: newer, version: 99)) {
            _ = try Ledger.open(configured: newer, access: .write)
        }
    }

    @Test func theLockIsExclusiveAndCanBeWaitedFor() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = folder.file("ledger.db")
        var first: LedgerLock? = try LedgerLock(ledgerPath: path)
        #expect(throws: LedgerError.locked(path: path)) { _ = try LedgerLock(ledgerPath: path) }
        let started = Date()
        #expect(throws: LedgerError.locked(path: path)) { _ = try LedgerLock(ledgerPath: path, wait: 0.3) }
        #expect(Date().timeIntervalSince(started) >= 0.3)
        withExtendedLifetime(first) {}
        first = nil
        _ = try LedgerLock(ledgerPath: path, wait: 0.3)
    }

    /// A JSON state of the earlier versions: one feed, and its story `guid:pushed`, pushed.
    private func legacyState(pushedLink link: String?) -> LegacyJSONState {
        var legacy = LegacyJSONState()
        legacy.feeds["https://a.example/rss"] = LegacyJSONState.Feed(
            validators: ConditionalGetValidators(etag: "\"v1\""), lastFetched: now)
        legacy.stories["guid:pushed"] = LegacyJSONState.Story(
            status: "pushed", feed: "https://a.example/rss", title: "Pushed", link: link,
            category: "World", firstSeen: now, lastSeen: now, pushedAt: now)
        return legacy
    }

    @Test func aJSONStateFileIsMigratedOnFirstUseAndKept() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        var legacy = legacyState(pushedLink: nil)
        legacy.stories["guid:seen"] = LegacyJSONState.Story(
            status: "seen", feed: "https://a.example/rss", title: "Seen", link: nil,
            category: nil, firstSeen: now, lastSeen: now)
        legacy.stories["guid:sending"] = LegacyJSONState.Story(
            status: "pending", feed: "https://a.example/rss", title: "Cut", link: nil,
            category: "World", firstSeen: now, lastSeen: now)
        legacy.stories["guid:pending"] = LegacyJSONState.Story(
            status: "pending", feed: "https://a.example/rss", title: "Waiting", link: nil,
            category: "World", firstSeen: now, lastSeen: now)
        legacy.tombstones["guid:old"] = now
        let json = folder.file("newspush-state.json")
        try legacy.save(path: json)
        // A run that died mid-send left this in the journal.
        try #"{"at":"2026-11-22T06:59:00Z","key":"guid:sending","status":"sending"}"#.appending("\n")
            .write(toFile: json + ".journal", atomically: true, encoding: .utf8)

        // Reading (a dry run, `state show`) migrates in memory and writes nothing.
        let preview = try Ledger.open(configured: json, access: .read)
        #expect(try preview.allStories().count == 3)
        #expect(!FileManager.default.fileExists(atPath: folder.file("newspush-state.db")))

        let ledger = try Ledger.open(configured: json, access: .write)
        #expect(ledger.path == folder.file("newspush-state.db"))
        #expect(ledger.migratedFrom == json && !ledger.isNew)
        #expect(FileManager.default.fileExists(atPath: json + ".migrated"))
        #expect(!FileManager.default.fileExists(atPath: json))
        let stories = Dictionary(
            try ledger.allStories().map { ($0.record.key, $0.record) }, uniquingKeysWith: { a, _ in a })
        #expect(stories["guid:pushed"]?.status == .pushed)
        #expect(stories["guid:seen"]?.status == .seen)
        #expect(stories["guid:sending"]?.status == .unknown, "an interrupted send is never re-sent")
        #expect(stories["guid:pending"] == nil, "a pending story is planned again from its feed")
        #expect(try ledger.tombstoned(["guid:old"]) == ["guid:old"])
        let feed = try #require(try ledger.feeds(["https://a.example/rss"])["https://a.example/rss"])
        #expect(feed.validators == nil, "the first run after a migration reads every feed in full")
        #expect(feed.lastSuccess == now, "a feed read before the migration records no baseline")
        #expect(
            try ledger.pushesSent(since: now.addingTimeInterval(-60)) == [.world: 2],
            "earlier pushes still count for the budget")
        // The configured .db path finds the same ledger; the JSON is not migrated twice.
        #expect(try Ledger.open(configured: folder.file("newspush-state.db"), access: .write).migratedFrom == nil)
    }

    @Test(arguments: LedgerEngine.allCases) func aLegacyStateIsImportedIntoAnEmptyLedgerOnlyOnce(
        _ engine: LedgerEngine
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        var legacy = legacyState(pushedLink: "https://a.example/1")
        legacy.tombstones["guid:old"] = now
        let json = folder.file("old-state.json")
        try legacy.save(path: json)
        let ledger = try Ledger.open(configured: try await engine.location(folder), access: .write)
        let counts = try ledger.load(from: json)
        #expect(counts.kind == "legacy JSON state" && counts.rows["stories"] == 1 && counts.rows["tombstones"] == 1)
        #expect(try ledger.stories(keys: ["guid:pushed"])["guid:pushed"]?.status == .pushed)
        #expect(throws: LedgerError.self) { _ = try ledger.load(from: json) }
    }

    @Test func aCorruptJSONStateIsNotMigrated() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let json = try folder.write("state.json", #"{"version": 1, "feeds": {}, "items": {"k": "#)
        #expect(throws: LedgerError.self) { _ = try Ledger.open(configured: json, access: .write) }
        #expect(try String(contentsOfFile: json, encoding: .utf8) == #"{"version": 1, "feeds": {}, "items": {"k": "#)
        #expect(!FileManager.default.fileExists(atPath: folder.file("state.db")))
    }

    /// What is owed to the hub comes out in its order: notes never tried first, by age; a note
    /// whose settling failed waits (the back-end's sweeper skips it until it is due again) and
    /// then comes after the others; asked for everything (an operator's `devices prune`), the
    /// waiting ones are there too, last.
    @Test(arguments: LedgerEngine.allCases) func owedNotesComeOutNeverTriedFirstAndFailedOnesWait(
        _ engine: LedgerEngine
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let ledger = try Ledger.open(configured: try await engine.location(folder), access: .write)
        for (n, id) in ["a", "b", "c"].enumerated() {
            let record = InstallationRecord(
                id: id, owner: nil, platform: "fcmv1", tags: ["World"], language: nil, handleDigest: "h-\(id)",
                created: now, refreshed: now)
            try ledger.oweHubWrite(of: record, at: now.addingTimeInterval(Double(n)))
        }
        let later = now.addingTimeInterval(10)
        #expect(try ledger.owedHubStates(before: later, dueBy: later, limit: 10) == ["a", "b", "c"])
        try ledger.owedFailed(["a"], at: later)
        #expect(try ledger.owedHubStates(before: later, dueBy: later, limit: 10) == ["b", "c"], "a waits")
        #expect(try ledger.owedHubStates(before: later, dueBy: .distantFuture, limit: 10) == ["b", "c", "a"])
        let due = later.addingTimeInterval(61)
        #expect(try ledger.owedHubStates(before: due, dueBy: due, limit: 10) == ["b", "c", "a"], "a is due again")
        #expect(try ledger.owedHubStates(before: now.addingTimeInterval(0.5), dueBy: due, limit: 10) == ["a"])
    }

    /// A remembered credential is found while it is young enough, and a forget of its reader
    /// erases it (and only theirs).
    // Reach over tags counts each installation once, whatever its id: ids that are prefixes of
    // one another, differ only in case, or are not ASCII, with every combination of three tags
    // and none (SQLite merges each tag's ordered ids, so the order of ids is what it rests on).
    @Test(arguments: LedgerEngine.allCases) func reachCountsEachInstallationOnceWhateverItsId(
        _ engine: LedgerEngine
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let ledger = try Ledger.open(configured: try await engine.location(folder), access: .write)
        let tags = ["World", "Politics", "Sports"]
        let ids = ["a", "a-1", "a-10", "a-2", "ab", "A", "B", "é", "e", "z", "zz", "日本", "0", "00", "a.b", "a_b"]
        var carried: [String: Set<String>] = [:]
        for (n, id) in ids.enumerated() {
            let chosen = Set(tags.indices.filter { n & (1 << $0) != 0 }.map { tags[$0] }).union(["Science"])
            carried[id] = chosen
            try ledger.recordInstallation(
                InstallationRecord(
                    id: id, owner: nil, platform: "fcmv1", tags: chosen.sorted(), language: nil,
                    handleDigest: "h-\(n)", created: now, refreshed: now),
                previous: nil, replacing: [], verify: false)
        }
        for expression in ["World && (Politics || !Sports)", "!World && !Politics && !Sports", "World || Sports"] {
            let node = try TagExpression.parse(expression)
            let expected = carried.values.filter { node.matches($0) }.count
            #expect(
                try ledger.installationCount(tags: node.tags.sorted(), matches: node.matches) == expected,
                "\(expression)")
        }
    }

    @Test(arguments: LedgerEngine.allCases) func rememberedCredentialsLiveAMonthAndGoWithTheirReader(
        _ engine: LedgerEngine
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let ledger = try Ledger.open(configured: try await engine.location(folder), access: .write)
        let month = CredentialDigests.lifetime
        try ledger.keepCredential("d-alice", reader: "r-alice", at: now, expiredBefore: now.addingTimeInterval(-month))
        try ledger.keepCredential("d-bob", reader: "r-bob", at: now, expiredBefore: now.addingTimeInterval(-month))
        #expect(try ledger.recallsCredential("d-alice", since: now.addingTimeInterval(-month)))
        #expect(try !ledger.recallsCredential("d-alice", since: now.addingTimeInterval(1)), "too old")
        #expect(try !ledger.recallsCredential("d-carol", since: now.addingTimeInterval(-month)))
        try ledger.eraseReader("alice", tag: "username:alice", digest: "sha256:0", credentials: ["r-alice"]) { _ in
            .onlyThem
        }
        #expect(try !ledger.recallsCredential("d-alice", since: now.addingTimeInterval(-month)))
        #expect(try ledger.recallsCredential("d-bob", since: now.addingTimeInterval(-month)))
    }

    @Test(arguments: LedgerEngine.allCases) func storiesOfAFeedStayAliveOnlyWhileItsLastFullResponseListsThem(
        _ engine: LedgerEngine
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let location = try await engine.location(folder)
        let ledger = try Ledger.open(configured: location, access: .write)
        let day: Double = 86400
        let start = now.addingTimeInterval(-40 * day)
        let feed = "https://a.example/rss"
        var first = RunRecord(at: start)
        first.feeds = [
            FeedRecord(
                url: feed, validators: ConditionalGetValidators(etag: "\"1\""), lastFetched: start, lastSuccess: start,
                listedAt: start)
        ]
        first.listings = FeedListings([
            FeedListing(
                feed: feed, keys: ["gone", "kept"], newStories: [story("gone", at: start), story("kept", at: start)])
        ])
        try ledger.record(first)
        // Five days later the feed's full response lists only "kept".
        let later = start.addingTimeInterval(5 * day)
        var second = RunRecord(at: later)
        second.feeds = [
            FeedRecord(
                url: feed, validators: ConditionalGetValidators(etag: "\"2\""), lastFetched: later, lastSuccess: later,
                listedAt: later)
        ]
        second.listings = FeedListings([FeedListing(feed: feed, keys: ["kept"])])
        try ledger.record(second)
        // From then on it answers 304 every run, up to now: only its listing's stories stay alive.
        var notModified = RunRecord(at: now)
        notModified.feeds = [
            FeedRecord(
                url: feed, validators: ConditionalGetValidators(etag: "\"2\""), lastFetched: now, lastSuccess: later,
                listedAt: now)
        ]
        try ledger.record(notModified)
        #expect(try ledger.prune(retention: 30 * day, now: now) == 1)
        #expect(try ledger.allStories().map(\.record.key) == ["kept"])
        #expect(try ledger.tombstoned(["gone"]) == ["gone"])
        // Tombstones go after twelve times the retention.
        #expect(try ledger.prune(retention: 30 * day, now: now.addingTimeInterval(361 * day)) == 1)
        #expect(try ledger.tombstones().keys.sorted() == ["kept"])
    }

    /// The watchers' leases (SPEC §10): a second watcher takes about half the feeds from the
    /// first, a watcher that stops renewing loses its feeds once its lease ends (never before),
    /// and one that stops gives them back at once.
    @Test(arguments: LedgerEngine.allCases) func feedsAreSharedByLeaseAndTakenOverWhenALeaseEnds(
        _ engine: LedgerEngine
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let location = try await engine.location(folder)
        let ledger = try Ledger.open(configured: location, access: .write)
        let feeds = (1...10).map { "https://f\($0).example/rss" }
        #expect(try ledger.leaseFeeds(feeds, holder: "a", lease: 60, now: now).count == 10, "alone, all of them")
        #expect(try ledger.leaseFeeds(feeds, holder: "b", lease: 60, now: now).isEmpty, "a's leases run")
        let a = try ledger.leaseFeeds(feeds, holder: "a", lease: 60, now: now.addingTimeInterval(10))
        #expect(a.count == 5, "a gives back what is over its share")
        let b = try ledger.leaseFeeds(feeds, holder: "b", lease: 60, now: now.addingTimeInterval(11))
        #expect(b.count == 5 && a.isDisjoint(with: b) && a.union(b) == Set(feeds))
        // a stops renewing (killed): its feeds stay its own until its lease ends, 60 s on.
        #expect(try ledger.leaseFeeds(feeds, holder: "b", lease: 60, now: now.addingTimeInterval(69)) == b)
        #expect(try ledger.leaseFeeds(feeds, holder: "b", lease: 60, now: now.addingTimeInterval(71)) == Set(feeds))
        // A watcher that stops gives its feeds back at once.
        try ledger.releaseLeases(holder: "b")
        #expect(try ledger.leaseFeeds(feeds, holder: "c", lease: 60, now: now.addingTimeInterval(72)) == Set(feeds))
    }

    @Test(arguments: LedgerEngine.allCases) func outboxIntentsOutcomesAndInterruptedSends(_ engine: LedgerEngine)
        async throws
    {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let location = try await engine.location(folder)
        let ledger = try Ledger.open(configured: location, access: .write)
        var run = RunRecord(at: now)
        run.listings = FeedListings([
            FeedListing(
                feed: "https://a.example/rss", keys: ["a", "b", "c"], newStories: [story("a"), story("b"), story("c")])
        ])
        run.outbox = [entry("a"), entry("b"), entry("c", fresh: -1)]
        try ledger.record(run)
        #expect(try ledger.outbox().count == 3)
        #expect(try ledger.stories(keys: ["a"])["a"]?.status == .pending)
        let waiting = try ledger.outbox().sorted { $0.storyKey < $1.storyKey }
        try ledger.markSending(Array(waiting.prefix(2)), at: now)
        try ledger.record([
            OutboxOutcome(
                entryID: waiting[0].id, storyKey: "a", status: .sent, at: now, httpStatus: 201, notificationId: "NH-1")
        ])
        // The process dies here: "b" is left sending, and the next run settles it as unknown.
        let reopened = try Ledger.open(configured: location, access: .write)
        #expect(try reopened.settleInterruptedSends(at: now).map(\.storyKey) == ["b"])
        let stories = try reopened.stories(keys: ["a", "b", "c"])
        #expect(stories["a"]?.status == .pushed && stories["a"]?.notificationId == "NH-1")
        #expect(stories["b"]?.status == .unknown)
        #expect(stories["c"]?.status == .pending)
        #expect(try reopened.outbox().map(\.storyKey) == ["c"])
        #expect(try reopened.pushesSent(since: now.addingTimeInterval(-1)) == [.world: 2])
    }

    @Test(arguments: LedgerEngine.allCases) func forgettingAStoryClearsItsFeedsValidators(_ engine: LedgerEngine)
        async throws
    {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let location = try await engine.location(folder)
        let ledger = try Ledger.open(configured: location, access: .write)
        let feed = "https://a.example/rss"
        var run = RunRecord(at: now)
        run.feeds = [
            FeedRecord(
                url: feed, validators: ConditionalGetValidators(etag: "\"1\""), lastFetched: now, lastSuccess: now,
                listedAt: now)
        ]
        run.listings = FeedListings([FeedListing(feed: feed, keys: ["a"], newStories: [story("a", status: .pushed)])])
        try ledger.record(run)
        #expect(try ledger.forget("a"))
        #expect(try ledger.forget("a") == false)
        #expect(try ledger.feeds([feed])[feed]?.validators == nil)
        #expect(try ledger.feeds([feed])[feed]?.lastSuccess == now, "the feed is not new again: no baseline")
        #expect(try ledger.stories(keys: ["a"]).isEmpty)
    }
}

@Suite("Timestamps")
struct TimestampTests {
    @Test(arguments: [0.0, 1_700_000_000, 1_795_508_880, 951_782_400, 4_102_444_799, -31_536_000] as [Double])
    func whatFormatWritesParseReads(_ seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(Timestamp.parse(Timestamp.format(date)) == date)
        #expect(Timestamp.parseFormatted(Timestamp.format(date)) == date)
    }

    @Test func otherFormsStillParse() {
        #expect(Timestamp.parse("2026-11-24T18:00:00+01:00") == Date(timeIntervalSince1970: 1_795_539_600))
        #expect(Timestamp.parse("2026-11-24T17:00:00.5Z") == Date(timeIntervalSince1970: 1_795_539_600.5))
        #expect(Timestamp.parse("2026-13-24T17:00:00Z") == nil)
        #expect(Timestamp.parse("not a time") == nil)
    }
}
