import MicroHTTPD
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Reading a PROXY header off a real socket: exactly the header is taken, the request behind it stays, and a peer
/// that sends too little is given up at the deadline.
@Suite struct ProxyHeaderReaderTests {
    /// A connected pair of stream sockets: (the server's end, the peer's end).
    func socketPair() throws -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        return (ends[0], ends[1])
    }

    func send(_ bytes: [UInt8], to socket: Int32) {
        _ = bytes.withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
    }

    func rest(of socket: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return Array(buffer.prefix(max(0, count)))
    }

    @Test func version1IsTakenAndTheRequestBehindItStays() throws {
        let (server, peer) = try socketPair()
        defer { close(server); close(peer) }
        let request = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        send(Array("PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n".utf8) + request, to: peer)
        let header = try ProxyHeaderReader.read(socket: server, within: 2)
        guard case .proxied(let source, _) = header else {
            Issue.record("expected a proxied header, got \(header)")
            return
        }
        #expect(source.description == "203.0.113.7")
        #expect(rest(of: server) == request)
    }

    @Test func version2SentByteByByteIsTakenAndTheRequestStays() async throws {
        let (server, peer) = try socketPair()
        defer { close(server); close(peer) }
        let header =
            ProxyHeaderBytes.signature + [0x21, 0x11, 0x00, 0x0C] + ProxyHeaderBytes.ipv4Block + Array("GET".utf8)
        let writer = Task.detached {
            for byte in header {
                _ = [byte].withUnsafeBytes { write(peer, $0.baseAddress, 1) }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        let read = try ProxyHeaderReader.read(socket: server, within: 5)
        await writer.value
        guard case .proxied(let source, _) = read else {
            Issue.record("expected a proxied header, got \(read)")
            return
        }
        #expect(source.description == "203.0.113.7")
        #expect(rest(of: server) == Array("GET".utf8))
    }

    @Test func aPeerThatSendsPartOfAHeaderIsGivenUpAtTheDeadline() throws {
        let (server, peer) = try socketPair()
        defer { close(server); close(peer) }
        send(Array("PROXY TCP4 203.0.".utf8), to: peer)
        #expect(throws: ProxyHeaderError.timedOut) { try ProxyHeaderReader.read(socket: server, within: 0.2) }
    }

    @Test func aPeerThatClosesEarlyOrSendsHTTPIsRefused() throws {
        let (server, peer) = try socketPair()
        defer { close(server) }
        send(Array("PROXY TCP4".utf8), to: peer)
        close(peer)
        #expect(throws: ProxyHeaderError.closed) { try ProxyHeaderReader.read(socket: server, within: 2) }
        let (plain, client) = try socketPair()
        defer { close(plain); close(client) }
        send(Array("GET / HTTP/1.1\r\n".utf8), to: client)
        #expect(throws: ProxyHeaderError.notProxyProtocol) { try ProxyHeaderReader.read(socket: plain, within: 2) }
    }
}
