import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A bare TCP server on 127.0.0.1 for misbehaving peers an HTTP library will not imitate:
/// bodies that trickle or never end, connections reset mid-answer. Each connection is handed to
/// `handler` with its socket, after the request head has been read.
public final class RawTCPServer: Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let listener: Int32
    private let stopped = StopFlag()

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// What a handler can do with a connection.
    public struct Connection: Sendable {
        /// The connection's socket.
        public let socket: Int32
        /// The request head (request line and headers).
        public let request: String

        /// Writes bytes; false once the peer is gone.
        @discardableResult
        public func write(_ text: String) -> Bool { write(Data(text.utf8)) }

        /// Writes `text` as UTF-8; false when the peer has gone.
        @discardableResult
        public func write(_ data: Data) -> Bool {
            data.withUnsafeBytes { raw in
                guard let base = raw.baseAddress else { return true }
                var offset = 0
                while offset < raw.count {
                    let n = send(socket, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                    if n <= 0 { return false }
                    offset += n
                }
                return true
            }
        }

        /// Closes with a TCP reset instead of an orderly shutdown.
        public func reset() {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(socket)
        }
    }

    /// Listens on a free port; `handler` gets each connection on a thread of its own.
    public init(handler: @escaping @Sendable (Connection) -> Void) throws {
        (listener, port) = try listenLoopback()
        accepting(on: listener, until: stopped) { client in
            Thread {
                var head = Data()
                var byte: UInt8 = 0
                while !head.suffix(4).elementsEqual([13, 10, 13, 10]), recv(client, &byte, 1, 0) == 1 {
                    head.append(byte)
                }
                handler(Connection(socket: client, request: String(decoding: head, as: UTF8.self)))
            }.start()
        }
    }

    /// Stops listening.
    public func stop() {
        stopped.set()
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}

/// A listening socket on a free port of 127.0.0.1, and the port.
func listenLoopback() throws -> (socket: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    guard let bound = bindLoopback(fd), listen(fd, 64) == 0 else {
        close(fd)
        throw POSIXError(.EADDRINUSE)
    }
    return (fd, bound)
}

/// Accepts connections on `listener` on a thread of its own, handing each to `each`, until
/// `stopped` is set and the listener is closed.
func accepting(on listener: Int32, until stopped: StopFlag, _ each: @escaping @Sendable (Int32) -> Void) {
    Thread {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if stopped.isSet { return }
                continue
            }
            each(client)
        }
    }.start()
}

/// Binds `fd` to a free port on 127.0.0.1 and returns the port; nil when it cannot.
func bindLoopback(_ fd: Int32) -> Int? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
}

/// A flag the listening threads of the test servers read after `accept` fails: set when the
/// server was stopped on purpose. (A class of its own, so a thread holds the flag, not the
/// server: the release compiler crashed on a thread closure capturing the server in its init.)
final class StopFlag: Sendable {
    private let value = Mutex(false)

    /// Whether `set()` was called.
    var isSet: Bool { value.withLock { $0 } }

    /// Marks the server stopped.
    func set() { value.withLock { $0 = true } }
}
