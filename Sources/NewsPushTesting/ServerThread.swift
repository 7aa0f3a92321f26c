import Foundation
import Synchronization

/// A task executor with one thread of its own, for the test servers (feeds, the hub emulator).
/// On the shared concurrency pool (two threads on a two-core machine) a server's handlers wait
/// behind whatever the tests run there; a busy machine then starves them past libcurl's
/// low-speed limit. On their own thread they get the operating system's share of the CPU like
/// any process. (Swift has no thread-backed executor in the standard library; NIO's event loops
/// would do but must not run long handlers.)
public final class ServerThread: TaskExecutor, Sendable {
    private let queue = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    /// Starts the thread, named `name` for debuggers; it ends when the last task that prefers
    /// it has let go of the executor.
    public init(name: String) {
        let thread = Thread { [weak self, ready] in
            while true {
                ready.wait()
                guard let executor = self else { return }
                guard let job = executor.queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                job.runSynchronously(on: executor.asUnownedTaskExecutor())
            }
        }
        thread.name = name
        thread.start()
    }

    deinit { ready.signal() }

    /// Queues a job for the thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        queue.withLock { $0.append(unowned) }
        ready.signal()
    }

    /// Runs `operation` in a task that prefers this thread, with the tasks it starts.
    public func run(_ operation: @escaping @Sendable () async throws -> Void) -> Task<Void, any Error> {
        Task(executorPreference: self) { try await operation() }
    }
}
