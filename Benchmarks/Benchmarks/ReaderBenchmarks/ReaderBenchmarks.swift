import Benchmark
import TabLayout

// The readers on the worst inputs the 1 MiB limit allows (the target: "a 1 MiB body of any shape parses
// in ≤ 50 ms"), and on the dictionaries of 10,000 / 20,000 / 40,000 keys once measured (0.19 s, 0.71 s,
// 2.7 s before the duplicate-key check became linear).
//   swift package --package-path Benchmarks benchmark --target ReaderBenchmarks

/// Short distinct keys: a, b, …, Z, aa, ab, …
func shortKey(_ index: Int) -> String {
    let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".unicodeScalars)
    var key = ""
    var i = index + 1
    while i > 0 {
        i -= 1
        key.unicodeScalars.append(letters[i % letters.count])
        i /= letters.count
    }
    return key
}

/// As many `piece(i)` as fit `LayoutLimits.sourceBytes` between `open` and `close` (joined by `separator`).
func fill(_ open: String, _ close: String, separator: String = "", _ piece: (Int) -> String) -> [UInt8] {
    var out = Array(open.utf8)
    let limit = LayoutLimits.sourceBytes - close.utf8.count
    var i = 0
    while true {
        let next = Array(((i == 0 ? "" : separator) + piece(i)).utf8)
        if out.count + next.count > limit { break }
        out += next
        i += 1
    }
    return out + Array(close.utf8)
}

/// A binary plist dictionary of `keys` → true (3-byte references, 4-byte offsets).
func binaryPlist(keys: [String]) -> [UInt8] {
    func bigEndian(_ value: Int, _ size: Int) -> [UInt8] { (0..<size).reversed().map { UInt8(value >> (8 * $0) & 0xFF) } }
    func length(_ marker: UInt8, _ count: Int) -> [UInt8] {
        count < 15 ? [marker | UInt8(count)] : [marker | 0x0F, 0x12] + bigEndian(count, 4)
    }
    var bytes = Array("bplist00".utf8)
    var offsets = [bytes.count]
    bytes += length(0xD0, keys.count)
    for i in keys.indices { bytes += bigEndian(2 + i, 3) }
    for _ in keys.indices { bytes += bigEndian(1, 3) }
    offsets.append(bytes.count)
    bytes.append(0x09)
    for key in keys {
        offsets.append(bytes.count)
        bytes += length(0x50, key.utf8.count) + Array(key.utf8)
    }
    let table = bytes.count
    for offset in offsets { bytes += bigEndian(offset, 4) }
    bytes += [0, 0, 0, 0, 0, 0, 4, 3] + bigEndian(offsets.count, 8) + bigEndian(0, 8) + bigEndian(table, 8)
    return bytes
}

/// The most binary-plist keys that fit 1 MiB (about 17 bytes each).
let binaryKeys: [String] = {
    var count = 40_000
    while binaryPlist(keys: (0..<(count + 1_000)).map(shortKey)).count <= LayoutLimits.sourceBytes { count += 1_000 }
    return (0..<count).map(shortKey)
}()

let nested63 = String(repeating: "[", count: 63) + String(repeating: "]", count: 63)

/// Each worst case, by name: many tiny values are what costs most per byte.
let worstCases: [(name: String, bytes: [UInt8], strings: Bool)] = [
    ("JSON object of short keys", fill("{", "}", separator: ",") { #""\#(shortKey($0))":0"# }, false),
    ("JSON array of empty objects", fill("[", "]", separator: ",") { _ in "{}" }, false),
    ("JSON array of zeros", fill("[", "]", separator: ",") { _ in "0" }, false),
    ("JSON string of \\u escapes", fill(#"[""#, #""]"#) { _ in #"\u00e9"# }, false),
    ("JSON arrays nested 64 deep, repeated", fill("[", "]", separator: ",") { _ in nested63 }, false),
    ("XML plist dict of short keys", fill("<plist><dict>", "</dict></plist>") { "<key>\(shortKey($0))</key><true/>" }, false),
    ("XML plist array of <true/>", fill("<plist><array>", "</array></plist>") { _ in "<true/>" }, false),
    ("XML plist string of character references", fill("<plist><string>", "</string></plist>") { _ in "&#233;" }, false),
    ("Binary plist dict of short keys", binaryPlist(keys: binaryKeys), false),
    (".strings table of short keys", fill("", "") { #""\#(shortKey($0))"="";"# }, true),
    ("JSON strings table of short keys", fill("{", "}", separator: ",") { #""\#(shortKey($0))":"""# }, true),
]

/// Dictionaries of `count` keys `key0000000…` → `v…`, as JSON and as a binary plist (the issue's measurement).
func keyed(_ count: Int) -> (json: [UInt8], binary: [UInt8]) {
    let keys = (0..<count).map { "key" + String(repeating: "0", count: 7 - String($0).count) + String($0) }
    return (Array(("{" + keys.map { #""\#($0)":true"# }.joined(separator: ",") + "}").utf8), binaryPlist(keys: keys))
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident], maxDuration: .seconds(2), maxIterations: 50)

    for worst in worstCases {
        precondition(worst.bytes.count <= LayoutLimits.sourceBytes, worst.name)
        Benchmark("1 MiB worst case: \(worst.name) (\(worst.bytes.count) bytes)") { benchmark in
            for _ in benchmark.scaledIterations {
                if worst.strings {
                    blackHole(try StringsTable.read(worst.bytes))
                } else {
                    blackHole(try LayoutSource.readTree(worst.bytes))
                }
            }
        }
    }
    for count in [10_000, 20_000, 40_000] {
        let sources = keyed(count)
        Benchmark("JSON dictionary of \(count) keys") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try JSONReader.read(sources.json)) }
        }
        Benchmark("Binary plist dictionary of \(count) keys") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try BinaryPlistReader.read(sources.binary)) }
        }
    }
}
