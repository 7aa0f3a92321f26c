import Foundation
@_exported import NewsPushTesting
import Testing

/// Fixture files copied into the test bundle.
enum Fixtures {
    static func url(_ name: String) throws -> URL {
        try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil), "fixture \(name) missing")
    }

    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: url(name))
    }
}

/// The corpora of ../shared (beside the repository). Tests that read them are skipped, and
/// reported as skipped, when they are absent.
enum SharedCorpus {
    static func folder(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/corpus/\(name)")
    }

    static func has(_ name: String, file: String) -> Bool {
        FileManager.default.fileExists(atPath: folder(name).appendingPathComponent(file).path)
    }

    static var realworld: Bool { has("realworld", file: "feedparser-ref.json") }
    static var feedparser: Bool { has("feedparser", file: "INDEX.tsv") }
}
