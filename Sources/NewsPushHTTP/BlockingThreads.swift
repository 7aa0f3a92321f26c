import NIOPosix

/// Threads of a server's own for blocking session work (a ledger transaction, a hub request,
/// bcrypt), so its event loops and the shared concurrency pool never wait for it.
public final class BlockingThreads: Sendable {
    private let pool: NIOThreadPool

    /// `count` threads, started now; they live as long as the process.
    public init(count: Int) {
        pool = NIOThreadPool(numberOfThreads: count)
        pool.start()
    }

    /// Runs `body` on one of the threads and returns its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }

    /// Runs `body` on one of the threads, not waiting for it (on the caller's thread once the
    /// threads have stopped, so it is never lost).
    public func submit(_ body: @escaping @Sendable () -> Void) {
        pool.submit { _ in body() }
    }
}
