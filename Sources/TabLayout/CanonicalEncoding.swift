/// The canonical bytes of LAYOUT.md §2: UTF-8, keys sorted by their UTF-8 bytes, no insignificant
/// whitespace, `/` not escaped, integers without a fraction.
public enum CanonicalJSON {
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        write(value, into: &out)
        return out
    }

    static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .string(let s): writeString(s, into: &out)
        case .integer(let n): out.append(contentsOf: String(n).utf8)
        case .real(let x): out.append(contentsOf: formatReal(x).utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, key) in sortedKeys(members).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(members[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
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
        out.append(UInt8(ascii: "\""))
    }

    /// Keys in the order of their UTF-8 bytes (`"A" < "_x" < "a"`).
    static func sortedKeys(_ members: [String: JSONValue]) -> [String] {
        members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Integral values without a fraction; others in Swift's shortest round-trip form.
    static func formatReal(_ x: Double) -> String {
        if x.rounded() == x, abs(x) < 9_007_199_254_740_992 { return String(Int64(x)) }
        return String(x)
    }
}

/// The same document as an XML property list (keys sorted the same way, so the bytes are stable too).
public enum PropertyListXML {
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out = Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">\n
            """.utf8)
        write(value, depth: 0, into: &out)
        out.append(contentsOf: Array("</plist>\n".utf8))
        return out
    }

    private static func indent(_ depth: Int, _ out: inout [UInt8]) {
        out.append(contentsOf: repeatElement(0x09, count: depth))
    }

    private static func write(_ value: JSONValue, depth: Int, into out: inout [UInt8]) {
        indent(depth, &out)
        switch value {
        case .string(let s):
            element("string", s, &out)
        case .integer(let n):
            element("integer", String(n), &out)
        case .real(let x):
            element("real", CanonicalJSON.formatReal(x), &out)
        case .bool(let b):
            out.append(contentsOf: (b ? "<true/>\n" : "<false/>\n").utf8)
        case .array(let elements):
            if elements.isEmpty {
                out.append(contentsOf: "<array/>\n".utf8)
                return
            }
            out.append(contentsOf: "<array>\n".utf8)
            for element in elements { write(element, depth: depth + 1, into: &out) }
            indent(depth, &out)
            out.append(contentsOf: "</array>\n".utf8)
        case .object(let members):
            if members.isEmpty {
                out.append(contentsOf: "<dict/>\n".utf8)
                return
            }
            out.append(contentsOf: "<dict>\n".utf8)
            for key in CanonicalJSON.sortedKeys(members) {
                indent(depth + 1, &out)
                element("key", key, &out)
                write(members[key]!, depth: depth + 1, into: &out)
            }
            indent(depth, &out)
            out.append(contentsOf: "</dict>\n".utf8)
        }
    }

    private static func element(_ name: String, _ text: String, _ out: inout [UInt8]) {
        out.append(contentsOf: "<\(name)>".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): out.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): out.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): out.append(contentsOf: "&gt;".utf8)
            case 0x00..<0x20 where byte != 0x09 && byte != 0x0A && byte != 0x0D:
                out.append(contentsOf: "&#\(byte);".utf8)
            default: out.append(byte)
            }
        }
        out.append(contentsOf: "</\(name)>\n".utf8)
    }
}
