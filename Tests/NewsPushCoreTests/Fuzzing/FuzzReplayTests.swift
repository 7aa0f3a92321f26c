import Foundation
import NewsPushFuzzing
import Testing

/// Every fuzz target's seeds and every input libFuzzer found crashing or hanging
/// (Fixtures/fuzz/TARGET/crashers, README "Hostile input") replayed through the same code the
/// fuzzer ran: each must finish, without a trap, well inside the fuzzer's one-second limit.
@Suite(.serialized) struct FuzzReplayTests {
    static func inputs(_ target: FuzzTarget) throws -> [URL] {
        let root = try Fixtures.url("fuzz/\(target.rawValue)")
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])?
            .compactMap { $0 as? URL }
            .filter {
                (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
                    && !$0.lastPathComponent.hasPrefix(".")
            }
        return (files ?? []).sorted { $0.path < $1.path }
    }

    @Test(arguments: FuzzTarget.allCases)
    func seedsAndCrashersRunCleanly(_ target: FuzzTarget) throws {
        let inputs = try Self.inputs(target)
        #expect(!inputs.isEmpty, "no seeds for \(target.rawValue)")
        for url in inputs {
            let data = try Data(contentsOf: url)
            let cpu = threadCPUSeconds { target.run(data) }
            #expect(cpu < 3, "\(target.rawValue) \(url.lastPathComponent) took \(cpu) s of CPU")
        }
    }
}
