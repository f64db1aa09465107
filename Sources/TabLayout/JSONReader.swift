/// Reads JSON (RFC 8259) into a ``SourceNode`` tree with the line of every value. The depth limit is
/// checked before each descent, duplicate keys are refused, and every string must be valid UTF-8.
public struct JSONReader {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private let maxDepth: Int

    /// - Throws: ``LayoutError`` with the pointer and line where reading stopped.
    public static func read(_ bytes: [UInt8], maxDepth: Int = LayoutLimits.depth) throws(LayoutError) -> SourceNode {
        var reader = JSONReader(bytes: bytes, maxDepth: maxDepth)
        var start = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        reader.index = start
        reader.skipWhitespace()
        let node = try reader.value(depth: 0)
        reader.skipWhitespace()
        if reader.index < bytes.count {
            throw reader.failure("unexpected content after the JSON value")
        }
        return node
    }

    private init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// An error at the current value; each enclosing object member and array element prefixes its token to
    /// the pointer as the error passes through it (so the happy path keeps no path at all).
    private func failure(_ message: String) -> LayoutError {
        LayoutError(pointer: "", line: line, "JSON: " + message)
    }

    private mutating func skipWhitespace() {
        TextDecoding.skipWhitespace(bytes, &index, line: &line)
    }

    private mutating func value(depth: Int) throws(LayoutError) -> SourceNode {
        guard index < bytes.count else { throw failure("unexpected end of input, a value was expected") }
        let startLine = line
        switch bytes[index] {
        case UInt8(ascii: "{"):
            guard depth < maxDepth else { throw failure("nesting deeper than \(maxDepth) levels") }
            return SourceNode(.dictionary(try object(depth: depth + 1)), line: startLine)
        case UInt8(ascii: "["):
            guard depth < maxDepth else { throw failure("nesting deeper than \(maxDepth) levels") }
            return SourceNode(.array(try array(depth: depth + 1)), line: startLine)
        case UInt8(ascii: "\""):
            return SourceNode(.string(try string()), line: startLine)
        case UInt8(ascii: "t"):
            try literal("true")
            return SourceNode(.bool(true), line: startLine)
        case UInt8(ascii: "f"):
            try literal("false")
            return SourceNode(.bool(false), line: startLine)
        case UInt8(ascii: "n"):
            try literal("null")
            return SourceNode(.null, line: startLine)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return SourceNode(try number(), line: startLine)
        default:
            throw failure("unexpected character '\(printable(bytes[index]))', a value was expected")
        }
    }

    private mutating func literal(_ word: StaticString) throws(LayoutError) {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard index + expected.count <= bytes.count, bytes[index..<index + expected.count].elementsEqual(expected)
        else { throw failure("invalid literal, expected '\(word)'") }
        index += expected.count
    }

    private mutating func object(depth: Int) throws(LayoutError) -> [SourceNode.Member] {
        index += 1
        var members: [SourceNode.Member] = []
        var keys = KeySet()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return members
        }
        // A tab's keys, without growing the array four times on the way (an empty object allocates nothing).
        members.reserveCapacity(8)
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw failure("an object key (a string in double quotes) was expected")
            }
            let key = try string()
            do throws(LayoutError) {
                guard keys.insert(key, into: members) else { throw failure("duplicate key '\(key)'") }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw failure("':' was expected after the key")
                }
                index += 1
                skipWhitespace()
                members.append(SourceNode.Member(key: key, node: try value(depth: depth)))
                skipWhitespace()
                guard index < bytes.count else { throw failure("unexpected end of input in an object") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return members
                }
                throw failure("',' or '}' was expected after a member")
            } catch {
                throw error.within(key)
            }
        }
    }

    private mutating func array(depth: Int) throws(LayoutError) -> [SourceNode] {
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return []
        }
        // The first element decides the allocation: a one-element array (64 of them nested in each other,
        // thousands of times over, is the costliest 1 MiB) gets room for one; a longer one room for a few at once.
        var elements: [SourceNode] = []
        while true {
            skipWhitespace()
            let position = elements.count
            do throws(LayoutError) {
                let element = try value(depth: depth)
                skipWhitespace()
                guard index < bytes.count else { throw failure("unexpected end of input in an array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    if position == 0 { elements.reserveCapacity(4) }
                    elements.append(element)
                    continue
                }
                if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    if position == 0 { return [element] }
                    elements.append(element)
                    return elements
                }
                throw failure("',' or ']' was expected after an element")
            } catch {
                throw error.within(position)
            }
        }
    }

    private mutating func string() throws(LayoutError) -> String {
        index += 1
        // The common case: no escape before the closing quote, so the text is the bytes in between.
        let start = index
        var union: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let end = index
                index += 1
                return try bytes.withUnsafeBufferPointer { buffer throws(LayoutError) in
                    let text = UnsafeBufferPointer(rebasing: buffer[start..<end])
                    // ASCII needs no validation; anything else must be valid UTF-8.
                    if union < 0x80 { return String(decoding: text, as: UTF8.self) }
                    guard let validated = String(validating: text, as: UTF8.self) else { throw failure("a string is not valid UTF-8") }
                    return validated
                }
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            union |= byte
            index += 1
        }
        // An escape or an error: decode byte by byte from the start.
        index = start
        var utf8: [UInt8] = []
        while true {
            guard index < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw failure("a string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw failure("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw failure("a high surrogate \\u escape without its low surrogate") }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw failure("invalid surrogate pair") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw failure("a lone low surrogate \\u escape")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid \\u escape") }
                    utf8.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    throw failure("invalid escape '\\\(printable(escape))'")
                }
            case 0x00..<0x20:
                throw failure("a control character inside a string must be escaped")
            default:
                utf8.append(byte)
            }
        }
    }

    private mutating func hex4() throws(LayoutError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            guard let digit = hexDigit(byte) else { throw failure("a \\u escape needs four hex digits") }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }

    private mutating func number() throws(LayoutError) -> SourceNode.Value {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger {
            guard let integer = Int64(text) else { throw failure("the integer \(text) " + IntegerRange.message) }
            return .integer(integer)
        }
        guard let real = Double(text), real.isFinite else { throw failure("number out of range") }
        return .real(real)
    }
}

func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

func hexDigit(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: byte - 0x30
    case 0x41...0x46: byte - 0x41 + 10
    case 0x61...0x66: byte - 0x61 + 10
    default: nil
    }
}

func printable(_ byte: UInt8) -> String {
    (0x21...0x7E).contains(byte) ? String(UnicodeScalar(byte)) : "0x" + String(byte, radix: 16, uppercase: true)
}
