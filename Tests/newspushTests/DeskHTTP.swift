import Foundation
import NewsPushTesting

#if canImport(Glibc)
    import Glibc
#endif

/// A running `newspush desk` (or any server that prints "… listening on http://HOST:PORT/" as its
/// first line), spoken to with raw HTTP/1.1 so a test can send bytes no HTTP library would.
final class DeskProcess: @unchecked Sendable {
    /// The server's process (it dies with the test process).
    let child: RunningChild
    let port: UInt16
    /// What the server has written to standard error so far.
    let errors: ChildOutput
    /// What it has written to standard output so far (the first line, with the port, included).
    let output: ChildOutput

    private init(child: RunningChild, port: UInt16, errors: ChildOutput, output: ChildOutput) {
        self.child = child
        self.port = port
        self.errors = errors
        self.output = output
    }

    /// Starts `newspush ARGUMENTS` (e.g. `desk --listen 127.0.0.1:0 --config F`) and waits for
    /// its first line.
    static func start(
        _ arguments: [String], environment: [String: String] = hubEnvironment, logFile: String? = nil
    ) async throws -> DeskProcess {
        // NEWSPUSH_TEST_LOGS=DIR keeps each server's log there (for a failure's story).
        let logPath =
            logFile
            ?? ProcessInfo.processInfo.environment["NEWSPUSH_TEST_LOGS"].map {
                $0 + "/\(arguments.first ?? "server")-\(UUID().uuidString.prefix(8)).log"
            }
        let child = try ChildProcess.start(
            try binaryURL().path, arguments,
            environment: ["PATH": "/usr/bin:/bin", "NO_COLOR": "1"].merging(environment) { $1 },
            errors: .read(copyTo: logPath))
        let (output, errors) = (try child.stdout.orFail(), try child.stderr.orFail())
        let (port, line) = await output.listeningPort()
        guard let port, let bound = UInt16(exactly: port) else {
            child.stop()
            // All it said: its error may still be on the way when its first line's end arrives.
            throw DeskProcessError.notListening(line + (await errors.whole()))
        }
        return DeskProcess(child: child, port: bound, errors: errors, output: output)
    }

    var isRunning: Bool { child.isRunning }

    /// Ends the process at once (SIGKILL: nothing of a test's desk needs a graceful end) and
    /// waits for it, which takes no time.
    func stop() { child.stop() }

    /// Asks it to stop as an operator does (SIGTERM: what it has in flight finishes) and waits
    /// for its end; its exit status.
    @discardableResult
    func drain() async -> Int32 {
        child.terminate()
        return await child.exitStatus()
    }

    /// One request as raw bytes (`Connection: close` is added); the answer's status, headers
    /// (names lower-cased) and body. Status 0: the connection closed without an answer.
    func send(_ head: String, body: String = "", headers: [String] = []) async -> RawAnswer {
        await Self.exchange(head, port: port, body: body, headers: headers)
    }

    /// The bytes of `request` as they are (no header added); the answer.
    func sendRaw(_ request: String) async -> RawAnswer {
        let (bytes, port) = (Array(request.utf8), port)
        return await offThePool { RawAnswer(Self.exchange(bytes, port: port)) }
    }

    /// One request whose body is `body` byte for byte (invalid UTF-8 included).
    func send(_ head: String, bytes body: [UInt8], headers: [String] = []) async -> RawAnswer {
        var request = head + "\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for header in headers { request += header + "\r\n" }
        request += "Content-Length: \(body.count)\r\n\r\n"
        let (bytes, port) = (Array(request.utf8) + body, port)
        return await offThePool { RawAnswer(Self.exchange(bytes, port: port)) }
    }

    /// `send` to any local server on `port`.
    static func exchange(_ head: String, port: UInt16, body: String = "", headers: [String] = []) async -> RawAnswer {
        var request = head + "\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for header in headers { request += header + "\r\n" }
        if !body.isEmpty || head.hasPrefix("POST") { request += "Content-Length: \(body.utf8.count)\r\n" }
        request += "\r\n" + body
        let bytes = Array(request.utf8)
        return await offThePool { RawAnswer(Self.exchange(bytes, port: port)) }
    }

    private static func exchange(_ bytes: [UInt8], port: UInt16) -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return [] }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return [] }
            sent += n
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            answer.append(contentsOf: buffer[0..<n])
        }
        return answer
    }
}

enum DeskProcessError: Error { case notListening(String) }

extension Optional {
    /// The value, or an error a test reports (a child's output that was asked for is always there).
    func orFail(_ what: String = "a value") throws -> Wrapped {
        guard let self else { throw MissingValue(description: "\(what) was missing") }
        return self
    }
}

/// A value a test needed and did not have.
struct MissingValue: Error, CustomStringConvertible {
    var description: String
}

/// An HTTP answer read off the wire.
struct RawAnswer: Sendable {
    var status = 0
    var headers: [String: String] = [:]
    var body = ""

    /// An answer of `status` alone (what a test records for a command's exit).
    init(status: Int) { self.status = status }

    init(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased(), default: ""] +=
                (headers[line[..<colon].lowercased()] == nil ? "" : "\n")
                + line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        body = String(text[split.upperBound...])
    }

    /// The session cookie's `name=value`, if the answer sets one.
    var cookie: String? {
        headers["set-cookie"]?.split(separator: ";").first.map(String.init)
    }

    /// The page's CSRF token (`<meta name="csrf-token" content="…">`).
    var csrf: String? {
        guard let range = body.range(of: #"name="csrf-token" content="[^"]+""#, options: .regularExpression) else {
            return nil
        }
        return String(body[range].split(separator: "\"").last ?? "")
    }
}
