import Foundation

/// An IPv4 or IPv6 address as 4 or 16 bytes in network order, read and written in their textual forms.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address's bytes: 4 for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// The address of 4 or 16 `bytes`; nil for another count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// The address `text`: IPv4 as four decimal octets without leading zeros (`127.0.0.1`, not `0177.0.0.1` nor
    /// `2130706433`, which `inet_aton` would also take), or IPv6 per RFC 4291 §2.2 (with `::` and a dotted IPv4
    /// tail), without a zone. Nil for anything else.
    public init?(_ text: some StringProtocol) {
        if let v4 = Self.parseIPv4(Substring(text)) {
            bytes = v4
        } else if let v6 = Self.parseIPv6(Substring(text)) {
            bytes = v6
        } else {
            return nil
        }
    }

    /// Whether it is an IPv4 address.
    public var isIPv4: Bool { bytes.count == 4 }

    /// The IPv4 address embedded in an IPv6 one by a form that reaches it: IPv4-mapped `::ffff:0:0/96`,
    /// IPv4-compatible `::/96`, SIIT's IPv4-translated `::ffff:0:0:0/96` (RFC 2765, e.g. `::ffff:0:7f00:1`), NAT64
    /// `64:ff9b::/96` (RFC 6052) and 6to4 `2002::/16` (RFC 3056). Nil otherwise.
    public var embeddedIPv4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        let b = bytes
        if b[0..<10].allSatisfy({ $0 == 0 }) && ((b[10] == 0xFF && b[11] == 0xFF) || (b[10] == 0 && b[11] == 0)) {
            return IPAddress(bytes: Array(b[12..<16]))
        }
        if b[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return IPAddress(bytes: Array(b[12..<16])) }
        if b[0..<12] == [0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0] { return IPAddress(bytes: Array(b[12..<16])) }
        if b[0] == 0x20 && b[1] == 0x02 { return IPAddress(bytes: Array(b[2..<6])) }
        return nil
    }

    /// `192.0.2.1`, or IPv6 in RFC 5952's form (lower case, the longest run of two or more zero groups as `::`,
    /// IPv4-mapped addresses as `::ffff:192.0.2.1`).
    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return "::ffff:" + bytes[12...].map(String.init).joined(separator: ".")  // RFC 5952 §5.
        }
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        var best = (start: -1, length: 0)
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8, groups[end] == 0 { end += 1 }
            if end - index > best.length && end - index >= 2 { best = (index, end - index) }
            index = end
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.start >= 0 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.length)...].joined(separator: ":")
        return head + "::" + tail
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                part.utf8.count == 1 || part.utf8.first != UInt8(ascii: "0"), let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.utf8.count >= 2, text.utf8.count <= 45 else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String, allowIPv4Tail: Bool) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var out: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, allowIPv4Tail, piece.contains("."), let v4 = parseIPv4(piece) {
                    out += v4
                } else {
                    guard (1...4).contains(piece.utf8.count), let value = UInt16(piece, radix: 16), !piece.hasPrefix("+") else {
                        return nil
                    }
                    out += [UInt8(value >> 8), UInt8(value & 0xFF)]
                }
            }
            return out
        }
        guard let head = groups(halves[0], allowIPv4Tail: halves.count == 1) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1], allowIPv4Tail: true), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

/// An address block in CIDR notation (`10.0.0.0/8`, `fd00::/8`): an operator's allowlist entry.
public struct CIDR: Hashable, Sendable, CustomStringConvertible {
    /// The first address of the block.
    public let network: IPAddress
    /// The prefix length in bits.
    public let prefixLength: Int

    /// The block `text` (`address/length`; an address alone is a block of one), or nil. Bits set beyond the prefix
    /// are refused (`10.0.0.1/8` is a mistake, not `10.0.0.0/8`).
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let maximum = address.bytes.count * 8
        var length = maximum
        if parts.count == 2 {
            guard parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(parts[1]), (0...maximum).contains(value) else {
                return nil
            }
            length = value
        }
        guard Self.masked(address.bytes, length) == address.bytes else { return nil }
        network = address
        prefixLength = length
    }

    /// Whether `address` (of the same family) is in the block.
    public func contains(_ address: IPAddress) -> Bool {
        address.bytes.count == network.bytes.count && Self.masked(address.bytes, prefixLength) == network.bytes
    }

    public var description: String { "\(network)/\(prefixLength)" }

    private static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = min(max(length - index * 8, 0), 8)
            return bits == 8 ? byte : byte & ~(0xFF >> UInt8(bits))
        }
    }
}
