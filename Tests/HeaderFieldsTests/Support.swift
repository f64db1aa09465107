import HeaderFields

/// Calls `body` with each string as one field line (bytes that live for the call).
func withLines<R>(_ lines: [String], _ body: ([FieldLine]) throws -> R) rethrows -> R {
    let buffers = lines.map { line -> UnsafeMutableBufferPointer<UInt8> in
        let bytes = Array(line.utf8)
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        _ = buffer.initialize(from: bytes)
        return UnsafeMutableBufferPointer(rebasing: buffer[0..<bytes.count])
    }
    defer { for buffer in buffers { UnsafeMutableBufferPointer(start: buffer.baseAddress, count: 1).deallocate() } }
    return try body(buffers.map { UnsafeBufferPointer($0) })
}

/// A small, seeded generator (SplitMix64): the same seed gives the same inputs on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension RandomNumberGenerator {
    mutating func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &self)] }
    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &self) < percent }
}

/// Splits a field value at some of its commas into 1 to 3 lines, as a proxy or a client's `addHeader` would, and
/// sometimes adds a blank line. Returns the lines and the value RFC 9110 §5.3 combines them into (non-blank lines
/// joined with ", "), which is what the old code is asked.
func randomLines(for value: String, using generator: inout some RandomNumberGenerator) -> (lines: [String], combined: String) {
    var lines: [String] = []
    var current = ""
    for character in value {
        if character == ",", lines.count < 2, generator.chance(25) {
            lines.append(current)
            current = ""
        } else {
            current.append(character)
        }
    }
    lines.append(current)
    if generator.chance(5) { lines.insert(generator.pick(["", " ", "\t "]), at: Int.random(in: 0...lines.count, using: &generator)) }
    let isBlank: (String) -> Bool = { $0.allSatisfy { $0 == " " || $0 == "\t" } }
    return (lines, lines.filter { !isBlank($0) }.joined(separator: ", "))
}
