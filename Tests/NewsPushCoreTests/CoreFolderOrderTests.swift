import Foundation
import Testing

/// NewsPushCore's folders follow the data: a folder may use the types of the
/// folders before it in `order`, never of one after it, so no two folders use each other in a
/// circle. The compiler does not guard folders inside a module; this test does, over the
/// sources, and keeps docs/architecture.md's list in step.
struct CoreFolderOrderTests {
    /// The allowed order, as docs/architecture.md writes it.
    static let order = [
        "Text", "Config", "Fetching", "Reading", "Delivery", "Items", "Dedupe", "Policy", "Report",
    ]

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Each folder's Swift sources, comments and string literals removed.
    static func sources() throws -> [String: [(file: String, text: String)]] {
        let core = root.appendingPathComponent("Sources/NewsPushCore")
        var sources: [String: [(String, String)]] = [:]
        for folder in try FileManager.default.contentsOfDirectory(atPath: core.path) {
            let url = core.appendingPathComponent(folder)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), isFolder.boolValue else {
                continue
            }
            for file in try FileManager.default.contentsOfDirectory(atPath: url.path) where file.hasSuffix(".swift") {
                let text = try String(contentsOf: url.appendingPathComponent(file), encoding: .utf8)
                sources[folder, default: []].append((file, stripped(text)))
            }
        }
        return sources
    }

    /// The code without `//` comments and the contents of string literals (names in prose and
    /// messages are not uses).
    static func stripped(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var out = ""
            var inString = false
            var previous: Character = " "
            for character in line {
                if !inString && character == "/" && previous == "/" {
                    out.removeLast()
                    break
                }
                if character == "\"" && previous != "\\" { inString.toggle() }
                if !inString { out.append(character) }
                previous = character
            }
            return out
        }.joined(separator: "\n")
    }

    /// The types each folder declares at the top level of its files.
    static func declarations(_ sources: [String: [(file: String, text: String)]]) -> [String: String] {
        let pattern = try? NSRegularExpression(
            pattern:
                #"^(?:public |internal |package |final |indirect )*(?:struct|enum|class|protocol|actor|typealias) ([A-Z][A-Za-z0-9_]*)"#,
            options: [.anchorsMatchLines])
        var owners: [String: String] = [:]
        for (folder, files) in sources {
            for (_, text) in files {
                let range = NSRange(text.startIndex..., in: text)
                for match in pattern?.matches(in: text, range: range) ?? [] {
                    if let name = Range(match.range(at: 1), in: text) { owners[String(text[name])] = folder }
                }
            }
        }
        return owners
    }

    @Test func everyFolderUsesOnlyTheFoldersBeforeIt() throws {
        let sources = try Self.sources()
        #expect(Set(sources.keys) == Set(Self.order), "a folder to place in the order: \(sources.keys.sorted())")
        let owners = Self.declarations(sources)
        var violations: [String] = []
        for (folder, files) in sources {
            let rank = Self.order.firstIndex(of: folder) ?? 0
            for (file, text) in files {
                let words = Set(text.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
                for word in words {
                    guard let owner = owners[word], let ownerRank = Self.order.firstIndex(of: owner), ownerRank > rank
                    else { continue }
                    violations.append("\(folder)/\(file) uses \(word) of \(owner), which comes after it")
                }
            }
        }
        #expect(violations.isEmpty, "\(violations.sorted().joined(separator: "\n"))")
    }

    @Test func theDocumentedOrderIsTheCheckedOne() throws {
        let doc = try String(
            contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        #expect(doc.contains("Core folders, in order: " + Self.order.joined(separator: " → ")), "docs/architecture.md")
    }
}
