import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A command run to its end with `posix_spawn`, its standard input given and its output read.
///
/// Hand-written instead of Foundation's `Process`: on Linux `Process.run` reads
/// `/proc/self/fd` past its buffer once the test process holds about 1,300 descriptors
/// (swift-corelibs-foundation PR #5472) and crashes the whole test run, which a parallel run of
/// this suite (emulators, feed servers, API instances) comes near. The tests start most of their
/// commands here, and start the servers that live through a test (`start`).
///
/// Every child dies with the test process: it is started by `setpriv --pdeathsig KILL` (the
/// kernel's parent-death signal, kept across the `exec`), from one thread that lives as long as
/// the process (the signal follows the thread that started a child, and the concurrency pool's
/// threads come and go). A test process that crashes leaves no server behind.
public enum ChildProcess {
    /// How a command ended: its exit status (or the signal that ended it), and its output.
    public struct Finished: Sendable {
        /// The exit status, or the number of the signal that ended it.
        public var status: Int32
        /// What it wrote to standard output.
        public var stdout: Data
        /// What it wrote to standard error.
        public var stderr: Data
    }

    /// Why a command could not be started.
    public struct CannotStart: Error, CustomStringConvertible {
        /// What failed.
        public var description: String
    }

    /// Runs `path` with `arguments` in `environment` (nothing else of this process's), in
    /// `directory` when given, with `input` on its standard input; waits for its end.
    public static func run(
        _ path: String, _ arguments: [String], environment: [String: String], directory: String? = nil,
        input: Data? = nil
    ) throws -> Finished {
        var pipes = [[Int32]](repeating: [-1, -1], count: 3)
        for index in pipes.indices {
            guard pipe(&pipes[index]) == 0 else {
                pipes.flatMap { $0 }.filter { $0 >= 0 }.forEach { close($0) }
                throw CannotStart(description: "no pipe: \(String(cString: strerror(errno)))")
            }
            // Kept out of every other child (the ends given to this one are duplicated for it).
            for fd in pipes[index] { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        let pid: pid_t
        do {
            pid = try spawn(
                path, arguments, environment, directory, stdin: pipes[0][0], stdout: pipes[1][1], stderr: pipes[2][1])
        } catch {
            pipes.flatMap { $0 }.forEach { close($0) }
            throw error
        }
        close(pipes[0][0])
        close(pipes[1][1])
        close(pipes[2][1])
        // The input is written from a thread of its own: a child that answers as it reads (gzip)
        // would otherwise fill its output pipe while this one still writes.
        let inputEnd = pipes[0][1]
        let written = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            if let input { write(all: input, to: inputEnd) }
            close(inputEnd)
            written.signal()
        }
        let (stdout, stderr) = readBoth(pipes[1][0], pipes[2][0])
        written.wait()
        close(pipes[1][0])
        close(pipes[2][0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // As Foundation reports it: the exit status, or the number of the signal that ended it.
        let ended = status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
        return Finished(status: ended, stdout: stdout, stderr: stderr)
    }

    static func spawn(
        _ path: String, _ arguments: [String], _ environment: [String: String], _ directory: String?,
        stdin: Int32, stdout: Int32, stderr: Int32, deathSignal: String = "KILL"
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Descriptors this process opened without close-on-exec stay out of the child.
        if let closeFrom = gnuExtension("posix_spawn_file_actions_addclosefrom_np", as: AddCloseFrom.self) {
            _ = closeFrom(&actions, 3)
        }
        if let directory {
            guard let chdir = gnuExtension("posix_spawn_file_actions_addchdir_np", as: AddChdir.self) else {
                throw CannotStart(description: "this C library cannot start a command in another folder")
            }
            _ = directory.withCString { chdir(&actions, $0) }
        }
        let launcher = setpriv ?? path
        let command =
            setpriv == nil ? [path] + arguments : [launcher, "--pdeathsig", deathSignal, "--", path] + arguments
        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let (pid, result) = SpawningThread.shared.perform { () -> (pid_t, Int32) in
            var pid = pid_t()
            let result = posix_spawn(&pid, launcher, &actions, nil, argv, envp)
            return (pid, result)
        }
        guard result == 0 else {
            throw CannotStart(description: "\(path): \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// `setpriv`, which sets the parent-death signal and then becomes the command; nil where
    /// util-linux's tool is missing (the child then outlives a crashed test process).
    private static let setpriv: String? = ["/usr/bin/setpriv", "/bin/setpriv"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias AddChdir =
        @convention(c) (
            UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>
        ) -> Int32

    /// A GNU extension of the C library, looked up by name (Swift's Glibc module does not
    /// declare the `_np` functions); nil where the library lacks it.
    private static func gnuExtension<T>(_ name: String, as type: T.Type) -> T? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }

    static func write(all data: Data, to fd: Int32) {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress?.advanced(by: offset), buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// Everything written to `first` and `second` until both close, read as it comes (so a
    /// child that fills one pipe never waits on the other).
    private static func readBoth(_ first: Int32, _ second: Int32) -> (Data, Data) {
        var outputs = [Data(), Data()]
        var open = [true, true]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open.contains(true) {
            var fds = [first, second].enumerated().map { index, fd in
                pollfd(fd: open[index] ? fd : -1, events: Int16(POLLIN), revents: 0)
            }
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in 0..<2 where open[index] && fds[index].revents != 0 {
                let count = read(fds[index].fd, &buffer, buffer.count)
                if count > 0 {
                    outputs[index].append(contentsOf: buffer[0..<count])
                } else if count == 0 || errno != EINTR {
                    open[index] = false
                }
            }
        }
        return (outputs[0], outputs[1])
    }
}
