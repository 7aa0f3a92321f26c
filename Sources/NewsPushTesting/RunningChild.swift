import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The one thread that starts every child of the test process, and lives as long as it: a
/// child's parent-death signal is sent when the *thread* that started it ends, and threads of the
/// concurrency pool and of Dispatch come and go.
final class SpawningThread: @unchecked Sendable {
    static let shared = SpawningThread()

    private let condition = NSCondition()
    private var work: [Job] = []

    private init() {
        // A child that ends before reading all its input must not end the test process too.
        signal(SIGPIPE, SIG_IGN)
        let thread = Thread { [self] in loop() }
        thread.name = "newspush-test-spawner"
        thread.start()
    }

    /// Runs `body` on the spawning thread and waits for its result.
    func perform<T>(_ body: () -> T) -> T {
        withoutActuallyEscaping(body) { body in
            var result: T?
            let done = DispatchSemaphore(value: 0)
            condition.lock()
            work.append(Job(run: { result = body() }, done: done))
            condition.signal()
            condition.unlock()
            done.wait()
            // The spawning thread set it, and let go of `body`, before the semaphore was signalled.
            return result.unsafelyUnwrapped
        }
    }

    private func loop() {
        while true {
            condition.lock()
            while work.isEmpty { condition.wait() }
            var job: Job? = work.removeFirst()
            condition.unlock()
            job?.run()
            let done = job?.done
            // Let go of the caller's closure before it is told: it may not outlive its call.
            job = nil
            done?.signal()
        }
    }

    /// A closure handed to the spawning thread while its caller waits (so nothing it captures is
    /// touched by two threads at once), and how the caller is told it ran.
    private struct Job: @unchecked Sendable {
        let run: () -> Void
        let done: DispatchSemaphore
    }
}

/// A child that runs until told to stop (a server: `newspush api`, a watcher, a WebSub hub),
/// started by `ChildProcess.start`: its output read as it comes, its end awaited on a thread of
/// its own. It dies with the test process (`ChildProcess`).
public final class RunningChild: @unchecked Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// Its standard output as it arrives (nil when it was discarded).
    public let stdout: ChildOutput?
    /// Its standard error as it arrives (nil when it was discarded).
    public let stderr: ChildOutput?

    private let condition = NSCondition()
    /// `waitpid`'s status, once it has ended.
    private var status: Int32?

    init(pid: pid_t, stdout: ChildOutput?, stderr: ChildOutput?) {
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        let reaper = Thread { [self] in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
            condition.lock()
            status = raw
            condition.broadcast()
            condition.unlock()
        }
        reaper.start()
    }

    /// Whether it has not ended yet.
    public var isRunning: Bool {
        condition.lock()
        defer { condition.unlock() }
        return status == nil
    }

    /// Sends `signal` while it runs.
    public func signal(_ signal: Int32) {
        condition.lock()
        defer { condition.unlock() }
        // Never a signal to a pid that was reaped (another process may hold it now).
        if status == nil { kill(pid, signal) }
    }

    /// Asks it to stop (SIGTERM).
    public func terminate() { signal(SIGTERM) }

    /// Ends it at once (SIGKILL) and waits for its end.
    public func stop() {
        signal(SIGKILL)
        _ = waitForExit()
    }

    /// Its exit status (or the number of the signal that ended it, as Foundation reports it),
    /// once it has ended.
    public func waitForExit() -> Int32 {
        let raw = ended()
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }

    /// Whether a signal ended it (not an exit of its own), once it has ended.
    public func endedBySignal() -> Bool { ended() & 0x7f != 0 }

    private func ended() -> Int32 {
        condition.lock()
        defer { condition.unlock() }
        while status == nil { condition.wait() }
        return status ?? 0
    }

    /// `waitForExit` off the concurrency pool.
    public func exitStatus() async -> Int32 {
        await offThePool { [self] in waitForExit() }
    }

    deinit {
        condition.lock()
        if status == nil { kill(pid, SIGKILL) }
        condition.unlock()
    }
}

/// A child's output as it arrives, read on a thread of its own (and copied to a log file when
/// there is one), so that a test waits for a line instead of for a time.
public final class ChildOutput: @unchecked Sendable {
    private let condition = NSCondition()
    private var text = ""
    private var ended = false

    /// Everything read so far.
    public var current: String {
        condition.lock()
        defer { condition.unlock() }
        return text
    }

    /// Reads `fd` to its end (then closes it), copying what arrives to the file at `sinkPath`.
    init(fd: Int32, sinkPath: String?) {
        Thread.detachNewThread { [self] in
            let sink = sinkPath.map { open($0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) } ?? -1
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                condition.lock()
                if count <= 0 {
                    ended = true
                } else {
                    text += String(decoding: buffer[0..<count], as: UTF8.self)
                }
                condition.broadcast()
                condition.unlock()
                if count <= 0 { break }
                if sink >= 0 { _ = buffer.withUnsafeBytes { Glibc.write(sink, $0.baseAddress, count) } }
            }
            close(fd)
            if sink >= 0 { close(sink) }
        }
    }

    /// Whether the child wrote `needle` (`count` times): waits until it has, or its output ended,
    /// or `limit` seconds passed (should it hang).
    public func until(_ needle: String, count: Int = 1, limit: Double = 60) async -> Bool {
        await offThePool { [self] in
            let deadline = Date().addingTimeInterval(limit)
            condition.lock()
            defer { condition.unlock() }
            func seen() -> Bool { text.components(separatedBy: needle).count - 1 >= count }
            while !seen() && !ended && condition.wait(until: deadline) {}
            return seen()
        }
    }

    /// Everything it wrote, once its output has ended (the child is gone), or what arrived
    /// within `limit` seconds: what a child that ended said, not the part read so far.
    public func whole(limit: Double = 10) async -> String {
        await offThePool { [self] in
            let deadline = Date().addingTimeInterval(limit)
            condition.lock()
            defer { condition.unlock() }
            while !ended && condition.wait(until: deadline) {}
            return text
        }
    }

    /// The first line it wrote (without the newline): waits for it, or for the output's end.
    public func firstLine(limit: Double = 120) async -> String {
        await offThePool { [self] in
            let deadline = Date().addingTimeInterval(limit)
            condition.lock()
            defer { condition.unlock() }
            while !text.contains("\n") && !ended && condition.wait(until: deadline) {}
            return String(text.prefix { $0 != "\n" })
        }
    }

    /// The port of the first `…://HOST:PORT` the child wrote in its first line ("listening on
    /// http://127.0.0.1:PORT/"), and that line.
    public func listeningPort(limit: Double = 120) async -> (port: Int?, line: String) {
        let line = await firstLine(limit: limit)
        guard let range = line.range(of: #"://[^/\s]+:(\d+)"#, options: .regularExpression),
            let colon = line[range].lastIndex(of: ":")
        else { return (nil, line) }
        return (Int(line[range][line.index(after: colon)...]), line)
    }
}

extension ChildProcess {
    /// Where a started child's output goes.
    public enum Output: Sendable {
        /// Read as it comes (`ChildOutput`), and copied to the file at the path when one is given.
        case read(copyTo: String? = nil)
        /// Discarded.
        case discard
    }

    /// Starts `path` with `arguments` in `environment` (nothing else of this process's), in
    /// `directory` when given, its standard input empty; returns at once. `deathSignal` (`KILL`,
    /// or `TERM` for a child that must clean up after itself) ends it with the test process.
    public static func start(
        _ path: String, _ arguments: [String], environment: [String: String], directory: String? = nil,
        output: Output = .read(), errors: Output = .read(), deathSignal: String = "KILL"
    ) throws -> RunningChild {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard null >= 0 else { throw CannotStart(description: "/dev/null: \(String(cString: strerror(errno)))") }
        defer { close(null) }
        var ends: [(read: Int32, write: Int32)?] = []
        for kind in [output, errors] {
            guard case .read = kind else {
                ends.append(nil)
                continue
            }
            var fds: [Int32] = [-1, -1]
            // Close-on-exec is set after `pipe` (Glibc's module has no `pipe2`): a child started
            // in between closes every descriptor above 2 anyway (`ChildProcess.spawn`).
            guard pipe(&fds) == 0, fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0
            else {
                ends.compactMap { $0 }.forEach {
                    close($0.read)
                    close($0.write)
                }
                throw CannotStart(description: "no pipe: \(String(cString: strerror(errno)))")
            }
            ends.append((fds[0], fds[1]))
        }
        let pid: pid_t
        do {
            pid = try spawn(
                path, arguments, environment, directory, stdin: null, stdout: ends[0]?.write ?? null,
                stderr: ends[1]?.write ?? null, deathSignal: deathSignal)
        } catch {
            ends.compactMap { $0 }.forEach {
                close($0.read)
                close($0.write)
            }
            throw error
        }
        ends.compactMap { $0 }.forEach { close($0.write) }
        func reader(_ index: Int, _ kind: Output) -> ChildOutput? {
            guard let end = ends[index], case .read(let copy) = kind else { return nil }
            return ChildOutput(fd: end.read, sinkPath: copy)
        }
        return RunningChild(pid: pid, stdout: reader(0, output), stderr: reader(1, errors))
    }
}
