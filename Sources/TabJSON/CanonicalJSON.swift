/// The canonical bytes of a compiled layout (docs/layout-format.md): UTF-8, keys sorted by their UTF-8 bytes, no insignificant
/// whitespace, `/` not escaped, integers without a fraction.
public enum CanonicalJSON {
    /// The canonical bytes of `value`.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        write(value, into: &out)
        return out
    }

    /// An object whose `trailing` members are written after the others, each group in key order: the answers that
    /// gained members (`next`, a token's `id`) after their first release keep the order they were written in.
    public static func encode(object members: [String: JSONValue], trailing: [String: JSONValue]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        out.append(UInt8(ascii: "{"))
        var first = true
        for group in [members, trailing] {
            forEachSorted(group) { key, value in
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeMember(key, value, into: &out)
            }
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Appends the canonical bytes of `value` to `out`.
    package static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .string(let s): writeString(s, into: &out)
        case .integer(let n): writeInteger(n, into: &out)
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
            var first = true
            forEachSorted(members) { key, value in
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeMember(key, value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `"key":value`.
    private static func writeMember(_ key: String, _ value: JSONValue, into out: inout [UInt8]) {
        writeString(key, into: &out)
        out.append(UInt8(ascii: ":"))
        write(value, into: &out)
    }

    /// `s` as a JSON string literal: the escaping every JSON the server writes shares (``JSONString``).
    package static func writeString(_ s: String, into out: inout [UInt8]) { JSONString.write(s, into: &out) }

    /// Decimal digits of `n`, written without an intermediate `String`.
    package static func writeInteger(_ n: Int64, into out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 19 digits at most, on the stack, last digit first
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
        }
        withUnsafeBytes(of: &digits) { buffer in
            for i in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[i]) }
        }
    }

    /// Calls `body` with each member in the order of the keys' UTF-8 bytes (`"A" < "_x" < "a"`). What is sorted
    /// is each key's first eight bytes as an integer and its dictionary index: plain values, so the sort moves
    /// no reference (moving keys and values cost a retain and a release per move); equal prefixes compare the
    /// whole keys.
    package static func forEachSorted(_ members: [String: JSONValue], _ body: (String, JSONValue) -> Void) {
        typealias Entry = (prefix: UInt64, index: Dictionary<String, JSONValue>.Index)
        // On the stack for the usual handful of members (no allocation per object).
        withUnsafeTemporaryAllocation(of: Entry.self, capacity: members.count) { buffer in
            var order = buffer
            var count = 0
            var index = members.startIndex
            while index != members.endIndex {
                order.initializeElement(at: count, to: (sortPrefix(members[index].key), index))
                count += 1
                members.formIndex(after: &index)
            }
            order.sort { a, b in
                a.prefix != b.prefix ? a.prefix < b.prefix : utf8Precedes(members[a.index].key, members[b.index].key)
            }
            for entry in order {
                let member = members[entry.index]
                body(member.key, member.value)
            }
            _ = order.deinitialize()
        }
    }

    /// The first eight UTF-8 bytes, big-endian, zero-padded: integer order is byte order up to there.
    private static func sortPrefix(_ key: String) -> UInt64 {
        var prefix: UInt64 = 0
        var count = 0
        for byte in key.utf8.prefix(8) {
            prefix = prefix << 8 | UInt64(byte)
            count += 1
        }
        return count == 8 ? prefix : prefix << (8 * UInt64(8 - count))
    }

    /// Byte-wise order of two strings' UTF-8 (Swift's `<` compares Unicode-normalized text instead).
    package static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                for i in 0..<min(x.count, y.count) where x[i] != y[i] { return x[i] < y[i] }
                return x.count < y.count
            }
        }
    }

    /// Integral values without a fraction; others in Swift's shortest round-trip form.
    package static func formatReal(_ x: Double) -> String {
        if x.rounded() == x, abs(x) < 9_007_199_254_740_992 { return String(Int64(x)) }
        return String(x)
    }
}
