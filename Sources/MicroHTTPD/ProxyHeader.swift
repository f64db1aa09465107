#if canImport(Glibc)
    import Glibc
#endif

/// The PROXY protocol header a layer-4 balancer (HAProxy `send-proxy`/`send-proxy-v2`, a cloud network load
/// balancer) writes before the client's first byte: who the client is. Version 1 is one text line
/// (`PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n`, at most 107 bytes); version 2 is binary (a 12-byte
/// signature, a command, a family, a length, the addresses, then TLVs, which are skipped).
///
/// Parsing is pure: ``parse(_:)`` looks at the bytes received so far and says whether they are a whole header (and
/// how many bytes it took, so exactly those are consumed and the request behind it is left), need more, or are not
/// a PROXY header at all.
public enum ProxyHeader: Equatable, Sendable {
    /// A proxied TCP connection: the client's address and port (`source`) and the address it connected to.
    case proxied(source: ProxiedAddress, destination: ProxiedAddress)
    /// The proxy speaks for itself (v2 `LOCAL`, v1 `UNKNOWN`, v2 `PROXY` with an unspecified family): a health
    /// check or a connection whose client the proxy does not know; the socket's peer is the address.
    case local

    /// The longest version 1 header, its CRLF included.
    public static let maxVersion1Bytes = 107
    /// The fixed part of a version 2 header: signature, command, family and length.
    public static let version2FixedBytes = 16
    /// The longest version 2 header accepted (the fixed part and 1 KiB of addresses and TLVs); a longer one is
    /// refused as ``ProxyHeaderError/tooLong``.
    public static let maxVersion2Bytes = version2FixedBytes + 1024
    /// The most bytes ``parse(_:)`` may need to see.
    public static let maxBytes = max(maxVersion1Bytes, maxVersion2Bytes)

    static let version1Prefix = Array("PROXY ".utf8)
    static let version2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]

    /// What the bytes received so far are.
    public enum Parse: Equatable, Sendable {
        /// A whole header, `length` bytes long; the bytes after it are the client's.
        case complete(ProxyHeader, length: Int)
        /// A header's beginning: at least `atLeast` bytes in all are needed.
        case needMore(atLeast: Int)
    }

    /// Parses the beginning of a connection's bytes.
    /// - Throws: ``ProxyHeaderError`` when the bytes are not, or cannot become, a valid PROXY header.
    public static func parse(_ bytes: some Collection<UInt8>) throws(ProxyHeaderError) -> Parse {
        let bytes = Array(bytes)
        if bytes.isEmpty { return .needMore(atLeast: 1) }
        if bytes.starts(with: version2Signature.prefix(bytes.count)) { return try parseVersion2(bytes) }
        if bytes.starts(with: version1Prefix.prefix(bytes.count)) { return try parseVersion1(bytes) }
        throw .notProxyProtocol
    }

    // MARK: Version 1

    private static func parseVersion1(_ bytes: [UInt8]) throws(ProxyHeaderError) -> Parse {
        guard let lineFeed = bytes.firstIndex(of: 0x0A) else {
            guard bytes.count < maxVersion1Bytes else { throw .tooLong }
            return .needMore(atLeast: bytes.count + 1)
        }
        let length = lineFeed + 1
        guard length <= maxVersion1Bytes else { throw .tooLong }
        guard lineFeed > 0, bytes[lineFeed - 1] == 0x0D else { throw .malformed("version 1 line does not end in CRLF") }
        let line = bytes[version1Prefix.count..<(lineFeed - 1)]
        guard line.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .malformed("version 1 line has a control byte") }
        let fields = line.split(separator: 0x20, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        switch fields.first {
        case "UNKNOWN":
            return .complete(.local, length: length)
        case "TCP4", "TCP6":
            let family: ProxiedAddress.Family = fields[0] == "TCP4" ? .inet4 : .inet6
            guard fields.count == 5 else { throw .malformed("version 1 \(fields[0]) needs four fields") }
            let source = try ProxiedAddress(text: fields[1], port: fields[3], family: family)
            let destination = try ProxiedAddress(text: fields[2], port: fields[4], family: family)
            return .complete(.proxied(source: source, destination: destination), length: length)
        default:
            throw .malformed("version 1 protocol is not TCP4, TCP6 or UNKNOWN")
        }
    }

    // MARK: Version 2

    private static func parseVersion2(_ bytes: [UInt8]) throws(ProxyHeaderError) -> Parse {
        guard bytes.count >= version2FixedBytes else { return .needMore(atLeast: version2FixedBytes) }
        let versionAndCommand = bytes[12]
        guard versionAndCommand >> 4 == 2 else { throw .malformed("version 2 signature with version \(versionAndCommand >> 4)") }
        let addressLength = Int(bytes[14]) << 8 | Int(bytes[15])
        let length = version2FixedBytes + addressLength
        guard length <= maxVersion2Bytes else { throw .tooLong }
        guard bytes.count >= length else { return .needMore(atLeast: length) }
        switch versionAndCommand & 0x0F {
        case 0x0: return .complete(.local, length: length)
        case 0x1: break
        default: throw .malformed("version 2 command \(versionAndCommand & 0x0F) is neither LOCAL nor PROXY")
        }
        let family = bytes[13]
        let block = bytes[version2FixedBytes..<length]
        func port(_ offset: Int) -> UInt16 { UInt16(block[block.startIndex + offset]) << 8 | UInt16(block[block.startIndex + offset + 1]) }
        switch family {
        case 0x00:
            return .complete(.local, length: length)
        case 0x11:
            guard addressLength >= 12 else { throw .malformed("version 2 TCP over IPv4 needs 12 address bytes") }
            let source = ProxiedAddress(family: .inet4, bytes: Array(block.prefix(4)), port: port(8))
            let destination = ProxiedAddress(family: .inet4, bytes: Array(block.dropFirst(4).prefix(4)), port: port(10))
            return .complete(.proxied(source: source, destination: destination), length: length)
        case 0x21:
            guard addressLength >= 36 else { throw .malformed("version 2 TCP over IPv6 needs 36 address bytes") }
            let source = ProxiedAddress(family: .inet6, bytes: Array(block.prefix(16)), port: port(32))
            let destination = ProxiedAddress(family: .inet6, bytes: Array(block.dropFirst(16).prefix(16)), port: port(34))
            return .complete(.proxied(source: source, destination: destination), length: length)
        default:
            throw .malformed("version 2 family 0x\(String(family, radix: 16)) is not TCP over IPv4 or IPv6")
        }
    }
}

/// An address and port a PROXY header names.
public struct ProxiedAddress: Equatable, Sendable, CustomStringConvertible {
    /// IPv4 or IPv6.
    public enum Family: Sendable { case inet4, inet6 }
    public let family: Family
    /// The address in network order: 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]
    public let port: UInt16

    public init(family: Family, bytes: [UInt8], port: UInt16) {
        self.family = family
        self.bytes = bytes
        self.port = port
    }

    /// Parses a version 1 address and port (decimal, 0–65535, no sign, no leading zero).
    init(text: String, port: String, family: Family) throws(ProxyHeaderError) {
        let digits = Array(port.utf8)
        guard (1...5).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }),
            digits.count == 1 || digits[0] != 0x30, let value = UInt16(port)
        else { throw .malformed("version 1 port '\(port)' is not 0–65535") }
        var buffer = [UInt8](repeating: 0, count: family == .inet4 ? 4 : 16)
        let converted = buffer.withUnsafeMutableBytes { inet_pton(family == .inet4 ? AF_INET : AF_INET6, text, $0.baseAddress) }
        guard converted == 1 else {
            throw .malformed("version 1 address '\(text)' is not an \(family == .inet4 ? "IPv4" : "IPv6") address")
        }
        self.init(family: family, bytes: buffer, port: value)
    }

    /// The address as text (`203.0.113.7`, `2001:db8::7`), as the access log and per-address limits name it.
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = bytes.withUnsafeBytes { inet_ntop(family == .inet4 ? AF_INET : AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) }
        guard ok != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Why a connection's first bytes are not an acceptable PROXY header.
public enum ProxyHeaderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes begin neither `PROXY ` nor the version 2 signature.
    case notProxyProtocol
    /// A version 1 line longer than 107 bytes, or a version 2 header beyond ``ProxyHeader/maxVersion2Bytes``.
    case tooLong
    /// A header that begins like one but breaks the protocol; the reason says where.
    case malformed(String)
    /// The peer closed the connection (or the socket failed) before the header was whole.
    case closed
    /// The header was not whole by its deadline.
    case timedOut

    public var description: String {
        switch self {
        case .notProxyProtocol: "the connection does not begin with a PROXY protocol header"
        case .tooLong: "the PROXY protocol header is longer than allowed"
        case .malformed(let reason): "malformed PROXY protocol header: \(reason)"
        case .closed: "the connection closed before its PROXY protocol header was whole"
        case .timedOut: "the PROXY protocol header did not arrive in time"
        }
    }
}
