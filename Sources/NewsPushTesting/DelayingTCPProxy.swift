import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy on 127.0.0.1 that holds every chunk for half of `roundTrip` before passing it on,
/// each way: a database "one network hop away" for benchmarks (a query and its answer take
/// `roundTrip` longer). Each connection gets two threads, one per direction.
public final class DelayingTCPProxy: Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let listener: Int32
    private let stopped = StopFlag()
    private let requests = Atomic<Int>(0)

    /// Chunks passed from the clients to the server so far (about one per query or statement
    /// a client waits for).
    public var clientChunks: Int { requests.load(ordering: .relaxed) }

    /// Listens on a free port and forwards each connection to `127.0.0.1:upstreamPort`.
    public init(upstreamPort: Int, roundTrip: Double) throws {
        (listener, port) = try listenLoopback()
        let oneWay = UInt32(roundTrip / 2 * 1e6)
        accepting(on: listener, until: stopped) { [self] client in
            // Without Nagle's algorithm both ways: a chunk held back for an ACK would add the
            // 40 ms of a delayed ACK to the delay asked for.
            var noDelay: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            guard let upstream = Self.connectLoopback(upstreamPort) else {
                close(client)
                return
            }
            Self.pump(from: client, to: upstream, delay: oneWay, counting: self)
            Self.pump(from: upstream, to: client, delay: oneWay, counting: nil)
        }
    }

    /// Stops listening (connections already made run until either side closes).
    public func stop() {
        stopped.set()
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// One direction of a connection: a reader stamps each chunk with the time it is due, a
    /// writer passes it on then (latency without a cap on throughput, like a network hop).
    private static func pump(from source: Int32, to target: Int32, delay: UInt32, counting proxy: DelayingTCPProxy?) {
        let line = DelayLine()
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = recv(source, &buffer, buffer.count, 0)
                if count <= 0 { break }
                proxy?.requests.add(1, ordering: .relaxed)
                line.put(Array(buffer[0..<count]), due: DispatchTime.now().uptimeNanoseconds + UInt64(delay) * 1000)
            }
            line.close()
        }.start()
        Thread {
            while let (chunk, due) = line.take() {
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }
                var offset = 0
                while offset < chunk.count {
                    let sent = chunk.withUnsafeBytes { raw -> Int in
                        guard let base = raw.baseAddress else { return -1 }
                        return send(target, base + offset, chunk.count - offset, Int32(MSG_NOSIGNAL))
                    }
                    if sent <= 0 { break }
                    offset += sent
                }
            }
            shutdown(target, Int32(SHUT_WR))
            shutdown(source, Int32(SHUT_RD))
        }.start()
    }

    private static func connectLoopback(_ port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}

/// The chunks of one direction of a proxied connection, in order, each with the time it is due.
private final class DelayLine: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var chunks: [(bytes: [UInt8], due: UInt64)] = []
    private var closed = false

    func put(_ bytes: [UInt8], due: UInt64) {
        condition.lock()
        chunks.append((bytes, due))
        condition.signal()
        condition.unlock()
    }

    func close() {
        condition.lock()
        closed = true
        condition.signal()
        condition.unlock()
    }

    /// The next chunk, waiting for one; nil once closed and empty.
    func take() -> (bytes: [UInt8], due: UInt64)? {
        condition.lock()
        defer { condition.unlock() }
        while chunks.isEmpty && !closed { condition.wait() }
        return chunks.isEmpty ? nil : chunks.removeFirst()
    }
}
