/// A global strings table: localization key → text for one locale.
public struct StringsTable: Sendable, Equatable {
    public var entries: [String: String]

    public init(_ entries: [String: String] = [:]) { self.entries = entries }

    /// Reads an Apple `.strings` file (UTF-8, or UTF-16 with a BOM; comments, escapes) or a JSON object of
    /// strings, chosen by the first significant character.
    /// - Throws: ``LayoutError`` with the line of the first problem.
    public static func read(_ bytes: [UInt8]) throws(LayoutError) -> StringsTable {
        guard bytes.count <= LayoutLimits.sourceBytes else {
            throw LayoutError(pointer: "", line: nil, "a strings table over \(LayoutLimits.sourceBytes) bytes", kind: .tooLarge)
        }
        let text = try decodeText(bytes)
        if text.first(where: { !$0.isWhitespace }) == "{" {
            return try readJSON(Array(text.utf8))
        }
        var parser = StringsParser(scalars: Array(text.unicodeScalars))
        return StringsTable(try parser.parse())
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
        var entries: [String: String] = [:]
        var diagnostics: [LayoutDiagnostic] = []
        for member in members {
            let pointer = JSONPointer.appending("", member.key)
            guard case .string(let text) = member.node.value else {
                diagnostics.append(
                    .init(pointer: pointer, line: member.node.line, message: "must be a string, found \(member.node.kindName)"))
                continue
            }
            entries[member.key] = text
        }
        guard diagnostics.isEmpty else { throw LayoutError(diagnostics) }
        return StringsTable(entries)
    }
}

/// The `.strings` grammar: `"key" = "value";` pairs, `/* */` and `//` comments, backslash escapes.
private struct StringsParser {
    let scalars: [Unicode.Scalar]
    var index = 0
    var line = 1

    init(scalars: [Unicode.Scalar]) { self.scalars = scalars }

    func failure(_ message: String) -> LayoutError { LayoutError(pointer: "", line: line, ".strings: " + message) }

    mutating func advance() {
        if scalars[index] == "\n" { line += 1 }
        index += 1
    }

    mutating func skipTrivia() throws(LayoutError) {
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
                    line = start
                    throw failure("unterminated /* comment")
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
        if scalars[index] == "\"" { return try quoted() }
        var text = ""
        while index < scalars.count, isBare(scalars[index]) {
            text.unicodeScalars.append(scalars[index])
            advance()
        }
        guard !text.isEmpty else { throw failure("a quoted string was expected, found '\(scalars[index])'") }
        return text
    }

    func isBare(_ c: Unicode.Scalar) -> Bool {
        c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" || c == "." || c == "-" || c == "$" || c == ":" || c == "/"
    }

    mutating func quoted() throws(LayoutError) -> String {
        advance()
        var text = ""
        while true {
            guard index < scalars.count else { throw failure("unterminated string") }
            let c = scalars[index]
            advance()
            if c == "\"" { return text }
            guard c == "\\" else {
                text.unicodeScalars.append(c)
                continue
            }
            guard index < scalars.count else { throw failure("unterminated escape") }
            let e = scalars[index]
            advance()
            switch e {
            case "n": text += "\n"
            case "t": text += "\t"
            case "r": text += "\r"
            case "0": text += "\0"
            case "U", "u":
                var value: UInt32 = 0
                for _ in 0..<4 {
                    guard index < scalars.count, let digit = hexDigit(UInt8(truncatingIfNeeded: scalars[index].value)),
                        scalars[index].isASCII
                    else { throw failure("\\U needs four hex digits") }
                    value = value << 4 | UInt32(digit)
                    advance()
                }
                guard let scalar = Unicode.Scalar(value) else { throw failure("\\U\(String(value, radix: 16)) is not a character") }
                text.unicodeScalars.append(scalar)
            default: text.unicodeScalars.append(e)
            }
        }
    }

    mutating func parse() throws(LayoutError) -> [String: String] {
        var entries: [String: String] = [:]
        while true {
            try skipTrivia()
            guard index < scalars.count else { return entries }
            let key = try token()
            try skipTrivia()
            guard index < scalars.count else { throw failure("'=' or ';' was expected after \"\(key)\"") }
            if scalars[index] == ";" {
                advance()
                entries[key] = key
                continue
            }
            guard scalars[index] == "=" else { throw failure("'=' was expected after \"\(key)\"") }
            advance()
            try skipTrivia()
            let value = try token()
            try skipTrivia()
            guard index < scalars.count, scalars[index] == ";" else { throw failure("';' was expected after the value of \"\(key)\"") }
            advance()
            entries[key] = value
        }
    }
}
