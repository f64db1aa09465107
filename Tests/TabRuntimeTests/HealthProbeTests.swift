import Foundation
import Testing

@testable import TabRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// `HealthProbe` (the image's HEALTHCHECK) against real sockets on 127.0.0.1: a listener that answers a canned
/// reply, one that never answers, and a port with no listener. scripts/container-test runs it against tabserver.
struct HealthProbeTests {
    /// A listening socket on 127.0.0.1, port 0; `answer` (if any) is written to the first connection after its
    /// request head arrives.
    final class Listener: @unchecked Sendable {
        // Safety: `socketFD` and `port` are set once in init; the accepting thread only reads them.
        let socketFD: Int32
        let port: UInt16

        init(answer: String?) throws {
            let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listening, $0, length) == 0 && getsockname(listening, $0, &length) == 0
                }
            }
            socketFD = listening
            port = UInt16(bigEndian: address.sin_port)
            try #require(bound && listen(listening, 4) == 0)
            guard let answer else { return }
            Thread.detachNewThread {
                let connection = accept(listening, nil, nil)
                guard connection >= 0 else { return }
                var request: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 1024)
                while !String(decoding: request, as: UTF8.self).contains("\r\n\r\n") {
                    let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    request += buffer[..<count]
                }
                _ = Array(answer.utf8).withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(connection)
            }
        }

        deinit { close(socketFD) }
    }

    @Test func aTwoHundredIsReadAsTwoHundred() throws {
        let listener = try Listener(answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        #expect(try HealthProbe(host: "127.0.0.1", port: listener.port, timeout: 5).status(of: "/healthz") == 200)
    }

    @Test func aServiceUnavailableIsReadAsIs() throws {
        let listener = try Listener(answer: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        #expect(try HealthProbe(host: "127.0.0.1", port: listener.port, timeout: 5).status(of: "/healthz") == 503)
    }

    @Test func anAnswerThatIsNotHTTPIsAnError() throws {
        let listener = try Listener(answer: "SSH-2.0-OpenSSH_9.2\r\n")
        #expect(throws: HealthProbeError.self) {
            try HealthProbe(host: "127.0.0.1", port: listener.port, timeout: 5).status(of: "/healthz")
        }
    }

    @Test func aListenerThatNeverAnswersTimesOutAtTheDeadline() throws {
        let listener = try Listener(answer: nil)  // the kernel completes the handshake; nobody reads or writes
        let started = Date()
        do {
            _ = try HealthProbe(host: "127.0.0.1", port: listener.port, timeout: 0.5).status(of: "/healthz")
            Issue.record("a status from a listener that never answers")
        } catch {
            guard case .timedOut = error else { throw error }
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed >= 0.45 && elapsed < 3)
    }

    @Test func noListenerIsAConnectError() throws {
        let port = try Listener(answer: nil).port  // bound, then closed at deinit: nothing listens there now
        do {
            _ = try HealthProbe(host: "127.0.0.1", port: port, timeout: 2).status(of: "/healthz")
            Issue.record("a status with no listener")
        } catch {
            guard case .connect = error else { throw error }
        }
    }

    @Test func acceptsChecksOnlyThatThePortTakesAConnection() throws {
        let listener = try Listener(answer: nil)
        try HealthProbe(host: "127.0.0.1", port: listener.port, timeout: 2).accepts()
        let closedPort = try Listener(answer: nil).port
        #expect(throws: HealthProbeError.self) { try HealthProbe(host: "127.0.0.1", port: closedPort, timeout: 2).accepts() }
    }

    @Test func anAddressThatIsNotALiteralIsRefused() {
        #expect(throws: HealthProbeError.self) { try HealthProbe(host: "not-an-address", port: 80, timeout: 1).status(of: "/") }
    }

    @Test func anIPv6LiteralIsDialledAndAMalformedOneRefusedOfEitherFamily() throws {
        let closedPort = try Listener(answer: nil).port
        // Parsed, then dialled: refused, or unreachable where the host has no IPv6, but never a bad address.
        do {
            try HealthProbe(host: "::1", port: closedPort, timeout: 2).accepts()
            Issue.record("a connection with no listener")
        } catch {
            guard case .connect = error else { throw error }
        }
        for host in ["::1::2", "127.0.0.256"] {
            do {
                try HealthProbe(host: host, port: closedPort, timeout: 2).accepts()
                Issue.record("\(host) was dialled")
            } catch {
                guard case .badAddress(host) = error else { throw error }
            }
        }
    }
}
