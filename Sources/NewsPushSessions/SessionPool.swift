import Foundation

/// Device sessions kept open between requests, one per thread that uses them. On PostgreSQL
/// each holds a connection of its own, at most `api.pool` of them: a request finding them all
/// in use waits for one (SPEC §9; docs/postgresql.md has the `max_connections` arithmetic).
public final class SessionPool: @unchecked Sendable {
    /// Carries a session between threads: only one thread holds it at a time.
    public final class Box: @unchecked Sendable {
        /// The session carried.
        public let session: DeviceSession
        init(_ session: DeviceSession) { self.session = session }
    }

    private let context: SessionContext
    /// Guards `idle` and `open`, and wakes a request waiting for a session.
    private let turn = NSCondition()
    private var idle: [Box]
    /// Sessions open, idle or in use.
    private var open: Int
    /// The first session's ledger when its threads share it (SQLite): every session uses it.
    private let shared: Box?
    /// The most sessions (connections) open at once; unbounded when they share one.
    private let limit: Int

    /// Whether every session shares the first one's connection (SQLite), so a request never
    /// waits for a connection of its own.
    public var sharesOneConnection: Bool { shared != nil }

    /// The pool of `context`'s sessions, `first` (open) among them, at most `limit` connections.
    public init(context: SessionContext, first: DeviceSession, limit: Int) {
        self.context = context
        idle = [Box(first)]
        open = 1
        shared = first.sharesOneConnection ? Box(first) : nil
        self.limit = first.sharesOneConnection ? .max : max(1, limit)
    }

    /// An idle session whose connection is open, a new one while fewer than the limit are
    /// open, or the next one put back. A session the server closed (a PostgreSQL restart) is
    /// let go and replaced here, before any request uses it.
    public func take() throws(SessionError) -> Box {
        turn.lock()
        while true {
            while idle.isEmpty && open >= limit { turn.wait() }
            guard let box = idle.popLast() else { break }
            if box.session.isConnected {
                turn.unlock()
                return box
            }
            open -= 1
        }
        open += 1
        turn.unlock()
        return try opened()
    }

    /// How long a request waits for the ledger's server to take a new connection (a restart
    /// of PostgreSQL takes seconds) before it is answered 503.
    static let reconnectPatience: Double = 20

    private func opened() throws(SessionError) -> Box {
        let started = Date()
        var pause = 0.1
        while true {
            do throws(SessionError) {
                let session: DeviceSession
                if let shared {
                    session = try DeviceSession(context: context, ledger: shared.session.ledger)
                } else {
                    session = try DeviceSession.open(context: context, verify: false)
                }
                return Box(session)
            } catch {
                // The server not answering (not a wrong password, not a damaged ledger): wait for it.
                guard shared == nil, case .ledger(.unreadable) = error,
                    Date().timeIntervalSince(started) < Self.reconnectPatience
                else {
                    drop()
                    throw error
                }
                Thread.sleep(forTimeInterval: pause)
                pause = min(1, pause * 2)
            }
        }
    }

    /// Runs `body` with a session taken for it and put back after (dropped after a ledger
    /// error, which may have left its connection unusable: the next request opens a new one).
    public func using<T>(_ body: (DeviceSession) throws -> T) throws -> T {
        let box = try take()
        do {
            let value = try body(box.session)
            put(box)
            return value
        } catch {
            if case .ledger? = error as? SessionError { drop() } else { put(box) }
            throw error
        }
    }

    /// A session whose work is done, for the next request.
    public func put(_ box: Box) {
        turn.lock()
        idle.append(box)
        turn.signal()
        turn.unlock()
    }

    /// A session let go (its connection may be broken): a new one may open in its place.
    public func drop() {
        turn.lock()
        open -= 1
        turn.signal()
        turn.unlock()
    }
}
