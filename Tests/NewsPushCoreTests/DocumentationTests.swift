import Foundation
import Testing

/// The README and docs/ are for people who clone the repository: every link and path they give
/// is inside it, and they name no tracker numbers a reader cannot see.
struct DocumentationTests {
    /// README.md and every page of docs/, with their paths.
    static func pages() throws -> [(name: String, text: String)] {
        let root = CoreFolderOrderTests.root
        let docs = root.appendingPathComponent("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }
        return try (["README.md"] + names.map { "docs/" + $0 }).map { name in
            (name, try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8))
        }
    }

    @Test func everyLinkStaysInsideTheRepository() throws {
        let root = CoreFolderOrderTests.root
        let link = try NSRegularExpression(pattern: #"\]\(([^)#\s]+)(?:#[^)]*)?\)"#)
        var outside: [String] = []
        for (name, text) in try Self.pages() {
            if text.contains("../shared") { outside.append("\(name): names ../shared") }
            let folder = root.appendingPathComponent(name).deletingLastPathComponent()
            for match in link.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range(at: 1), in: text) else { continue }
                let target = String(text[range])
                if target.hasPrefix("http://") || target.hasPrefix("https://") || target.hasPrefix("mailto:") {
                    continue
                }
                let resolved = folder.appendingPathComponent(target).standardizedFileURL.path
                if !resolved.hasPrefix(root.standardizedFileURL.path)
                    || !FileManager.default.fileExists(atPath: resolved)
                {
                    outside.append("\(name): \(target)")
                }
            }
        }
        #expect(outside.isEmpty, "links outside the repository or to nothing:\n\(outside.joined(separator: "\n"))")
    }

    @Test func noPageNamesATrackerNumber() throws {
        let number = try NSRegularExpression(pattern: Self.trackerWords)
        var found: [String] = []
        for (name, text) in try Self.pages() {
            for match in number.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range, in: text) else { continue }
                // Another project's public tracker, named with its project, is a citation.
                let start = text.index(range.lowerBound, offsetBy: -40, limitedBy: text.startIndex) ?? text.startIndex
                let before = String(text[start..<range.lowerBound])
                if ["SDK", "swift-", "foundation"].contains(where: { before.contains($0) }) { continue }
                found.append("\(name): \(text[range])")
            }
        }
        #expect(found.isEmpty, "tracker numbers a reader cannot see:\n\(found.joined(separator: "\n"))")
    }

    /// Words that name this project's tracker or development rounds: an issue or item number, a
    /// session or wave of work.
    static let trackerWords = [
        #"\b[Ii]ssues? #?[0-9]+"#, #"\(#[0-9]+\)"#, #"\b[Ss]ession [0-9]+"#, #"\b[Ww]ave [0-9]+"#,
        #"\([Ii]tems? [0-9]+"#,
    ].joined(separator: "|")

    /// A test's comment that starts with a number (`// 3: …`): an issue's item, not a step.
    static let numberedItem = #"^//+ [0-9]{1,2}[:.] "#

    /// The code's comments speak to its reader too: no tracker numbers in Sources or Tests (the
    /// fixtures are other people's text).
    @Test func noCommentNamesATrackerNumber() throws {
        let root = CoreFolderOrderTests.root
        var found: [String] = []
        for folder in ["Sources", "Tests", "NewsPushAppKit/Sources"] {
            let number = try NSRegularExpression(
                pattern: Self.trackerWords + (folder == "Tests" ? "|" + Self.numberedItem : ""))
            let files = FileManager.default.enumerator(atPath: root.appendingPathComponent(folder).path)
            while let path = files?.nextObject() as? String {
                guard path.hasSuffix(".swift"), !path.contains("Fixtures/") else { continue }
                let text = try String(contentsOf: root.appendingPathComponent(folder + "/" + path), encoding: .utf8)
                for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    guard let comment = line.range(of: "//").map({ String(line[$0.lowerBound...]) }) else { continue }
                    let range = NSRange(comment.startIndex..., in: comment)
                    if number.firstMatch(in: comment, range: range) != nil {
                        found.append("\(folder)/\(path):\(index + 1)")
                    }
                }
            }
        }
        #expect(found.isEmpty, "comments naming tracker numbers:\n\(found.joined(separator: "\n"))")
    }

    /// The README is what a user reads first: short enough to read, the long parts in docs/.
    @Test func theReadmeIsAtMostFourHundredLines() throws {
        let readme = try #require(try Self.pages().first { $0.name == "README.md" }).text
        let lines = readme.filter { $0 == "\n" }.count
        #expect(lines <= 400, "README.md has \(lines) lines")
    }

    @Test func theReferenceListsEveryCommand() throws {
        let reference = try #require(try Self.pages().first { $0.name == "docs/reference.md" }).text
        for command in [
            "run", "preview", "publish", "parse", "classify", "check", "state", "hub token", "hub test-send",
            "hub status", "hub cancel", "review", "desk", "api", "devices", "watch", "ping",
        ] {
            #expect(reference.contains("`newspush \(command)"), "docs/reference.md lacks newspush \(command)")
        }
        for code in ["0", "1", "2", "64", "75", "78"] {
            #expect(reference.contains("| \(code) |"), "docs/reference.md lacks exit code \(code)")
        }
    }
}
