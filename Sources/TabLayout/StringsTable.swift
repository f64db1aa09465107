/// A global strings table: localization key → text for one locale.
public struct StringsTable: Sendable, Equatable {
    public var entries: [String: String]

    public init(_ entries: [String: String] = [:]) { self.entries = entries }

    /// Reads an Apple `.strings` file (UTF-8, or UTF-16 with a BOM; comments; escapes as Foundation reads them:
    /// `\a \b \f \n \r \t \v`, octal `\101`, `\U20AC` with surrogate pairs as two `\U` escapes; the legacy
    /// `{ "k" = "v"; }` dictionary form too) or a JSON object of strings. Text that an XML property list cannot
    /// carry (control characters other than tab, LF and CR; U+FFFE, U+FFFF) is refused: compiled layouts are
    /// served as property lists too.
    /// - Throws: ``LayoutError`` with the line of the first problem.
    public static func read(_ bytes: [UInt8]) throws(LayoutError) -> StringsTable {
        try readReporting(bytes).table
    }

    /// ``read(_:)``, with what was accepted but deserves a word: a file that ends inside a `/* comment` keeps the
    /// entries before the comment (as Foundation does) and says so here.
    /// - Throws: ``LayoutError`` with the line of the first problem.
    public static func readReporting(_ bytes: [UInt8]) throws(LayoutError) -> (table: StringsTable, warnings: [FieldError]) {
        guard bytes.count <= LayoutLimits.sourceBytes else {
            throw LayoutError(pointer: "", line: nil, "a strings table over \(LayoutLimits.sourceBytes) bytes", kind: .tooLarge)
        }
        // What Xcode writes into a built app (STRINGS_FILE_OUTPUT_ENCODING = binary), and Foundation reads.
        if BinaryPlistReader.isBinaryPlist(bytes) { return (try readBinaryPlist(bytes), []) }
        let text = try decodeText(bytes)
        // The first key tells JSON from the old-style form; a prefix is enough to find it.
        if StringsParser(scalars: Array(text.unicodeScalars.prefix(64 * 1024))).startsJSONObject() {
            return (try readJSON(Array(text.utf8)), [])
        }
        var parser = StringsParser(scalars: Array(text.unicodeScalars))
        let entries = try parser.parse()
        return (StringsTable(entries), parser.warnings)
    }

    /// A binary property list whose top object is a dictionary of string → string.
    private static func readBinaryPlist(_ bytes: [UInt8]) throws(LayoutError) -> StringsTable {
        let node = try BinaryPlistReader.read(bytes)
        guard case .dictionary(let members) = node.value else {
            throw LayoutError(pointer: "", line: nil, "a binary property list strings table is a dictionary of key → text")
        }
        return try table(members)
    }

    private static func decodeText(_ bytes: [UInt8]) throws(LayoutError) -> String {
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            let bigEndian = bytes[0] == 0xFE
            guard bytes.count % 2 == 0 else { throw LayoutError(pointer: "", line: nil, "UTF-16 text with an odd number of bytes") }
            var units: [UInt16] = []
            var i = 2
            while i + 1 < bytes.count {
                units.append(bigEndian ? UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) : UInt16(bytes[i + 1]) << 8 | UInt16(bytes[i]))
                i += 2
            }
            guard let text = String(validating: units, as: UTF16.self) else {
                throw LayoutError(pointer: "", line: nil, "the text is not valid UTF-16")
            }
            return text
        }
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        guard let text = String(validating: body, as: UTF8.self) else {
            throw LayoutError(pointer: "", line: nil, "the text is neither UTF-8 nor UTF-16 with a byte order mark")
        }
        return text
    }

    private static func readJSON(_ bytes: [UInt8]) throws(LayoutError) -> StringsTable {
        let node = try JSONReader.read(bytes)
        guard case .dictionary(let members) = node.value else {
            throw LayoutError(pointer: "", line: node.line, "a JSON strings table is an object of key → text")
        }
        return try table(members)
    }

    /// The entries of a dictionary read from JSON or a property list: every value a string an XML property list
    /// can carry, or a diagnostic at its pointer.
    private static func table(_ members: [SourceNode.Member]) throws(LayoutError) -> StringsTable {
        var entries: [String: String] = [:]
        entries.reserveCapacity(members.count)
        var diagnostics: [FieldError] = []
        for member in members {
            var pointer: String { JSONPointer.appending("", member.key) }
            guard case .string(let text) = member.node.value else {
                diagnostics.append(
                    .init(pointer: pointer, line: member.node.line, message: "must be a string, found \(member.node.kindName)"))
                continue
            }
            if let forbidden = XMLCharacters.firstForbidden(in: member.key) ?? XMLCharacters.firstForbidden(in: text) {
                diagnostics.append(.init(pointer: pointer, line: member.node.line, message: StringsParser.forbiddenMessage(forbidden)))
                continue
            }
            entries[member.key] = text
        }
        guard diagnostics.isEmpty else { throw LayoutError(diagnostics) }
        return StringsTable(entries)
    }
}

/// The `.strings` grammar as Foundation's old-style property-list parser reads it (CFOldStylePList.c):
/// `"key" = "value";` pairs (or `"key";`, whose value is its key), optionally inside one `{ … }`, `/* */` and
/// `//` comments, unquoted `[A-Za-z0-9_$/:.-]+` tokens, and backslash escapes.
private struct StringsParser {
    let scalars: [Unicode.Scalar]
    var index = 0
    var line = 1
    /// What was accepted with a word (a file ending inside a comment).
    var warnings: [FieldError] = []

    init(scalars: [Unicode.Scalar]) { self.scalars = scalars }

    func failure(_ message: String) -> LayoutError { LayoutError(pointer: "", line: line, ".strings: " + message) }

    static func forbiddenMessage(_ scalar: Unicode.Scalar) -> String {
        "the character \(XMLCharacters.name(scalar)) cannot be served in an XML property list (XML 1.0 §2.2)"
    }

    mutating func advance() {
        if scalars[index] == "\n" { line += 1 }
        index += 1
    }

    /// Whether the text is a JSON object: `{`, then a key followed by `:` (or `}` at once, or text that ends
    /// before the first key does); the old-style form has `=` or `;` after its first key.
    func startsJSONObject() -> Bool {
        var peek = self
        guard (try? peek.skipTrivia()) != nil, peek.index < scalars.count, scalars[peek.index] == "{" else { return false }
        peek.advance()
        guard (try? peek.skipTrivia()) != nil, peek.index < scalars.count else { return true }
        if scalars[peek.index] == "}" { return true }
        guard (try? peek.token()) != nil, (try? peek.skipTrivia()) != nil, peek.index < scalars.count else { return true }
        return scalars[peek.index] == ":"
    }

    /// Skips white space and comments. A `/* comment` that the file ends inside is an error, except between two
    /// entries (`betweenEntries`), where Foundation keeps what came before it: the rest is skipped with a warning.
    mutating func skipTrivia(betweenEntries: Bool = false) throws(LayoutError) {
        while index < scalars.count {
            let c = scalars[index]
            if c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\u{FEFF}" {
                advance()
            } else if c == "/", index + 1 < scalars.count, scalars[index + 1] == "*" {
                let start = line
                advance()
                advance()
                while index < scalars.count, !(scalars[index] == "*" && index + 1 < scalars.count && scalars[index + 1] == "/") {
                    advance()
                }
                guard index < scalars.count else {
                    guard betweenEntries else {
                        line = start
                        throw failure("unterminated /* comment")
                    }
                    warnings.append(
                        FieldError(
                            pointer: "", line: start,
                            message: ".strings: the file ends inside the /* comment that starts here; the entries before it are kept"))
                    return
                }
                advance()
                advance()
            } else if c == "/", index + 1 < scalars.count, scalars[index + 1] == "/" {
                while index < scalars.count, scalars[index] != "\n" { advance() }
            } else {
                return
            }
        }
    }

    mutating func token() throws(LayoutError) -> String {
        guard index < scalars.count else { throw failure("unexpected end of file") }
        let c = scalars[index]
        if c == "\"" { return try quoted() }
        if c == "{" || c == "(" || c == "<" {
            throw failure("a strings table holds text only, found \(c == "{" ? "a dictionary" : c == "(" ? "an array" : "data")")
        }
        var text = ""
        while index < scalars.count, Self.isBare(scalars[index]) {
            text.unicodeScalars.append(scalars[index])
            advance()
        }
        guard !text.isEmpty else { throw failure("a quoted string was expected, found '\(c)'") }
        return text
    }

    /// CF's unquoted-string characters (ASCII letters and digits, `_ $ / : . -`).
    static func isBare(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x61...0x7A, 0x41...0x5A, 0x30...0x39: true
        case 0x5F, 0x24, 0x2F, 0x3A, 0x2E, 0x2D: true
        default: false
        }
    }

    /// NeXTSTEP's characters 0x80…0xFD (what an octal escape above `\177` names), read off Foundation's
    /// `String.Encoding.nextstep`; 0xFE and 0xFF name none.
    static let nextStep: [UInt16] = [
        0x00A0, 0x00C0, 0x00C1, 0x00C2, 0x00C3, 0x00C4, 0x00C5, 0x00C7, 0x00C8, 0x00C9, 0x00CA, 0x00CB, 0x00CC, 0x00CD, 0x00CE, 0x00CF,
        0x00D0, 0x00D1, 0x00D2, 0x00D3, 0x00D4, 0x00D5, 0x00D6, 0x00D9, 0x00DA, 0x00DB, 0x00DC, 0x00DD, 0x00DE, 0x00B5, 0x00D7, 0x00F7,
        0x00A9, 0x00A1, 0x00A2, 0x00A3, 0x2044, 0x00A5, 0x0192, 0x00A7, 0x00A4, 0x2019, 0x201C, 0x00AB, 0x2039, 0x203A, 0xFB01, 0xFB02,
        0x00AE, 0x2013, 0x2020, 0x2021, 0x00B7, 0x00A6, 0x00B6, 0x2022, 0x201A, 0x201E, 0x201D, 0x00BB, 0x2026, 0x2030, 0x00AC, 0x00BF,
        0x00B9, 0x02CB, 0x00B4, 0x02C6, 0x02DC, 0x00AF, 0x02D8, 0x02D9, 0x00A8, 0x00B2, 0x02DA, 0x00B8, 0x00B3, 0x02DD, 0x02DB, 0x02C7,
        0x2014, 0x00B1, 0x00BC, 0x00BD, 0x00BE, 0x00E0, 0x00E1, 0x00E2, 0x00E3, 0x00E4, 0x00E5, 0x00E7, 0x00E8, 0x00E9, 0x00EA, 0x00EB,
        0x00EC, 0x00C6, 0x00ED, 0x00AA, 0x00EE, 0x00EF, 0x00F0, 0x00F1, 0x0141, 0x00D8, 0x0152, 0x00BA, 0x00F2, 0x00F3, 0x00F4, 0x00F5,
        0x00F6, 0x00E6, 0x00F9, 0x00FA, 0x00FB, 0x0131, 0x00FC, 0x00FD, 0x0142, 0x00F8, 0x0153, 0x00DF, 0x00FE, 0x00FF,
    ]

    mutating func quoted() throws(LayoutError) -> String {
        advance()
        var text = ""
        // A high surrogate from a \U escape, waiting for the low one of the next escape.
        var pendingHigh: UInt32?
        while true {
            guard index < scalars.count else { throw failure("unterminated string") }
            let c = scalars[index]
            advance()
            if c != "\\" || index >= scalars.count || scalars[index] != "U" {
                guard pendingHigh == nil else { throw failure("a \\U high surrogate without its low surrogate") }
            }
            if c == "\"" { return text }
            guard c == "\\" else {
                text.unicodeScalars.append(c)
                continue
            }
            guard index < scalars.count else { throw failure("unterminated escape") }
            let e = scalars[index]
            advance()
            switch e {
            case "a": text += "\u{07}"
            case "b": text += "\u{08}"
            case "f": text += "\u{0C}"
            case "n": text += "\n"
            case "r": text += "\r"
            case "t": text += "\t"
            case "v": text += "\u{0B}"
            case "0"..."7":
                // At most three octal digits (so "\0005" is NUL then "5"), a NeXTSTEP character past 0x7F.
                var value = e.value - 0x30
                for _ in 0..<2 {
                    guard index < scalars.count, ("0"..."7").contains(scalars[index]) else { break }
                    value = value << 3 | (scalars[index].value - 0x30)
                    advance()
                }
                guard value <= 0xFD else { throw failure("the octal escape \\\(String(value, radix: 8)) names no character") }
                let code = value < 0x80 ? value : UInt32(Self.nextStep[Int(value - 0x80)])
                text.unicodeScalars.append(Unicode.Scalar(code)!)
            case "U":
                // Up to four hex digits, as Foundation reads them.
                var value: UInt32 = 0
                var digits = 0
                while digits < 4, index < scalars.count, scalars[index].isASCII,
                    let digit = hexDigit(UInt8(scalars[index].value))
                {
                    value = value << 4 | UInt32(digit)
                    digits += 1
                    advance()
                }
                guard digits > 0 else { throw failure("\\U needs hex digits") }
                if let high = pendingHigh {
                    guard (0xDC00...0xDFFF).contains(value) else { throw failure("a \\U high surrogate without its low surrogate") }
                    pendingHigh = nil
                    text.unicodeScalars.append(Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00))!)
                } else if (0xD800...0xDBFF).contains(value) {
                    pendingHigh = value
                } else {
                    guard let scalar = Unicode.Scalar(value) else { throw failure("a \\U low surrogate without its high surrogate") }
                    text.unicodeScalars.append(scalar)
                }
            default:
                // `\"`, `\\`, a backslash before a newline, and any other character stand for themselves.
                text.unicodeScalars.append(e)
            }
        }
    }

    mutating func parse() throws(LayoutError) -> [String: String] {
        var entries: [String: String] = [:]
        // Every entry ends with ';': sized once, the table is never rehashed while it grows.
        entries.reserveCapacity(scalars.reduce(0) { $0 + ($1 == ";" ? 1 : 0) })
        try skipTrivia(betweenEntries: true)
        // The legacy form: the whole table is one old-style dictionary.
        let braced = index < scalars.count && scalars[index] == "{"
        if braced { advance() }
        while true {
            try skipTrivia(betweenEntries: !braced)
            guard index < scalars.count else {
                if braced { throw failure("'}' was expected at the end of the table") }
                return entries
            }
            if braced, scalars[index] == "}" {
                advance()
                try skipTrivia()
                guard index >= scalars.count else { throw failure("unexpected text after the closing '}'") }
                return entries
            }
            let entryLine = line
            let key = try token()
            try skipTrivia()
            guard index < scalars.count else { throw failure("'=' or ';' was expected after \"\(key)\"") }
            var value = key
            if scalars[index] == ";" {
                advance()
            } else {
                guard scalars[index] == "=" else { throw failure("'=' was expected after \"\(key)\"") }
                advance()
                try skipTrivia()
                value = try token()
                try skipTrivia()
                guard index < scalars.count, scalars[index] == ";" else { throw failure("';' was expected after the value of \"\(key)\"") }
                advance()
            }
            if let forbidden = XMLCharacters.firstForbidden(in: key) ?? XMLCharacters.firstForbidden(in: value) {
                throw LayoutError(pointer: JSONPointer.appending("", key), line: entryLine, ".strings: " + Self.forbiddenMessage(forbidden))
            }
            entries[key] = value
        }
    }
}
