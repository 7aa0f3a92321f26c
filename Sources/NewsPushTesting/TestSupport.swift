import Foundation

/// A fresh temporary folder; the caller removes it with `cleanup()`.
public struct TemporaryFolder: Sendable {
    /// The folder's absolute path.
    public let path: String

    /// Creates a new, empty folder.
    public init() throws {
        path = NSTemporaryDirectory() + "newspush-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the folder.
    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// Writes `text` to `name` inside the folder (creating folders on the way); returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        let target = file(name)
        try FileManager.default.createDirectory(
            atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: target, atomically: true, encoding: .utf8)
        return target
    }

    /// Removes the folder and everything in it.
    public func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}

/// The fake connection string of hub-api.md's vectors (its key is not a real secret).
public let testConnectionString =
    "Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;"
    + "SharedAccessKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
/// The key of `testConnectionString` (hub-api.md's vectors; not a secret).
public let testKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

/// Runs blocking work (libcurl transfers, child processes) on a thread of its own. Not on
/// Dispatch's global queues: on Linux the Swift concurrency pool runs on those same threads, and
/// blocking them starves the local test servers.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.start()
    }
}

/// An RFC 822 date `minutesAgo` before now, for fresh feed items.
public func rfc822(minutesAgo: Double) -> String {
    rfc822(Date().addingTimeInterval(-minutesAgo * 60))
}

/// `date` as an RFC 822 date, as feeds write them.
public func rfc822(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    return formatter.string(from: date)
}

/// The environment that sets a debug build's session clock (`NEWSPUSH_TEST_NOW`): the binary
/// then judges freshness, budgets, quiet hours and schedules as of `date`, however long the
/// machine takes between two commands.
public func testClock(_ date: Date) -> [String: String] {
    let formatter = ISO8601DateFormatter()
    return ["NEWSPUSH_TEST_NOW": formatter.string(from: date)]
}

/// Now, in whole seconds (what feeds and the session clock can say exactly).
public func wholeSecondsNow() -> Date {
    Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
}

/// A small RSS 2.0 feed; each item is (guid, title, minutes ago). Titles are inserted as given
/// (already escaped for XML).
public func rssFeed(title: String, items: [(guid: String, title: String, minutesAgo: Double)]) -> String {
    rssFeed(title: title, dated: items.map { ($0.guid, $0.title, Date().addingTimeInterval(-$0.minutesAgo * 60)) })
}

/// A small RSS 2.0 feed; each item is (guid, title, publication date).
public func rssFeed(title: String, dated items: [(guid: String, title: String, published: Date)]) -> String {
    let body = items.map { item in
        """
        <item><title>\(item.title)</title><link>https://news.example.org/\(item.guid)</link>
        <guid isPermaLink="false">\(item.guid)</guid><pubDate>\(rfc822(item.published))</pubDate></item>
        """
    }.joined(separator: "\n")
    return
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>\(title)</title><link>https://news.example.org/"
        + "</link>\n\(body)\n</channel></rss>"
}

/// `data` gzipped by the system's gzip tool (tests only). The input is written from another
/// thread: a large body would otherwise fill the pipe while gzip waits for its output to be read.
public func gzipped(_ data: Data) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/gzip")
    process.arguments = ["-c"]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    let writer = Thread {
        input.fileHandleForWriting.write(data)
        try? input.fileHandleForWriting.close()
    }
    writer.start()
    let result = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return result
}
