import Foundation
import NewsPushModel

/// Matrix products for the sentence encoder: OpenBLAS's `cblas_sgemm` when the system has it
/// (Debian: `libopenblas0`; found with `dlopen` at run time, so newspush builds and runs
/// without it), else portable loops that give the same numbers up to rounding, several times
/// slower. This is the only file that talks to a BLAS.
enum BLAS {
    /// `C[m×n] = alpha · A[m×k] · B`, B being `[n×k]` (`transposedB`, a weight matrix stored
    /// one output per row) or `[k×n]`; leading dimensions as in CBLAS's row-major calls.
    static func multiply(
        m: Int, n: Int, k: Int, alpha: Float = 1,
        _ a: UnsafePointer<Float>, lda: Int, _ b: UnsafePointer<Float>, ldb: Int, transposedB: Bool,
        into c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        if let sgemm = library?.sgemm {
            sgemm(
                rowMajor, noTrans, transposedB ? trans : noTrans, Int32(m), Int32(n), Int32(k), alpha,
                a, Int32(lda), b, Int32(ldb), 0, c, Int32(ldc))
        } else {
            portable(
                m: m, n: n, k: k, alpha: alpha, a, lda: lda, b, ldb: ldb, transposedB: transposedB, into: c, ldc: ldc)
        }
    }

    /// `multiply` on buffers, each from an offset (empty buffers: nothing to multiply).
    static func multiply(
        m: Int, n: Int, k: Int, alpha: Float = 1,
        _ a: UnsafeBufferPointer<Float>, aOffset: Int = 0, lda: Int,
        _ b: UnsafeBufferPointer<Float>, bOffset: Int = 0, ldb: Int, transposedB: Bool,
        into c: UnsafeMutableBufferPointer<Float>, cOffset: Int = 0, ldc: Int
    ) {
        guard let a = a.baseAddress, let b = b.baseAddress, let c = c.baseAddress else { return }
        multiply(
            m: m, n: n, k: k, alpha: alpha, a + aOffset, lda: lda, b + bOffset, ldb: ldb, transposedB: transposedB,
            into: c + cOffset, ldc: ldc)
    }

    /// What does the products: "OpenBLAS" or the portable loops.
    static var backend: String { library == nil ? "portable loops" : "OpenBLAS" }

    /// Set to false to use the portable loops even where OpenBLAS is installed (tests and the
    /// benchmark compare).
    nonisolated(unsafe) static var allowLibrary = true

    // MARK: OpenBLAS through dlopen

    private typealias SGEMM =
        @convention(c) (
            Int32, Int32, Int32, Int32, Int32, Int32, Float, UnsafePointer<Float>?, Int32,
            UnsafePointer<Float>?, Int32, Float, UnsafeMutablePointer<Float>?, Int32
        ) -> Void
    private typealias SetThreads = @convention(c) (Int32) -> Void
    private static let rowMajor: Int32 = 101, noTrans: Int32 = 111, trans: Int32 = 112

    /// Unchecked: a C function pointer, set once when the library is loaded and never changed.
    private struct Library: @unchecked Sendable {
        let sgemm: SGEMM
    }

    private static var library: Library? { allowLibrary ? loaded : nil }

    private static let loaded: Library? = {
        for name in ["libopenblas.so.0", "libopenblas.so"] {
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL), let symbol = dlsym(handle, "cblas_sgemm") else {
                continue
            }
            // One thread: the encoder's matrices are small (a text's tokens × 384), and
            // OpenBLAS's threads cost more than they save there (measured: README "The classifier").
            if let threads = dlsym(handle, "openblas_set_num_threads") {
                unsafeBitCast(threads, to: SetThreads.self)(1)
            }
            return Library(sgemm: unsafeBitCast(symbol, to: SGEMM.self))
        }
        return nil
    }()

    // MARK: Portable loops

    private static func portable(
        m: Int, n: Int, k: Int, alpha: Float, _ a: UnsafePointer<Float>, lda: Int,
        _ b: UnsafePointer<Float>, ldb: Int, transposedB: Bool, into c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        for i in 0..<m {
            let row = a + i * lda, out = c + i * ldc
            if transposedB {
                for j in 0..<n { out[j] = alpha * dot(row, b + j * ldb, k) }
            } else {
                for j in 0..<n { out[j] = 0 }
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
