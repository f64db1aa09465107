import FuzzSupport
import TabLayout

let fuzz: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32 = { data, size in
    guard let data else { return 0 }
    _ = try? LayoutSource.parse(Array(UnsafeBufferPointer(start: data, count: size)), format: .xmlPlist)
    return 0
}

// SwiftPM gives an executable its own `main`; libFuzzer's driver runs from it (see Fuzz/README.md).
exit(runFuzzer(fuzz))
