/// Base64 (RFC 4648): the standard alphabet with padding (§4), and the URL- and filename-safe alphabet without
/// padding (§5), which tokens use so that they survive URLs, shells and secret scanners unchanged.
public enum Base64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Standard base64 with `=` padding (RFC 4648 §4).
    public static func encode(_ bytes: [UInt8]) -> String { encode(bytes, alphabet: standardAlphabet, padding: true) }

    /// URL-safe base64 without padding (RFC 4648 §5).
    public static func encodeURLSafe(_ bytes: [UInt8]) -> String { encode(bytes, alphabet: urlAlphabet, padding: false) }

    /// The bytes of standard base64 with its padding, or nil when `text` is not exactly that (wrong characters,
    /// wrong length, missing or misplaced `=`, or non-zero bits left over in the last character).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 4 == 0 else { return nil }
        var body = utf8[...]
        var padding = 0
        while padding < 2, body.last == UInt8(ascii: "=") {
            body = body.dropLast()
            padding += 1
        }
        return decode(body, alphabet: standardAlphabet)
    }

    /// The bytes of URL-safe base64 without padding, or nil when `text` is not exactly that.
    public static func decodeURLSafe(_ text: some StringProtocol) -> [UInt8]? {
        decode(Array(text.utf8)[...], alphabet: urlAlphabet)
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], padding: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            var group: UInt32 = 0
            for offset in 0..<3 { group = group << 8 | UInt32(offset < count ? bytes[index + offset] : 0) }
            for position in 0...count { out.append(alphabet[Int(group >> UInt32(18 - 6 * position) & 0x3F)]) }
            if padding { out.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 3 - count)) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func decode(_ characters: ArraySlice<UInt8>, alphabet: [UInt8]) -> [UInt8]? {
        guard characters.count % 4 != 1 else { return nil }
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { values[Int(character)] = UInt8(value) }
        var out = [UInt8]()
        out.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Canonical form only: the bits that did not make a whole byte must be zero.
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
