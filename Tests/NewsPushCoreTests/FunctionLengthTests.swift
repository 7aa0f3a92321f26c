import Foundation
import Testing

/// Functions a reader can hold in their head: no function, initialiser or computed property in
/// `Sources/` is over 60 lines, from its declaration to its closing brace.
struct FunctionLengthTests {
    static let limit = 60

    /// A declaration that opens a body: `func`, `init`, `subscript`, or a computed `var`.
    static let declaration = try? NSRegularExpression(
        pattern:
            #"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|static|final|mutating|nonisolated|override|convenience|required|class)\s+)*(func\s+[^\s(<]+|init[?!]?(?=[(<])|subscript|var\s+\w+[^=]*\{\s*$)"#
    )

    /// Each function's length and where it starts, over one file's lines (comments and string
    /// literals removed, as `CoreFolderOrderTests.stripped` does, so their braces are not code;
    /// the lines of a multi-line literal are dropped).
    static func lengths(_ lines: [Substring]) -> [(line: Int, length: Int)] {
        var inLiteral = false
        let code = lines.map { line -> String in
            let quotes = line.components(separatedBy: "\"\"\"").count - 1
            defer { if quotes % 2 == 1 { inLiteral.toggle() } }
            return inLiteral || quotes > 0 ? "" : CoreFolderOrderTests.stripped(String(line))
        }
        var found: [(Int, Int)] = []
        for (index, line) in lines.enumerated() {
            let text = String(line)
            guard declaration?.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil else {
                continue
            }
            var depth = 0
            var opened = false
            for end in index..<min(lines.count, index + 2000) {
                for character in code[end] {
                    if character == "{" {
                        depth += 1
                        opened = true
                    } else if character == "}" {
                        depth -= 1
                    }
                }
                if opened && depth <= 0 {
                    found.append((index + 1, end - index + 1))
                    break
                }
                if !opened && end > index + 8 { break }
            }
        }
        return found
    }

    @Test func noFunctionIsOverSixtyLines() throws {
        var long: [String] = []
        var files: [String] = []
        for folder in ["Sources", "NewsPushAppKit/Sources"] {
            let sources = CoreFolderOrderTests.root.appendingPathComponent(folder)
            let found = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String } ?? []
            files += found
            for file in found where file.hasSuffix(".swift") {
                let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
                for (line, length) in Self.lengths(text.split(separator: "\n", omittingEmptySubsequences: false))
                where length > Self.limit {
                    long.append("\(folder)/\(file):\(line): \(length) lines")
                }
            }
        }
        #expect(files.count > 100, "the sources were not found")
        #expect(long.isEmpty, "over \(Self.limit) lines:\n\(long.sorted().joined(separator: "\n"))")
    }
}
