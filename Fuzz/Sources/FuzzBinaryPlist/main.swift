import FuzzSupport
import TabLayout

let fuzz: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32 = { data, size in
    guard let data else { return 0 }
    // Every input is read as a binary plist: the magic is put in front when it is missing.
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if !BinaryPlistReader.isBinaryPlist(bytes) { bytes = Array("bplist00".utf8) + bytes }
    _ = try? BinaryPlistReader.read(bytes)
    return 0
}

// SwiftPM gives an executable its own `main`; libFuzzer's driver runs from it (see Fuzz/README.md).
exit(runFuzzer(fuzz))
