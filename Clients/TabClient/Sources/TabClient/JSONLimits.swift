import Foundation

/// Limits on what the client reads: every JSON document it decodes and every answer's body.
enum JSONLimits {
    /// The deepest nesting of arrays and objects decoded (the Java client's limit too): deeper is refused unread, so that
    /// no parser recurses as deep as an answer asks.
    static let maximumDepth = 64

    /// `T` decoded from `data` after ``checkDepth(_:)``.
    /// - Throws: ``TooDeep`` for nesting deeper than ``maximumDepth``, else what `JSONDecoder` throws.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try checkDepth(data)
        return try JSONDecoder().decode(type, from: data)
    }

    /// Refuses `data` whose arrays and objects nest deeper than ``maximumDepth`` (brackets inside strings do not count).
    /// - Throws: ``TooDeep``.
    static func checkDepth(_ data: Data) throws(TooDeep) {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in data {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") {
                depth += 1
                if depth > maximumDepth { throw TooDeep() }
            } else if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") {
                depth -= 1
            }
        }
    }

    /// JSON nested deeper than ``maximumDepth``.
    struct TooDeep: Error, CustomStringConvertible {
        var description: String { "not JSON: nested deeper than \(JSONLimits.maximumDepth)" }
    }
}

/// Text an error quotes, made safe for a message or a log line.
enum Quoting {
    /// What an error quotes of an answer at most (UTF-8 bytes): a few hundred, never the body.
    static let quotedBytes = 300
    /// An error's description at most (UTF-8 bytes, before the note of what was cut).
    static let messageBytes = 700

    /// `text` with control characters (line breaks included) escaped as `\n`, `\u{…}`, so that a server's text cannot
    /// forge log lines, and at most `maxBytes` of UTF-8, then `…` and the length in all.
    static func capped(_ text: String, _ maxBytes: Int = quotedBytes) -> String {
        var out = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            let piece: String
            switch scalar.value {
            case 0x0A: piece = "\\n"
            case 0x0D: piece = "\\r"
            case 0x09: piece = "\\t"
            case 0..<0x20, 0x7F..<0xA0, 0x2028, 0x2029:
                let hex = String(scalar.value, radix: 16)
                piece = "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            default: piece = String(scalar)
            }
            let size = piece.utf8.count
            if bytes + size > maxBytes { return out + "… (\(text.unicodeScalars.count) characters in all)" }
            out += piece
            bytes += size
        }
        return out
    }
}
