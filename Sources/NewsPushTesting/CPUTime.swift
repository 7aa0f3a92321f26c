import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Seconds of CPU the calling thread spent in `body`: a bound on work (a quadratic loop, a
/// parser's blow-up) that a busy machine cannot stretch, unlike the wall clock.
public func threadCPUSeconds(_ body: () throws -> Void) rethrows -> Double {
    func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
    let start = now()
    try body()
    return now() - start
}
