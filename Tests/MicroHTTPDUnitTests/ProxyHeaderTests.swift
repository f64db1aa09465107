import MicroHTTPD
import TabTestSupport
import Testing

/// The PROXY protocol header parser: version 1 and 2 vectors, whole, cut short, oversized and malformed.
@Suite struct ProxyHeaderTests {
    /// A version 2 header: `command` (0 LOCAL, 1 PROXY), `family`, then `block` (addresses and TLVs).
    static func version2(command: UInt8 = 1, family: UInt8, _ block: [UInt8]) -> [UInt8] {
        ProxyHeaderBytes.signature + [0x20 | command, family, UInt8(block.count >> 8), UInt8(block.count & 0xFF)] + block
    }

    @Test func version1TCP4NamesTheClientAndItsLength() throws {
        let line = Array("PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n".utf8)
        let parsed = try ProxyHeader.parse(line + Array("GET / HTTP/1.1\r\n".utf8))
        guard case .complete(.proxied(let source, let destination), let length) = parsed else {
            Issue.record("expected a proxied header, got \(parsed)")
            return
        }
        #expect(length == line.count, "only the header is consumed; the request behind it is the client's")
        #expect(source == ProxiedAddress(family: .inet4, bytes: [203, 0, 113, 7], port: 51234))
        #expect(source.description == "203.0.113.7")
        #expect(destination.port == 443)
    }

    @Test func version1TCP6NamesTheClient() throws {
        let parsed = try ProxyHeader.parse(Array("PROXY TCP6 2001:db8::7 2001:db8::1 65535 0\r\n".utf8))
        guard case .complete(.proxied(let source, let destination), _) = parsed else {
            Issue.record("expected a proxied header, got \(parsed)")
            return
        }
        #expect(source.family == .inet6)
        #expect(source.description == "2001:db8::7")
        #expect(source.port == 65535)
        #expect(destination.port == 0)
    }

    @Test func version1UnknownIsTheProxyItself() throws {
        #expect(try ProxyHeader.parse(Array("PROXY UNKNOWN\r\n".utf8)) == .complete(.local, length: 15))
        let anything = Array("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n".utf8)
        #expect(try ProxyHeader.parse(anything) == .complete(.local, length: anything.count))
    }

    @Test func version1CutShortAsksForMore() throws {
        let line = Array("PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n".utf8)
        for cut in 0..<line.count {
            guard case .needMore(let atLeast) = try ProxyHeader.parse(line.prefix(cut)) else {
                Issue.record("a header cut at \(cut) bytes is not complete")
                continue
            }
            #expect(atLeast > cut)
        }
    }

    @Test func version1LongerThan107BytesIsRefused() throws {
        let long = Array(("PROXY UNKNOWN " + String(repeating: "x", count: 100)).utf8)
        #expect(throws: ProxyHeaderError.tooLong) { try ProxyHeader.parse(long) }
        #expect(throws: ProxyHeaderError.tooLong) { try ProxyHeader.parse(long + [0x0D, 0x0A]) }
        let longest = Array(("PROXY UNKNOWN " + String(repeating: "x", count: 91) + "\r\n").utf8)
        #expect(longest.count == 107)
        #expect(try ProxyHeader.parse(longest) == .complete(.local, length: 107))
    }

    @Test(arguments: [
        "PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\n",  // LF without CR
        "PROXY TCP4 203.0.113.7 192.0.2.1 51234\r\n",  // a field missing
        "PROXY TCP4 203.0.113.7  192.0.2.1 51234 443\r\n",  // two spaces
        "PROXY TCP4 203.0.113.7 192.0.2.1 51234 443 9\r\n",  // a field too many
        "PROXY TCP4 2001:db8::7 192.0.2.1 51234 443\r\n",  // IPv6 under TCP4
        "PROXY TCP6 203.0.113.7 2001:db8::1 51234 443\r\n",  // IPv4 under TCP6
        "PROXY TCP4 203.0.113.256 192.0.2.1 51234 443\r\n",  // not an address
        "PROXY TCP4 203.0.113.7 192.0.2.1 65536 443\r\n",  // port out of range
        "PROXY TCP4 203.0.113.7 192.0.2.1 051234 443\r\n",  // leading zero
        "PROXY TCP4 203.0.113.7 192.0.2.1 +5123 443\r\n",  // sign
        "PROXY UDP4 203.0.113.7 192.0.2.1 51234 443\r\n",  // not TCP
        "PROXY tcp4 203.0.113.7 192.0.2.1 51234 443\r\n",  // case matters
        "PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\t\r\n",  // control byte
    ])
    func malformedVersion1IsRefused(_ line: String) {
        #expect(throws: ProxyHeaderError.self) { try ProxyHeader.parse(Array(line.utf8)) }
    }

    @Test func anHTTPRequestIsNotAProxyHeader() throws {
        #expect(throws: ProxyHeaderError.notProxyProtocol) { try ProxyHeader.parse(Array("GET / HTTP/1.1\r\n".utf8)) }
        #expect(throws: ProxyHeaderError.notProxyProtocol) { try ProxyHeader.parse(Array("PROXX".utf8)) }
        #expect(throws: ProxyHeaderError.notProxyProtocol) { try ProxyHeader.parse([0x0D, 0x0A, 0x0D, 0x0A, 0x01]) }
        #expect(try ProxyHeader.parse([UInt8]()) == .needMore(atLeast: 1))
    }

    @Test func version2IPv4NamesTheClientAndSkipsTLVs() throws {
        let tlv: [UInt8] = [0x05, 0x00, 0x03, 0x61, 0x62, 0x63]  // PP2_TYPE_UNIQUE_ID "abc"
        let header = Self.version2(family: 0x11, ProxyHeaderBytes.ipv4Block + tlv)
        let parsed = try ProxyHeader.parse(header + Array("GET /".utf8))
        let source = ProxiedAddress(family: .inet4, bytes: [203, 0, 113, 7], port: 51234)
        let destination = ProxiedAddress(family: .inet4, bytes: [192, 0, 2, 1], port: 443)
        #expect(parsed == .complete(.proxied(source: source, destination: destination), length: header.count))
    }

    @Test func version2IPv6NamesTheClient() throws {
        let source: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [7]
        let destination: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]
        let header = Self.version2(family: 0x21, source + destination + [0xC8, 0x22, 0x01, 0xBB])
        guard case .complete(.proxied(let client, _), 52) = try ProxyHeader.parse(header) else {
            Issue.record("expected a 52-byte proxied header")
            return
        }
        #expect(client.description == "2001:db8::7")
        #expect(client.port == 51234)
    }

    @Test func version2LocalAndUnspecifiedAreTheProxyItself() throws {
        #expect(try ProxyHeader.parse(Self.version2(command: 0, family: 0x00, [])) == .complete(.local, length: 16))
        // LOCAL ignores whatever address block it carries.
        let local = Self.version2(command: 0, family: 0x11, ProxyHeaderBytes.ipv4Block)
        #expect(try ProxyHeader.parse(local) == .complete(.local, length: 28))
        #expect(try ProxyHeader.parse(Self.version2(family: 0x00, [])) == .complete(.local, length: 16))
    }

    @Test func version2CutShortAsksForTheWholeLength() throws {
        let header = Self.version2(family: 0x11, ProxyHeaderBytes.ipv4Block)
        for cut in 0..<header.count {
            guard case .needMore(let atLeast) = try ProxyHeader.parse(header.prefix(cut)) else {
                Issue.record("a header cut at \(cut) bytes is not complete")
                continue
            }
            #expect(atLeast > cut)
            if cut >= 16 { #expect(atLeast == header.count) }
        }
    }

    @Test func version2OversizedIsRefusedBeforeItsBytesArrive() {
        let fixed = ProxyHeaderBytes.signature + [0x21, 0x11, 0xFF, 0xFF]
        #expect(throws: ProxyHeaderError.tooLong) { try ProxyHeader.parse(fixed) }
    }

    @Test func malformedVersion2IsRefused() {
        let wrongVersion = ProxyHeaderBytes.signature + [0x11, 0x11, 0x00, 0x0C] + ProxyHeaderBytes.ipv4Block
        #expect(throws: ProxyHeaderError.self) { try ProxyHeader.parse(wrongVersion) }
        let wrongCommand = ProxyHeaderBytes.signature + [0x22, 0x11, 0x00, 0x0C] + ProxyHeaderBytes.ipv4Block
        #expect(throws: ProxyHeaderError.self) { try ProxyHeader.parse(wrongCommand) }
        let shortBlock = Self.version2(family: 0x11, Array(ProxyHeaderBytes.ipv4Block.prefix(11)))
        #expect(throws: ProxyHeaderError.self) { try ProxyHeader.parse(shortBlock) }
        let shortIPv6 = Self.version2(family: 0x21, [UInt8](repeating: 1, count: 35))
        #expect(throws: ProxyHeaderError.self) { try ProxyHeader.parse(shortIPv6) }
        let udp = Self.version2(family: 0x12, ProxyHeaderBytes.ipv4Block)
        #expect(throws: ProxyHeaderError.self) { try ProxyHeader.parse(udp) }
        let unix = Self.version2(family: 0x31, [UInt8](repeating: 0x61, count: 216))
        #expect(throws: ProxyHeaderError.self) { try ProxyHeader.parse(unix) }
    }
}
