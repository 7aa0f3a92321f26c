import FeedParsing
import Foundation

// Every feed under the paths given, parsed, one line each: the path and what the parser made of
// it (its JSON, sorted keys), or its error. The test command runs the debug and the release
// builds over the same feeds and compares the two outputs: the parser's speed tricks (no
// exclusivity checks, the C byte searches at -O) must never change what a feed reads as.
// The parse budget is a minute, so a slow debug build never reads a feed differently for time.

func files(under path: String) -> [String] {
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return [] }
    guard isFolder.boolValue else { return [path] }
    let found = FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String } ?? []
    return found.sorted().map { (path as NSString).appendingPathComponent($0) }.filter {
        var folder: ObjCBool = false
        return FileManager.default.fileExists(atPath: $0, isDirectory: &folder) && !folder.boolValue
    }
}

let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys]
encoder.dateEncodingStrategy = .millisecondsSince1970
for path in CommandLine.arguments.dropFirst().flatMap(files(under:)) {
    guard let data = FileManager.default.contents(atPath: path) else { continue }
    let line: String
    do {
        let feed = try FeedParser.parse(
            data, url: "https://feeds.example/" + (path as NSString).lastPathComponent, budget: 60)
        line = String(decoding: (try? encoder.encode(feed)) ?? Data("unencodable".utf8), as: UTF8.self)
    } catch {
        line = "error: \(error)"
    }
    print(path + "\t" + line)
}
