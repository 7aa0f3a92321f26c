import Foundation
import Testing

/// Who may import whom, over the sources (the compiler only refuses what Package.swift leaves
/// out, and a dependency is one line there): the libraries import nothing of newspush but the
/// model, the front ends share `NewsPushHTTP` and never import each other, and
/// docs/architecture.md draws this graph.
struct ModuleGraphTests {
    /// Each of newspush's own modules and the newspush modules it may import.
    static let allowed: [String: Set<String>] = [
        "NewsPushModel": [],
        "NotificationHubs": [],
        "FeedParsing": ["NewsPushModel"],
        "NewsClassifier": ["NewsPushModel"],
        "NewsPushCore": ["NewsPushModel", "NotificationHubs", "FeedParsing", "NewsClassifier"],
        "NewsPushLedger": ["NewsPushModel"],
        "NewsPushSessions": [
            "NewsPushModel", "NotificationHubs", "FeedParsing", "NewsClassifier", "NewsPushCore", "NewsPushLedger",
        ],
        "NewsPushHTTP": ["NewsPushModel"],
        "NewsPushDesk": [
            "NewsPushModel", "NotificationHubs", "FeedParsing", "NewsPushCore", "NewsPushLedger", "NewsPushSessions",
            "NewsPushHTTP",
        ],
        "NewsPushAPI": [
            "NewsPushModel", "NotificationHubs", "NewsPushCore", "NewsPushSessions", "NewsPushHTTP",
        ],
        "NewsPushWatch": ["NewsPushCore", "NewsPushSessions", "NewsPushHTTP"],
    ]

    /// The front ends: none may import another.
    static let frontEnds: Set<String> = ["NewsPushDesk", "NewsPushAPI", "NewsPushWatch"]

    /// An import in any of its forms: with attributes (`@testable`, `@preconcurrency`), an access
    /// level (`internal import`), or of one declaration (`import struct M.T`).
    static let importLine = try! NSRegularExpression(
        pattern: #"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"#
            + #"(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?(\w+)"#)

    /// Every module the Swift files under `folder` import (nothing when there is no folder).
    static func imported(in folder: URL) throws -> Set<String> {
        guard let files = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        var found: Set<String> = []
        for case let file as String in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let line = String(line)
                guard let match = importLine.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)),
                    let range = Range(match.range(at: 1), in: line)
                else { continue }
                found.insert(String(line[range]))
            }
        }
        return found
    }

    /// The newspush modules each module's sources import.
    static func imports(of module: String) throws -> Set<String> {
        try imported(in: CoreFolderOrderTests.root.appendingPathComponent("Sources/\(module)")).filter {
            allowed[$0] != nil
        }
    }

    @Test(arguments: allowed.keys.sorted())
    func importsOnlyWhatTheGraphAllows(_ module: String) throws {
        let extra = try Self.imports(of: module).subtracting(Self.allowed[module] ?? [])
        #expect(extra.isEmpty, "\(module) imports \(extra.sorted()), which docs/architecture.md does not allow")
        if Self.frontEnds.contains(module) {
            let others = try Self.imports(of: module).intersection(Self.frontEnds.subtracting([module]))
            #expect(others.isEmpty, "the front end \(module) imports the front end \(others.sorted())")
        }
    }

    /// The app kit is a package of its own that an app adds: it imports Foundation alone and
    /// depends on no package, so an app builds nothing of the server.
    @Test func theAppKitIsFoundationOnly() throws {
        let kit = CoreFolderOrderTests.root.appendingPathComponent("NewsPushAppKit")
        let manifest = try String(contentsOf: kit.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(!manifest.contains(".package("), "NewsPushAppKit/Package.swift depends on a package")
        let sources = kit.appendingPathComponent("Sources/NewsPushAppKit")
        let imported = try Self.imported(in: sources)
        #expect(!imported.isEmpty, "the kit's sources were not found")
        #expect(imported.isSubset(of: ["Foundation", "FoundationNetworking"]), "the kit imports \(imported.sorted())")
    }

    @Test func everyModuleIsInTheGraph() throws {
        let sources = CoreFolderOrderTests.root.appendingPathComponent("Sources")
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter {
            $0.hasPrefix("NewsPush") || $0 == "FeedParsing" || $0 == "NewsClassifier" || $0 == "NotificationHubs"
        }
        let tools: Set = ["NewsPushTesting", "NewsPushFuzzing"]
        #expect(Set(modules).subtracting(tools) == Set(Self.allowed.keys), "a module to place in the graph")
    }

    @Test func theDocumentDrawsTheCheckedGraph() throws {
        let doc = try String(
            contentsOf: CoreFolderOrderTests.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        for (module, imports) in Self.allowed where !imports.isEmpty {
            let line = "\(module) ← " + imports.sorted().joined(separator: ", ")
            #expect(doc.contains(line), "docs/architecture.md should draw: \(line)")
        }
    }
}
