import Foundation
import NewsPushFuzzing

// `newspush-fuzz TARGET [FILE…]` replays inputs (each file once; a crash names the file).
// Built with `scripts/fuzz.sh` (-sanitize=fuzzer,address -DFUZZING), `newspush-fuzz TARGET
// [libFuzzer options] [CORPUS…]` is libFuzzer. SwiftPM renames an executable's `main`, so
// libFuzzer's own main cannot be used: its driver is called from ours instead.

/// The target libFuzzer's callback runs (a C callback takes no context).
nonisolated(unsafe) private var selected = FuzzTarget.feed

/// libFuzzer's callback: one input for the target chosen by `NEWSPUSH_FUZZ_TARGET`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selected.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if FUZZING
    // swift-format-ignore: AlwaysUseLowerCamelCase
    // (libFuzzer's entry point, by its C name.)
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt
#endif

@main
struct FuzzMain {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2, let target = FuzzTarget(rawValue: arguments[1]) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            FileHandle.standardError.write(Data("usage: newspush-fuzz \(names) [FILE…]\n".utf8))
            exit(64)
        }
        selected = target
        #if FUZZING
            // libFuzzer reads its own options: drop the target name from argv.
            var argv = CommandLine.unsafeArgv
            argv[1] = argv[0]
            var rest = argv + 1
            var argc = CommandLine.argc - 1
            exit(LLVMFuzzerRunDriver(&argc, &rest, fuzzOneInput))
        #else
            for path in arguments.dropFirst(2) {
                guard let data = FileManager.default.contents(atPath: path) else {
                    FileHandle.standardError.write(Data("newspush-fuzz: cannot read \(path)\n".utf8))
                    exit(66)
                }
                print("\(target.rawValue): \(path)")
                target.run(data)
            }
        #endif
    }
}
