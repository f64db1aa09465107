/// The same document as an XML property list (keys sorted the same way, so the bytes are stable too).
public enum PropertyListXML {
    /// The property list of `value`. A plist has no null: a `null` member or element is left out (a compiled layout
    /// holds none).
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
        case .null:
            return
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
            for element in elements where element != .null { write(element, depth: depth + 1, into: &out) }
            indent(depth, &out)
            out.append(contentsOf: "</array>\n".utf8)
        case .object(let members):
            if members.isEmpty {
                out.append(contentsOf: "<dict/>\n".utf8)
                return
            }
            out.append(contentsOf: "<dict>\n".utf8)
            CanonicalJSON.forEachSorted(members) { key, value in
                if value == .null { return }
                indent(depth + 1, &out)
                element("key", key, &out)
                write(value, depth: depth + 1, into: &out)
            }
            indent(depth, &out)
            out.append(contentsOf: "</dict>\n".utf8)
        }
    }

    /// `<name>text</name>` with `&`, `<` and `>` escaped, a CR written `&#13;` (a literal CR would be read back as
    /// LF, XML 1.0 §2.11), and any character XML 1.0 cannot carry at all (§2.2: control characters other than
    /// tab, LF and CR; U+FFFE, U+FFFF) written as U+FFFD. Validation refuses such characters in layouts and
    /// strings tables, so the replacement is a last line of defence: the output is always well-formed XML.
    private static func element(_ name: String, _ text: String, _ out: inout [UInt8]) {
        out.append(contentsOf: "<\(name)>".utf8)
        if !text.utf8.contains(where: {
            $0 < 0x20 || $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 == 0xEF
        }) {
            out.append(contentsOf: text.utf8)
            out.append(contentsOf: "</\(name)>\n".utf8)
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".utf8)
            case "<": out.append(contentsOf: "&lt;".utf8)
            case ">": out.append(contentsOf: "&gt;".utf8)
            case "\r": out.append(contentsOf: "&#13;".utf8)
            case _ where !XMLCharacters.isAllowed(scalar): out.append(contentsOf: [0xEF, 0xBF, 0xBD])
            default: out.append(contentsOf: UTF8.encode(scalar)!)
            }
        }
        out.append(contentsOf: "</\(name)>\n".utf8)
    }
}
