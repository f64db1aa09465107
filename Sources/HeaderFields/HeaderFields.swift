/// One field line's value as the server received it: the bytes after the colon, leading and trailing whitespace
/// possibly included. Only valid for the call it is handed to.
public typealias FieldLine = UnsafeBufferPointer<UInt8>

/// All the lines of one header field, in the order received: the function calls `yield` once per line (never for a
/// field that is absent). RFC 9110 §5.3: the lines are one comma-separated list, as if joined with ", ".
///
/// A decision may call it more than once (``DecisionCache`` does: once to hash, once to compare); each call must
/// yield the same lines.
public typealias FieldLines = (_ yield: (FieldLine) -> Void) -> Void

// MARK: - Bytes

extension UInt8 {
    /// Optional whitespace of RFC 9110 §5.6.3: space or horizontal tab.
    var isOWS: Bool { self == 0x20 || self == 0x09 }

    /// The whitespace `LocaleMatcher` trimmed: space, tab, line feed, carriage return.
    var isLanguageTrimmed: Bool { self == 0x20 || self == 0x09 || self == 0x0A || self == 0x0D }

    /// `A`–`Z` folded to `a`–`z`; every other byte as it is.
    var asciiLowercased: UInt8 { self >= 0x41 && self <= 0x5A ? self | 0x20 : self }

    var isDigit: Bool { self >= 0x30 && self <= 0x39 }
}

/// A half-open range of byte positions in one ``FieldLine``.
struct ByteRange {
    var start: Int
    var end: Int

    var count: Int { end - start }
    var isEmpty: Bool { start >= end }

    /// The range without leading and trailing bytes for which `trimmed` holds.
    func trimming(_ line: FieldLine, _ trimmed: (UInt8) -> Bool) -> ByteRange {
        var start = self.start
        var end = self.end
        while start < end, trimmed(line[start]) { start += 1 }
        while end > start, trimmed(line[end - 1]) { end -= 1 }
        return ByteRange(start: start, end: end)
    }
}

extension FieldLine {
    /// Calls `body` with each stretch between `separator` bytes in `range` (empty stretches included).
    @inline(__always)
    func forEachPart(of range: ByteRange, separatedBy separator: UInt8, _ body: (ByteRange) -> Void) {
        var start = range.start
        var index = range.start
        while index < range.end {
            if self[index] == separator {
                body(ByteRange(start: start, end: index))
                start = index + 1
            }
            index += 1
        }
        body(ByteRange(start: start, end: range.end))
    }

    /// Whether the bytes of `range` begin with `first` then `second`.
    @inline(__always)
    func hasPrefix(_ first: UInt8, _ second: UInt8, in range: ByteRange) -> Bool {
        range.count >= 2 && self[range.start] == first && self[range.start + 1] == second
    }

    /// Whether the bytes of `range` equal `other`'s bytes, `self`'s folded to lower case first when `foldingCase`.
    @inline(__always)
    func equals(_ range: ByteRange, _ other: UnsafeBufferPointer<UInt8>, foldingCase: Bool) -> Bool {
        guard range.count == other.count else { return false }
        var offset = 0
        while offset < other.count {
            let byte = self[range.start + offset]
            if (foldingCase ? byte.asciiLowercased : byte) != other[offset] { return false }
            offset += 1
        }
        return true
    }

    var whole: ByteRange { ByteRange(start: 0, end: count) }
}

// MARK: - Quality values

/// Quality values as the old Foundation-based code read them: `Double(text) ?? 0`, exactly (same answers for every
/// input). Plain decimals of up to 15 digits, what clients send, are read here without allocating; anything else
/// (exponents, `inf`, hex, signs, more digits) is handed to the standard library's `Double(_:)`, which may allocate
/// for texts over 15 bytes.
enum DoubleQuality {
    static func parse(_ line: FieldLine, _ range: ByteRange, lowercasing: Bool) -> Double {
        if let value = fastParse(line, range) { return value }
        return slowParse(line, range, lowercasing: lowercasing)
    }

    /// `digits ["." digits]` with at most 15 digits in all: the mantissa and the power of ten are exact, so one
    /// IEEE division rounds exactly as a correct decimal-to-double conversion does.
    private static func fastParse(_ line: FieldLine, _ range: ByteRange) -> Double? {
        var mantissa: UInt64 = 0
        var digits = 0
        var fractionDigits = 0
        var index = range.start
        var seenPoint = false
        var digitsBeforePoint = 0
        while index < range.end {
            let byte = line[index]
            if byte.isDigit {
                mantissa = mantissa &* 10 &+ UInt64(byte &- 0x30)
                digits += 1
                if seenPoint { fractionDigits += 1 } else { digitsBeforePoint += 1 }
                if digits > 15 { return nil }
            } else if byte == UInt8(ascii: "."), !seenPoint {
                seenPoint = true
            } else {
                return nil
            }
            index += 1
        }
        guard digitsBeforePoint > 0, !seenPoint || fractionDigits > 0 else { return nil }
        return Double(mantissa) / powerOfTen(fractionDigits)
    }

    /// 10^exponent for 0...15: every product on the way is exact.
    private static func powerOfTen(_ exponent: Int) -> Double {
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    private static func slowParse(_ line: FieldLine, _ range: ByteRange, lowercasing: Bool) -> Double {
        let text = String(unsafeUninitializedCapacity: range.count) { buffer in
            for offset in 0..<range.count {
                let byte = line[range.start + offset]
                buffer[offset] = lowercasing ? byte.asciiLowercased : byte
            }
            return range.count
        }
        return Double(text) ?? 0
    }
}

/// RFC 9110 §12.4.2 weights in thousandths (`q=0.8` is 800), read leniently: `digits ["." digits]`, digits past the
/// third decimal ignored, values above 1 taken as 1; anything else is 0 (not acceptable).
enum Thousandths {
    static func parse(_ line: FieldLine, _ range: ByteRange) -> Int {
        var index = range.start
        var whole = 0
        var sawDigit = false
        while index < range.end, line[index].isDigit {
            whole = min(whole * 10 + Int(line[index] - 0x30), 10)
            sawDigit = true
            index += 1
        }
        var fraction = 0
        var scale = 100
        if index < range.end, line[index] == UInt8(ascii: ".") {
            index += 1
            while index < range.end, line[index].isDigit {
                fraction += Int(line[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
        }
        guard sawDigit, index == range.end else { return 0 }
        return min(whole * 1000 + fraction, 1000)
    }
}
