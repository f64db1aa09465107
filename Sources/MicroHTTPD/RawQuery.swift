/// A query as sent (the bytes after `?`, not decoded), read the way libmicrohttpd 0.9.75's `MHD_parse_arguments_`
/// would: `&` separates arguments, the first `=` a name from its value, `+` is a space and `%XX` a byte (a `%` not
/// followed by two hex digits stays as it is). The server reads queries itself instead of
/// letting libmicrohttpd store each argument in the connection's memory (see ``targetReceived``).
struct RawQuery {
    let bytes: UnsafeBufferPointer<UInt8>

    /// The value of the first argument named `name`, the name compared ignoring ASCII case; nil when there is none
    /// or when the first has no `=`. As libmicrohttpd's `MHD_lookup_connection_value` gave it: `?Platform=ipad`
    /// is `platform`, `?limit` is no limit and `?limit=` an empty one.
    func first(named name: String) -> String? {
        var found: String?
        visit(named: name, ignoringCase: true) { value in
            found = value
            return false
        }
        return found
    }

    /// The values of every argument named exactly `name`, in order ("" for one without `=`), as the server collected
    /// them from libmicrohttpd.
    func values(named name: String) -> [String] {
        var found: [String] = []
        visit(named: name, ignoringCase: false) { value in
            found.append(value ?? "")
            return true
        }
        return found
    }

    /// Calls `body` with the decoded value (nil without `=`) of each argument named `name` until it returns false.
    private func visit(named name: String, ignoringCase: Bool, _ body: (String?) -> Bool) {
        guard !bytes.isEmpty else { return }
        var name = name
        name.withUTF8 { wanted in
            var start = 0
            while start <= bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "&") { end += 1 }
                let argument = UnsafeBufferPointer(rebasing: bytes[start..<end])
                let equals = argument.firstIndex(of: UInt8(ascii: "="))
                let key = UnsafeBufferPointer(rebasing: argument[argument.startIndex..<(equals ?? argument.endIndex)])
                if !argument.isEmpty, Self.decoded(key, equals: wanted, ignoringCase: ignoringCase) {
                    let value = equals.map { UnsafeBufferPointer(rebasing: argument[($0 + 1)...]) }
                    guard body(value.map(Self.decoded)) else { return }
                }
                start = end + 1
            }
        }
    }

    /// Whether `part`, decoded, is `wanted` (decoded on the fly, without a copy).
    private static func decoded(_ part: UnsafeBufferPointer<UInt8>, equals wanted: UnsafeBufferPointer<UInt8>, ignoringCase: Bool)
        -> Bool
    {
        var index = part.startIndex
        var matched = 0
        while index < part.endIndex {
            let (byte, width) = decodedByte(part, at: index)
            guard matched < wanted.count, byte == wanted[matched] || (ignoringCase && lowercased(byte) == lowercased(wanted[matched]))
            else { return false }
            matched += 1
            index += width
        }
        return matched == wanted.count
    }

    /// `part` decoded, as text (invalid UTF-8 repaired, as `String(cString:)` did with libmicrohttpd's values).
    private static func decoded(_ part: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(part.count)
        var index = part.startIndex
        while index < part.endIndex {
            let (byte, width) = decodedByte(part, at: index)
            out.append(byte)
            index += width
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The byte that starts at `index` once decoded, and how many bytes of `part` it took.
    @inline(__always)
    private static func decodedByte(_ part: UnsafeBufferPointer<UInt8>, at index: Int) -> (UInt8, Int) {
        let byte = part[index]
        if byte == UInt8(ascii: "+") { return (UInt8(ascii: " "), 1) }
        if byte == UInt8(ascii: "%"), index + 2 < part.endIndex, let high = hexValue(part[index + 1]),
            let low = hexValue(part[index + 2])
        {
            return (high << 4 | low, 3)
        }
        return (byte, 1)
    }

    @inline(__always)
    private static func lowercased(_ byte: UInt8) -> UInt8 { byte &- 0x41 < 26 ? byte | 0x20 : byte }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
