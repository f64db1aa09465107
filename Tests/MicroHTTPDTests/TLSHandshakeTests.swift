import Foundation
import TabTestSupport
import Testing

@testable import MicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

/// Clients that start a TLS handshake and stop: waiting for them costs no CPU, and they are cut off at the
/// handshake deadline, well before the header deadline, while others are served.
@Suite(.serialized) struct TLSHandshakeTests {
    /// The first 11 bytes of a ClientHello: a record header and the start of the handshake message.
    static let partialClientHello: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0xF8, 0x01, 0x00, 0x00, 0xF4, 0x03, 0x03]

    /// CPU seconds (user + system) this process has used.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// libmicrohttpd 0.9.75 over epoll retried such a connection in a loop (a core at 100% per stalled client for
    /// the connection's whole life); with poll(2) the worker sleeps until bytes come.
    @Test func aStalledHandshakeCostsNoCPU() async throws {
        let directory = try TLSTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try TLSTests.Authority("stall", in: directory)
        let (server, _) = try startServer {
            $0.tlsCertificate = authority.certificate
            $0.tlsPrivateKey = authority.privateKey
        }
        defer { server.stop() }
        var stalled: [RawConnection] = []
        for _ in 0..<50 {
            let connection = try RawConnection(port: server.port)
            try connection.send(Self.partialClientHello)
            stalled.append(connection)
        }
        try await Task.sleep(for: .milliseconds(200))
        let before = Self.processCPUSeconds()
        try await Task.sleep(for: .seconds(2))
        let used = Self.processCPUSeconds() - before
        // A spinning worker alone burns ~2 s of CPU in these 2 s; a waiting one next to nothing.
        #expect(used < 0.5, "\(used) s of CPU in 2 s while \(stalled.count) handshakes wait")
        let served = try await TLSTests.curl(server.port, ca: authority.caFile, [])
        #expect(served.status == 0 && served.body.hasPrefix("GET /x"))
    }

    @Test func aStalledHandshakeIsCutOffAtTheHandshakeDeadline() async throws {
        let directory = try TLSTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try TLSTests.Authority("deadline", in: directory)
        let (server, _) = try startServer {
            $0.tlsCertificate = authority.certificate
            $0.tlsPrivateKey = authority.privateKey
            $0.tlsHandshakeDeadlineSeconds = 1
            $0.headerDeadlineSeconds = 30
        }
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send(Self.partialClientHello)
        let ended = await connection.untilClosed(seconds: 5)
        #expect(ended.closed, "the connection is closed at the handshake deadline, not the 30 s header deadline")
        // A full handshake followed by a request is not cut off by that deadline.
        let served = try await TLSTests.curl(server.port, ca: authority.caFile, [])
        #expect(served.status == 0 && served.body.hasPrefix("GET /x"))
    }
}
