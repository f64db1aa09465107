/// A string written as a JSON string literal: the one escaping of every JSON this server writes (canonical layouts,
/// problem documents). RFC 8259 §7: `"` and `\` escaped, the control characters below U+0020 as `\n`, `\r`, `\t`,
/// `\b`, `\f` or `\u00xx`; nothing else (`/` and non-ASCII are written as they are).
public enum JSONString {
    private static let hex = Array("0123456789abcdef".utf8)

    /// Appends `text` as a JSON string literal, quotes included, to `out`.
    public static func write(_ text: String, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            out.append(UInt8(ascii: "\""))
            // Most strings need no escape: then their bytes are copied at once.
            if !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                out.append(contentsOf: bytes)
            } else {
                for byte in bytes { writeEscaped(byte, into: &out) }
            }
            out.append(UInt8(ascii: "\""))
        }
    }

    private static func writeEscaped(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case 0x00..<0x20:
            out.append(contentsOf: Array("\\u00".utf8))
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        default: out.append(byte)
        }
    }
}
