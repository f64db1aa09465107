/// Reads an XML property list (with or without the `<?xml?>` line and DOCTYPE) into a ``SourceNode``
/// tree with the line of every value. A DOCTYPE with an internal subset that declares entities is refused:
/// no entity is ever expanded but the five predefined ones and character references. As XML 1.0 requires,
/// UTF-16 with a byte order mark is read too, line ends are normalised before anything else (§2.11: CR LF and
/// CR become LF), and a character that no XML document can hold (§2.2), literal or referenced, is an error.
public struct XMLPlistReader {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private let maxDepth: Int

    /// - Throws: ``LayoutError`` with the pointer and line where reading stopped.
    public static func read(_ bytes: [UInt8], maxDepth: Int = LayoutLimits.depth) throws(LayoutError) -> SourceNode {
        let text = try TextDecoding.utf8FromUTF16(bytes) ?? bytes
        var reader = XMLPlistReader(bytes: TextDecoding.normalizingLineEnds(text), maxDepth: maxDepth)
        if reader.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.index = 3 }
        try reader.prolog()
        guard let root = try reader.nextTag() else {
            throw reader.failure("", "no root element")
        }
        let node: SourceNode
        if root.name == "plist" && !root.isEmpty {
            guard let first = try reader.nextTag() else {
                throw reader.failure("", "<plist> holds no value")
            }
            node = try reader.value(first, depth: 0)
            try reader.expectClose("plist")
        } else {
            node = try reader.value(root, depth: 0)
        }
        try reader.skipMisc()
        if reader.index < reader.bytes.count { throw reader.failure("", "unexpected content after the root element") }
        return node
    }

    private init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    private struct Tag {
        var name: String
        var isClosing: Bool
        var isEmpty: Bool
        var line: Int
    }

    /// An error at the current value; each enclosing dictionary member and array element prefixes its token to
    /// the pointer as the error passes through it (no pointer is built while reading goes well).
    private func failure(_ pointer: String, _ message: String, line: Int? = nil) -> LayoutError {
        LayoutError(pointer: pointer, line: line ?? self.line, "XML plist: " + message)
    }

    private mutating func advance(_ count: Int = 1) {
        for _ in 0..<count where index < bytes.count {
            if bytes[index] == 0x0A { line += 1 }
            index += 1
        }
    }

    private func starts(with text: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        return index + expected.count <= bytes.count && bytes[index..<index + expected.count].elementsEqual(expected)
    }

    /// Moves past `terminator`; false when the input ends first.
    private mutating func skip(past terminator: StaticString) -> Bool {
        while index < bytes.count {
            if starts(with: terminator) {
                advance(terminator.utf8CodeUnitCount)
                return true
            }
            advance()
        }
        return false
    }

    private mutating func skipWhitespace() {
        TextDecoding.skipWhitespace(bytes, &index, line: &line)
    }

    /// Whitespace, comments and processing instructions between elements.
    private mutating func skipMisc() throws(LayoutError) {
        while true {
            skipWhitespace()
            if starts(with: "<!--") {
                guard skip(past: "-->") else { throw failure("", "unterminated comment") }
            } else if starts(with: "<?") {
                guard skip(past: "?>") else { throw failure("", "unterminated processing instruction") }
            } else {
                return
            }
        }
    }

    /// The XML declaration, comments and the DOCTYPE before the root element.
    private mutating func prolog() throws(LayoutError) {
        while true {
            try skipMisc()
            guard starts(with: "<!DOCTYPE") else { return }
            let doctypeLine = line
            var depth = 0
            var subset: [UInt8] = []
            advance(9)
            while true {
                guard index < bytes.count else { throw failure("", "unterminated DOCTYPE", line: doctypeLine) }
                let byte = bytes[index]
                if byte == UInt8(ascii: "[") { depth += 1 }
                if byte == UInt8(ascii: "]") { depth -= 1 }
                if depth > 0 { subset.append(byte) }
                advance()
                if byte == UInt8(ascii: ">") && depth <= 0 { break }
            }
            if subset.count > 0 {
                let text = String(decoding: subset, as: UTF8.self)
                if text.contains("<!ENTITY") {
                    throw failure(
                        "", "the DOCTYPE declares entities: refused (no entity expansion, ever)",
                        line: doctypeLine)
                }
                throw failure("", "a DOCTYPE with an internal subset is not accepted", line: doctypeLine)
            }
        }
    }

    /// The next start or end tag after whitespace and comments; nil at the end of input.
    private mutating func nextTag() throws(LayoutError) -> Tag? {
        try skipMisc()
        guard index < bytes.count else { return nil }
        guard bytes[index] == UInt8(ascii: "<") else {
            throw failure("", "text where an element was expected")
        }
        let tagLine = line
        advance()
        var isClosing = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "/") {
            isClosing = true
            advance()
        }
        var name: [UInt8] = []
        while index < bytes.count, isNameByte(bytes[index]) {
            name.append(bytes[index])
            advance()
        }
        guard !name.isEmpty else { throw failure("", "malformed tag") }
        // Attributes are skipped (only <plist version="1.0"> has any), quoted values included.
        var quote: UInt8? = nil
        var isEmpty = false
        while true {
            guard index < bytes.count else { throw failure("", "unterminated tag <\(String(decoding: name, as: UTF8.self))>") }
            let byte = bytes[index]
            advance()
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "/") {
                isEmpty = true
            } else if byte == UInt8(ascii: ">") {
                break
            } else {
                isEmpty = false
            }
        }
        return Tag(name: String(decoding: name, as: UTF8.self), isClosing: isClosing, isEmpty: isEmpty, line: tagLine)
    }

    private func isNameByte(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
            || byte == UInt8(ascii: ".")
    }

    private mutating func expectClose(_ name: String) throws(LayoutError) {
        guard let tag = try nextTag(), tag.isClosing, tag.name == name else {
            throw failure("", "</\(name)> was expected")
        }
    }

    /// Character data up to the next `<` that is not a comment or CDATA section, with references decoded.
    private mutating func text() throws(LayoutError) -> String {
        var utf8: [UInt8] = []
        while true {
            // A run of plain character data, copied at once.
            let runStart = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "<") || byte == UInt8(ascii: "&") { break }
                if byte < 0x20 {
                    if byte == 0x0A {
                        line += 1
                    } else if byte != 0x09 {
                        throw failure("", "the control character 0x\(String(byte, radix: 16, uppercase: true)) cannot appear in XML")
                    }
                }
                index += 1
            }
            utf8.append(contentsOf: bytes[runStart..<index])
            guard index < bytes.count else { throw failure("", "unterminated element") }
            if starts(with: "<![CDATA[") {
                advance(9)
                let start = index
                while !starts(with: "]]>") {
                    guard index < bytes.count else { throw failure("", "unterminated CDATA section") }
                    let byte = bytes[index]
                    if byte < 0x20, byte != 0x09, byte != 0x0A {
                        throw failure("", "the control character 0x\(String(byte, radix: 16, uppercase: true)) cannot appear in XML")
                    }
                    advance()
                }
                utf8.append(contentsOf: bytes[start..<index])
                advance(3)
                continue
            }
            if starts(with: "<!--") {
                guard skip(past: "-->") else { throw failure("", "unterminated comment") }
                continue
            }
            if bytes[index] == UInt8(ascii: "<") { break }
            utf8.append(contentsOf: try reference().utf8)
        }
        guard let decoded = String(validating: utf8, as: UTF8.self) else {
            throw failure("", "text is not valid UTF-8")
        }
        if let forbidden = XMLCharacters.firstForbidden(in: decoded) {
            throw failure("", "the character \(XMLCharacters.name(forbidden)) cannot appear in XML (XML 1.0 §2.2)")
        }
        return decoded
    }

    private mutating func reference() throws(LayoutError) -> String {
        advance()  // &
        var name: [UInt8] = []
        while index < bytes.count, bytes[index] != UInt8(ascii: ";"), name.count < 12 {
            name.append(bytes[index])
            advance()
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: ";") else {
            throw failure("", "malformed entity reference")
        }
        advance()
        let text = String(decoding: name, as: UTF8.self)
        switch text {
        case "lt": return "<"
        case "gt": return ">"
        case "amp": return "&"
        case "quot": return "\""
        case "apos": return "'"
        default:
            var code: UInt32?
            if text.hasPrefix("#x") || text.hasPrefix("#X") {
                code = UInt32(text.dropFirst(2), radix: 16)
            } else if text.hasPrefix("#") {
                code = UInt32(text.dropFirst(), radix: 10)
            }
            guard let code else {
                throw failure("", "unknown entity '&\(text);' (only the predefined ones are expanded)")
            }
            // §4.1: a character reference must name a Char (so never &#0; or &#1;).
            guard let scalar = Unicode.Scalar(code), XMLCharacters.isAllowed(scalar) else {
                throw failure("", "'&\(text);' names a character that XML 1.0 does not allow")
            }
            return String(Character(scalar))
        }
    }

    private mutating func value(_ tag: Tag, depth: Int) throws(LayoutError) -> SourceNode {
        if tag.isClosing { throw failure("", "unexpected </\(tag.name)>, a value was expected") }
        switch tag.name {
        case "dict":
            guard depth < maxDepth else { throw failure("", "nesting deeper than \(maxDepth) levels") }
            var members: [SourceNode.Member] = []
            if tag.isEmpty { return SourceNode(.dictionary(members), line: tag.line) }
            var keys = KeySet()
            while true {
                guard let next = try nextTag() else { throw failure("", "unterminated <dict>") }
                if next.isClosing && next.name == "dict" { break }
                guard next.name == "key", !next.isClosing else {
                    throw failure("", "<key> was expected in <dict>, found <\(next.name)>", line: next.line)
                }
                let key = next.isEmpty ? "" : try text()
                if !next.isEmpty { try expectClose("key") }
                do throws(LayoutError) {
                    guard keys.insert(key, into: members) else { throw failure("", "duplicate key '\(key)'", line: next.line) }
                    guard let valueTag = try nextTag() else {
                        throw failure("", "a value was expected after <key>\(key)</key>")
                    }
                    members.append(.init(key: key, node: try value(valueTag, depth: depth + 1)))
                } catch {
                    throw error.within(key)
                }
            }
            return SourceNode(.dictionary(members), line: tag.line)
        case "array":
            guard depth < maxDepth else { throw failure("", "nesting deeper than \(maxDepth) levels") }
            var elements: [SourceNode] = []
            if tag.isEmpty { return SourceNode(.array(elements), line: tag.line) }
            while true {
                guard let next = try nextTag() else { throw failure("", "unterminated <array>") }
                if next.isClosing && next.name == "array" { break }
                do throws(LayoutError) {
                    elements.append(try value(next, depth: depth + 1))
                } catch {
                    throw error.within(elements.count)
                }
            }
            return SourceNode(.array(elements), line: tag.line)
        case "true", "false":
            if !tag.isEmpty { try expectClose(tag.name) }
            return SourceNode(.bool(tag.name == "true"), line: tag.line)
        case "string", "integer", "real", "date", "data":
            let content = tag.isEmpty ? "" : try text()
            if !tag.isEmpty { try expectClose(tag.name) }
            return SourceNode(try scalar(tag.name, content, line: tag.line), line: tag.line)
        default:
            throw failure("", "unknown element <\(tag.name)>", line: tag.line)
        }
    }

    private func scalar(_ name: String, _ content: String, line: Int) throws(LayoutError) -> SourceNode.Value {
        let trimmed = content.trimmingWhitespace()
        switch name {
        case "string":
            return .string(content)
        case "integer":
            if let value = Int64(trimmed) { return .integer(value) }
            if trimmed.hasPrefix("0x") || trimmed.hasPrefix("0X"), let value = Int64(trimmed.dropFirst(2), radix: 16) {
                return .integer(value)
            }
            let digits = trimmed.hasPrefix("-") || trimmed.hasPrefix("+") ? trimmed.dropFirst() : trimmed[...]
            if !digits.isEmpty, digits.utf8.allSatisfy(isDigit) || (digits.hasPrefix("0x") && UInt64(digits.dropFirst(2), radix: 16) != nil)
            {
                throw failure("", "the integer \(trimmed) " + IntegerRange.message, line: line)
            }
            throw failure("", "'\(trimmed)' is not an integer", line: line)
        case "real":
            guard let value = Double(trimmed), value.isFinite else {
                throw failure("", "'\(trimmed)' is not a finite real number", line: line)
            }
            return .real(value)
        case "date":
            return .date(trimmed)
        default:
            guard let decoded = Base64.decode(trimmed) else {
                throw failure("", "<data> is not valid base64", line: line)
            }
            return .data(decoded)
        }
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

/// Base64 (RFC 4648) without Foundation, for plist `<data>` and JSON output of data values.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i]
            let b1 = i + 1 < bytes.count ? bytes[i + 1] : 0
            let b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case 0x41...0x5A: values.append(byte - 0x41)
            case 0x61...0x7A: values.append(byte - 0x61 + 26)
            case 0x30...0x39: values.append(byte - 0x30 + 52)
            case UInt8(ascii: "+"), UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "/"), UInt8(ascii: "_"): values.append(63)
            case UInt8(ascii: "="), 0x20, 0x09, 0x0A, 0x0D: continue
            default: return nil
            }
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < values.count {
            let chunk = values[i..<min(i + 4, values.count)].map { UInt32($0) }
            let n = chunk.enumerated().reduce(UInt32(0)) { $0 | $1.element << (18 - 6 * UInt32($1.offset)) }
            out.append(UInt8(n >> 16 & 0xFF))
            if chunk.count > 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if chunk.count > 3 { out.append(UInt8(n & 0xFF)) }
            i += 4
        }
        return out
    }
}
