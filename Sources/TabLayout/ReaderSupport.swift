/// The keys of one dictionary being read, for refusing a repeated key in time linear in the number of keys:
/// while the dictionary has fewer than ``listLimit`` members a key is compared with theirs one by one (a tab has
/// a handful: no allocation, and cheaper than hashing), past that the keys move into a hash set.
struct KeySet {
    /// Members compared one by one before the set takes over.
    static let listLimit = 12

    private var set: Set<String>?
    /// Key comparisons and hash probes done so far: a deterministic measure of the work, for tests.
    private(set) var probes = 0

    /// Adds `key` to the keys of `members` (the dictionary read so far, which the caller then extends with it);
    /// false when one of them is `key` already.
    mutating func insert(_ key: String, into members: [SourceNode.Member]) -> Bool {
        if set == nil {
            if members.count < Self.listLimit {
                for member in members {
                    probes += 1
                    if member.key == key { return false }
                }
                return true
            }
            probes += members.count
            var keys = Set<String>(minimumCapacity: members.count * 2)
            for member in members { keys.insert(member.key) }
            set = keys
        }
        probes += 1
        return set!.insert(key).inserted
    }
}

/// Text formats' shared decoding steps.
enum TextDecoding {
    /// Moves `index` past spaces, tabs, CRs and LFs (whitespace in JSON and XML alike), counting each LF in `line`.
    static func skipWhitespace(_ bytes: [UInt8], _ index: inout Int, line: inout Int) {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0D: index += 1
            case 0x0A:
                line += 1
                index += 1
            default: return
            }
        }
    }

    /// UTF-16 text with a byte order mark (`FE FF` big-endian, `FF FE` little-endian) as UTF-8 bytes; nil when
    /// `bytes` has no UTF-16 byte order mark.
    /// - Throws: ``LayoutError`` for an odd byte count or invalid UTF-16 (a lone surrogate).
    static func utf8FromUTF16(_ bytes: [UInt8]) throws(LayoutError) -> [UInt8]? {
        guard bytes.count >= 2, bytes[0] == 0xFE && bytes[1] == 0xFF || bytes[0] == 0xFF && bytes[1] == 0xFE else {
            return nil
        }
        let bigEndian = bytes[0] == 0xFE
        guard bytes.count % 2 == 0 else { throw LayoutError(pointer: "", line: nil, "UTF-16 text with an odd number of bytes") }
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2 - 1)
        var i = 2
        while i + 1 < bytes.count {
            units.append(bigEndian ? UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) : UInt16(bytes[i + 1]) << 8 | UInt16(bytes[i]))
            i += 2
        }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(units.count + units.count / 2)
        var line = 1
        for result in UTF16.decode(units) {
            guard let scalar = result else {
                throw LayoutError(pointer: "", line: line, "the text is not valid UTF-16 (a lone surrogate)")
            }
            if scalar == "\n" { line += 1 }
            utf8.append(contentsOf: UTF8.encode(scalar)!)
        }
        return utf8
    }

    /// XML 1.0 §2.11: every CR LF pair and every CR not followed by LF becomes one LF, before anything else
    /// reads the text (a character reference `&#13;` still yields a CR, as it must).
    static func normalizingLineEnds(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.contains(0x0D) else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            if byte == 0x0D {
                out.append(0x0A)
                if i < bytes.count, bytes[i] == 0x0A { i += 1 }
            } else {
                out.append(byte)
            }
        }
        return out
    }
}

extension UTF16 {
    /// The scalars of `units`, nil for each lone surrogate.
    fileprivate static func decode(_ units: [UInt16]) -> [Unicode.Scalar?] {
        var result: [Unicode.Scalar?] = []
        result.reserveCapacity(units.count)
        var iterator = units.makeIterator()
        var decoder = UTF16()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): result.append(scalar)
            case .emptyInput: break loop
            case .error: result.append(nil)
            }
        }
        return result
    }
}

/// XML 1.0 §2.2's `Char`: what an XML document may contain at all, literally or as a character reference.
enum XMLCharacters {
    /// Whether `scalar` is a `Char` (tab, LF, CR, U+0020…U+D7FF, U+E000…U+FFFD, U+10000…U+10FFFF).
    static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D: true
        case 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }

    /// The first scalar of `text` that no XML 1.0 document can carry, if any (a byte scan rules most text out).
    static func firstForbidden(in text: String) -> Unicode.Scalar? {
        // Only C0 controls (a byte < 0x20) and U+FFFE/U+FFFF (EF BF BE/BF) can be forbidden in valid UTF-8.
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0xEF }) else { return nil }
        return text.unicodeScalars.first { !isAllowed($0) }
    }

    /// `U+0001`-style name of a scalar, for messages.
    static func name(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}

/// Integers a source can hold: a layout keeps 64-bit signed integers exactly, and refuses anything wider
/// rather than wrap it or round it.
enum IntegerRange {
    static let message = "is outside the integers a layout keeps exactly (-9223372036854775808…9223372036854775807)"
}

/// A position in a document kept as tokens, whose pointer is built for a diagnostic within
/// ``DiagnosticLimits/pointerBytes``: only the tokens at its two ends are ever escaped and joined, so a pointer
/// through 63 levels of one long shared key costs the length of two keys, not 63.
struct BoundedPointerPath {
    private enum Token {
        case key(String)
        case index(Int)

        var text: String {
            switch self {
            case .key(let key): JSONPointer.appending("", key)
            case .index(let index): JSONPointer.appending("", index)
            }
        }
    }

    private var tokens: [Token] = []

    init() { tokens.reserveCapacity(16) }

    mutating func push(_ key: String) { tokens.append(.key(key)) }
    mutating func push(_ index: Int) { tokens.append(.index(index)) }
    mutating func pop() { tokens.removeLast() }

    /// The JSON Pointer, shortened in the middle past ``DiagnosticLimits/pointerBytes``.
    var pointer: String {
        let limit = DiagnosticLimits.pointerBytes
        var head = ""
        var used = 0
        while used < tokens.count, head.utf8.count <= limit {
            head += tokens[used].text
            used += 1
        }
        guard used < tokens.count else { return DiagnosticLimits.shortened(head, to: limit) }
        // The tail, from the last token back, never reaching into the head.
        var tail: [String] = []
        var tailBytes = 0
        var next = tokens.count - 1
        while next >= used, tailBytes <= limit {
            tail.append(tokens[next].text)
            tailBytes += tail[tail.count - 1].utf8.count
            next -= 1
        }
        // Tokens left out between the two: an ellipsis stands for them (shortened adds it when lengths call for it).
        let joined = head + (next >= used ? "…" : "") + tail.reversed().joined()
        return DiagnosticLimits.shortened(joined, to: limit)
    }
}
