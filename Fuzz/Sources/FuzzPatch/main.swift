import FuzzSupport
import TabLayout

/// Input: a JSON document, a NUL byte, a JSON Patch (or a Merge Patch when the patch is an object).
let fuzz: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32 = { data, size in
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let split = bytes.firstIndex(of: 0) ?? bytes.count
    guard let document = try? JSONReader.read(Array(bytes[..<split])),
        let patch = try? JSONReader.read(split < bytes.count ? Array(bytes[(split + 1)...]) : [])
    else { return 0 }
    if case .dictionary = patch.value {
        _ = JSONPatch.mergePatch(document, patch).jsonText()
    } else {
        _ = (try? JSONPatch.apply(patch, to: document))?.jsonText()
    }
    return 0
}

// SwiftPM gives an executable its own `main`; libFuzzer's driver runs from it (see Fuzz/README.md).
exit(runFuzzer(fuzz))
