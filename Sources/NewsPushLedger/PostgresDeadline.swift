import NIOConcurrencyHelpers
import NIOCore

/// The first of a statement's answer and a deadline. postgres-nio writes a statement to its
/// connection without watching the write (`channel.write(…, promise: nil)`, in
/// `PostgresConnection.query` as in `PostgresClient.query`): a statement written to a connection
/// the server has just closed is never answered, so every wait for an answer has an end. (No
/// library here bounds a future in time; NIO's scheduled task is the timer.)
enum PostgresDeadline {
    /// A future settled by the first of `future` and, after `seconds`, the error `late` makes.
    static func first<T: Sendable>(
        _ future: EventLoopFuture<T>, within seconds: Int64, late: @escaping @Sendable () -> any Error
    ) -> EventLoopFuture<T> {
        let promise = future.eventLoop.makePromise(of: T.self)
        let settled = NIOLockedValueBox(false)
        // The first of the answer and the timeout settles the promise; the other is ignored.
        let settle: @Sendable (Result<T, any Error>) -> Void = { result in
            let first = settled.withLockedValue { was in
                defer { was = true }
                return !was
            }
            if first { promise.completeWith(result) }
        }
        let timer = future.eventLoop.scheduleTask(in: .seconds(seconds)) { settle(.failure(late())) }
        future.whenComplete { result in
            timer.cancel()
            settle(result)
        }
        return promise.futureResult
    }

    /// `body`'s value, or the error `late` makes once `seconds` have passed without it (`body`
    /// is then left to end on its own: a statement never answered cannot be called back).
    static func first<T: Sendable>(
        within seconds: Int64, on eventLoop: any EventLoop, late: @escaping @Sendable () -> any Error,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await first(eventLoop.makeFutureWithTask(body), within: seconds, late: late).get()
    }
}
