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

