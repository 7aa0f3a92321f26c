import Foundation
import NewsPushCore
import NewsPushHTTP
import NewsPushTesting
import Synchronization
import Testing

/// The one password check (`PasswordCheck`) in process: a surge of requests with one credential
/// costs one bcrypt check, and credentials found good by one instance are found good by
/// another through the shared memory, without bcrypt, while a new password is not.
@Suite("The password check")
struct PasswordCheckTests {
    /// A shared memory in a dictionary (the back-end's is the ledger), counting what it is asked.
    final class Memory: SharedCredentialMemory {
        let digests = CredentialDigests(secret: "Endpoint=sb://ns/;SharedAccessKeyName=x;SharedAccessKey=y")
        let kept = Mutex<[String: String]>([:])
        let recalled = Atomic<Int>(0)

        func digest(name: String, password: String, hash: String) -> String {
            digests.credential(name: name, password: password, hash: hash)
        }
        func recalls(_ digest: String) async -> Bool {
            let known = kept.withLock { $0[digest] != nil }
            if known { recalled.add(1, ordering: .relaxed) }
            return known
        }
        func keeps(_ digest: String, name: String) async { kept.withLock { $0[digest] = name } }
    }

    func usersFile(_ folder: TemporaryFolder, _ users: [String: String]) throws -> String {
        var file = try UsersFile<ApiRole>.load(path: folder.file("users.yaml"))
        for (name, password) in users { try file.set(name, role: .reader, password: password) }
        return file.path
    }

    @Test func aSurgeOfOneCredentialWaitsForOneCheck() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let check = PasswordCheck<ApiRole>(
            usersPath: try usersFile(folder, ["alice": "alice-password"]), limits: .init(failures: 5))
        let outcomes = await withTaskGroup(of: PasswordCheck<ApiRole>.Outcome.self) { group in
            for n in 0..<40 {
                group.addTask {
                    await check.check(name: "alice", password: "alice-password", network: "n\(n)", now: Date())
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0 == .signedIn(.reader) }, "\(outcomes.filter { $0 != .signedIn(.reader) })")
    }

    @Test func anotherInstanceFindsAGoodCredentialWithoutBcryptAndNeverAnOldPassword() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let path = try usersFile(folder, ["alice": "alice-password", "bob": "bob-password"])
        let memory = Memory()
        let first = PasswordCheck<ApiRole>(usersPath: path, limits: .init(failures: 5), shared: memory)
        #expect(
            await first.check(name: "alice", password: "alice-password", network: "a", now: Date())
                == .signedIn(.reader))
        #expect(await first.check(name: "bob", password: "wrong-password", network: "a", now: Date()) == .wrong)
        #expect(memory.kept.withLock { Array($0.values) } == ["alice"], "only a good credential is remembered")
        let second = PasswordCheck<ApiRole>(usersPath: path, limits: .init(failures: 5), shared: memory)
        #expect(
            await second.check(name: "alice", password: "alice-password", network: "b", now: Date())
                == .signedIn(.reader))
        #expect(memory.recalled.load(ordering: .relaxed) == 1, "the second instance recalled it")
        var file = try UsersFile<ApiRole>.load(path: path)
        try file.set("alice", role: .reader, password: "a-new-password")
        let third = PasswordCheck<ApiRole>(usersPath: path, limits: .init(failures: 5), shared: memory)
        #expect(await third.check(name: "alice", password: "alice-password", network: "c", now: Date()) == .wrong)
        #expect(await second.check(name: "alice", password: "alice-password", network: "b", now: Date()) == .wrong)
        #expect(
            await third.check(name: "alice", password: "a-new-password", network: "c", now: Date())
                == .signedIn(.reader))
    }
}
