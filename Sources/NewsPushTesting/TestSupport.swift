import Foundation

#if canImport(Glibc)
    import Glibc
#endif

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

/// `data` gzipped by the system's gzip tool (tests only).
public func gzipped(_ data: Data) throws -> Data {
    try ChildProcess.run("/bin/gzip", ["-c"], environment: [:], input: data).stdout
}

/// What `measuredRun` saw of a process: its exit status, wall time and peak resident memory.
public struct MeasuredRun: Sendable {
    /// The exit status.
    public var status: Int32
    /// Wall seconds from start to exit.
    public var seconds: Double
    /// Peak RSS in KB (wait4's `ru_maxrss`).
    public var peakKilobytes: Int
    /// The last 4 KB the command wrote to standard error (what a failure under load said).
    public var errorTail = ""
    /// The last 4 KB it wrote to standard output (a run's report: which feed failed, and why).
    public var outputTail = ""
}

/// Why `measuredRun` could not start a process.
public struct SpawnError: Error, CustomStringConvertible {
    /// The command.
    public var description: String
}

/// GNU time, which reads a command's own peak RSS (see `measuredRun`).
public let gnuTime = "/usr/bin/time"

/// Runs a command with its output to files (their tails kept) and measures it (the benchmarks' and the memory
/// tests' one way to read a process's peak RSS), through GNU time.
///
/// A direct child cannot be measured from here: Linux records, at its exec, the peak of the
/// memory it had before (a copy of this process's, or this process's own with posix_spawn) as
/// its `ru_maxrss`, so a large test runner would be measured instead of the command. GNU time
/// is small: its child's figure is the command's. Without it, the direct figure is returned
/// (an upper bound).
public func measuredRun(_ path: String, _ arguments: [String], environment: [String]) async throws -> MeasuredRun {
    let report = NSTemporaryDirectory() + "newspush-rss-\(UUID().uuidString)"
    let errors = report + ".stderr"
    let output = report + ".stdout"
    defer {
        unlink(report)
        unlink(errors)
        unlink(output)
    }
    let timed = FileManager.default.isExecutableFile(atPath: gnuTime)
    let command = timed ? [gnuTime, "-f", "%M", "-o", report, path] + arguments : [path] + arguments
    var run = try await offThePool { () -> Result<MeasuredRun, SpawnError> in
        var pid: pid_t = 0
        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var status: Int32 = 0
        var usage = rusage()
        let start = DispatchTime.now()
        guard posix_spawn(&pid, command[0], &actions, nil, argv, envp) == 0 else {
            return .failure(SpawnError(description: "cannot start \(command[0])"))
        }
        wait4(pid, &status, 0, &usage)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        return .success(
            MeasuredRun(status: (status >> 8) & 0xFF, seconds: seconds, peakKilobytes: Int(usage.ru_maxrss)))
    }.get()
    run.errorTail = String((try? String(contentsOfFile: errors, encoding: .utf8))?.suffix(4096) ?? "")
    run.outputTail = String((try? String(contentsOfFile: output, encoding: .utf8))?.suffix(4096) ?? "")
    if timed {
        // GNU time writes "Command exited with non-zero status N" before the figure then.
        let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        if let kilobytes = text.split(separator: "\n").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) {
            run.peakKilobytes = kilobytes
        }
    }
    return run
}

/// A random form body or query of 1 to 40 characters drawn from what breaks naive decoders
/// (raw spaces, bad `%` escapes, braces, markup, quotes, DEL, non-ASCII): the desk's fuzzed
/// requests.
public func hostileFormText(using random: inout some RandomNumberGenerator) -> String {
    let alphabet = Array("ab =&%+{}|^<>\"'#;/\\?zZ09%%%\u{7f}é€".unicodeScalars)
    return String(
        String.UnicodeScalarView(
            (0..<Int.random(in: 1...40, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" }))
}

/// The arrange step of a command-line test: the hub emulator with `devices` registered and a
/// temporary folder for the config and the ledger, both given to `body`, then stopped and
/// removed whatever `body` does.
public func withNewsroom<T>(
    devices: String, _ body: (_ hub: LocalHub, _ folder: TemporaryFolder) async throws -> T
) async throws -> T {
    let hub = try await LocalHub.start(devicesYAML: devices)
    defer { hub.stop() }
    let folder = try TemporaryFolder()
    defer { folder.cleanup() }
    return try await body(hub, folder)
}

/// A loopback port free now (a server whose own config must name its port before it starts).
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw SpawnError(description: "no free loopback port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// The processes of this machine whose command line mentions `text`, as "pid: command line"
/// (read from /proc): what a test left running.
public func processes(mentioning text: String) -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.filter { Int($0) != nil }.compactMap { pid in
        guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
        let line = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
        return line.contains(text) ? "\(pid): \(line)" : nil
    }
}
