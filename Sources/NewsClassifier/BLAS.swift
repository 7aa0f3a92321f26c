import Foundation
import NewsPushModel

/// Matrix products for the sentence encoder: oneDNN's `dnnl_sgemm` when the system has it
/// (Debian: `libdnnl2`; its kernels use the processor's widest vectors, measured twice as fast
/// as OpenBLAS's on this machine's AVX-512: docs/benchmarks.md), else OpenBLAS's `cblas_sgemm`
/// (`libopenblas0`), else portable loops that give the same numbers up to rounding, several
/// times slower. Both libraries are found with `dlopen` at run time, so newspush builds and
/// runs without them. This is the only file that talks to a BLAS.
enum BLAS {
    /// `C[m×n] = alpha · A[m×k] · B + beta · C`, B being `[n×k]` (`transposedB`, a weight matrix
    /// stored one output per row) or `[k×n]`; leading dimensions as in CBLAS's row-major calls.
    static func multiply(
        m: Int, n: Int, k: Int, alpha: Float = 1,
        _ a: UnsafePointer<Float>, lda: Int, _ b: UnsafePointer<Float>, ldb: Int, transposedB: Bool,
        beta: Float = 0, into c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        switch library {
        case .oneDNN(let sgemm, let setThreads):
            // One thread per product: the encoder's batches are already spread over the cores.
            setThreads(1)
            let status = sgemm(
                CChar(UInt8(ascii: "N")), CChar(UInt8(ascii: transposedB ? "T" : "N")), Int64(m), Int64(n),
                Int64(k), alpha, a, Int64(lda), b, Int64(ldb), beta, c, Int64(ldc))
            // Only invalid arguments fail (the shapes are the encoder's own): never expected, and
            // then the portable loops still give the answer.
            if status != 0 {
                portable(
                    m: m, n: n, k: k, alpha: alpha, a, lda: lda, b, ldb: ldb, transposedB: transposedB, beta: beta,
                    into: c, ldc: ldc)
            }
        case .openBLAS(let sgemm):
            sgemm(
                rowMajor, noTrans, transposedB ? trans : noTrans, Int32(m), Int32(n), Int32(k), alpha,
                a, Int32(lda), b, Int32(ldb), beta, c, Int32(ldc))
        case nil:
            portable(
                m: m, n: n, k: k, alpha: alpha, a, lda: lda, b, ldb: ldb, transposedB: transposedB, beta: beta,
                into: c, ldc: ldc)
        }
    }

    /// `multiply` on buffers, each from an offset (empty buffers: nothing to multiply).
    static func multiply(
        m: Int, n: Int, k: Int, alpha: Float = 1,
        _ a: UnsafeBufferPointer<Float>, aOffset: Int = 0, lda: Int,
        _ b: UnsafeBufferPointer<Float>, bOffset: Int = 0, ldb: Int, transposedB: Bool,
        beta: Float = 0, into c: UnsafeMutableBufferPointer<Float>, cOffset: Int = 0, ldc: Int
    ) {
        guard let a = a.baseAddress, let b = b.baseAddress, let c = c.baseAddress else { return }
        multiply(
            m: m, n: n, k: k, alpha: alpha, a + aOffset, lda: lda, b + bOffset, ldb: ldb, transposedB: transposedB,
            beta: beta, into: c + cOffset, ldc: ldc)
    }

    /// What does the products: "oneDNN", "OpenBLAS" or the portable loops.
    static var backend: String {
        switch library {
        case .oneDNN: "oneDNN"
        case .openBLAS: "OpenBLAS"
        case nil: "portable loops"
        }
    }

    /// Set to false to use the portable loops even where a library is installed (tests and the
    /// benchmark compare).
    nonisolated(unsafe) static var allowLibrary = true

    /// Set to false to pass over oneDNN (the benchmark compares it with OpenBLAS).
    nonisolated(unsafe) static var allowOneDNN = true

    // MARK: The libraries through dlopen

    private typealias SGEMM =
        @convention(c) (
            Int32, Int32, Int32, Int32, Int32, Int32, Float, UnsafePointer<Float>?, Int32,
            UnsafePointer<Float>?, Int32, Float, UnsafeMutablePointer<Float>?, Int32
        ) -> Void
    private typealias SetThreads = @convention(c) (Int32) -> Void
    private typealias DNNLSGEMM =
        @convention(c) (
            CChar, CChar, Int64, Int64, Int64, Float, UnsafePointer<Float>?, Int64, UnsafePointer<Float>?, Int64,
            Float, UnsafeMutablePointer<Float>?, Int64
        ) -> Int32
    private static let rowMajor: Int32 = 101, noTrans: Int32 = 111, trans: Int32 = 112

    /// Unchecked: C function pointers, set once when a library is loaded and never changed.
    private enum Library: @unchecked Sendable {
        /// oneDNN's product and its OpenMP runtime's thread count (per calling thread).
        case oneDNN(DNNLSGEMM, SetThreads)
        case openBLAS(SGEMM)
    }

    private static var library: Library? {
        guard allowLibrary else { return nil }
        return allowOneDNN ? oneDNN ?? openBLAS : openBLAS
    }

    private static let oneDNN: Library? = {
        guard let handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL), let symbol = dlsym(handle, "dnnl_sgemm"),
            let runtime = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL),
            let threads = dlsym(runtime, "omp_set_num_threads")
        else { return nil }
        return .oneDNN(unsafeBitCast(symbol, to: DNNLSGEMM.self), unsafeBitCast(threads, to: SetThreads.self))
    }()

    private static let openBLAS: Library? = {
        for name in ["libopenblas.so.0", "libopenblas.so"] {
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL), let symbol = dlsym(handle, "cblas_sgemm") else {
                continue
            }
            // One thread: the encoder's matrices are small (a text's tokens × 384), and
            // OpenBLAS's threads cost more than they save there (measured: README "The classifier").
            if let threads = dlsym(handle, "openblas_set_num_threads") {
                unsafeBitCast(threads, to: SetThreads.self)(1)
            }
            return .openBLAS(unsafeBitCast(symbol, to: SGEMM.self))
        }
        return nil
    }()

    // MARK: Portable loops

    private static func portable(
        m: Int, n: Int, k: Int, alpha: Float, _ a: UnsafePointer<Float>, lda: Int,
        _ b: UnsafePointer<Float>, ldb: Int, transposedB: Bool, beta: Float, into c: UnsafeMutablePointer<Float>,
        ldc: Int
    ) {
        for i in 0..<m {
            let row = a + i * lda, out = c + i * ldc
            if transposedB {
                for j in 0..<n { out[j] = alpha * dot(row, b + j * ldb, k) + (beta == 0 ? 0 : beta * out[j]) }
            } else {
                for j in 0..<n { out[j] = beta == 0 ? 0 : beta * out[j] }
                for p in 0..<k {
                    let factor = alpha * row[p], source = b + p * ldb
                    for j in 0..<n { out[j] += factor * source[j] }
                }
            }
        }
    }

    /// Eight lanes at a time, then the rest.
    @inline(__always)
    private static func dot(_ x: UnsafePointer<Float>, _ y: UnsafePointer<Float>, _ count: Int) -> Float {
        var sum = SIMD8<Float>()
        var i = 0
        while i + 8 <= count {
            sum +=
                UnsafeRawPointer(x + i).loadUnaligned(as: SIMD8<Float>.self)
                * UnsafeRawPointer(y + i).loadUnaligned(as: SIMD8<Float>.self)
            i += 8
        }
        var total = sum.sum()
        while i < count {
            total += x[i] * y[i]
            i += 1
        }
        return total
    }
}
