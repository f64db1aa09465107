import MicroHTTPD
import TabTestSupport
import Testing

/// Request limits: the query counts toward the header limit, an over-long target is 414 with a problem document,
/// one address gets a share of the connections, and dripping headers are cut off.
@Suite struct LimitsTests {
    /// 7,000 bytes of query and a 9,500-byte field: 16.5 KB together, over the 16 KiB limit (the path alone
    /// and the field would fit).
    @Test func theQueryCountsTowardTheHeaderLimit() async throws {
        let (server, _) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        let query = "?q=" + String(repeating: "q", count: 7_000)
        try connection.send("GET /q\(query) HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 9_500))\r\n\r\n")
        let (bytes, closed) = await connection.untilClosed(seconds: 2)
        #expect(RawResponse.all(in: bytes).map(\.status) == [431])
        #expect(closed)
    }

    @Test func anOverLongTargetIs414WithAProblemDocument() async throws {
        let (server, _) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /\(String(repeating: "p", count: 9_000)) HTTP/1.1\r\nHost: x\r\n\r\n")
        let (bytes, closed) = await connection.untilClosed(seconds: 2)
        let answer = RawResponse.all(in: bytes).first
        #expect(answer?.status == 414)
        #expect(answer?.header("Content-Type") == "application/problem+json")
        #expect(closed)
    }

    /// Past libmicrohttpd's per-connection memory (header limit + 4 KiB) the request line never reaches the
    /// server's code: libmicrohttpd 0.9.75 answers 414 itself, with its own HTML body (a known limit, measured).
    @Test func aTargetBeyondTheConnectionMemoryIsStill414() async throws {
        let (server, _) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /\(String(repeating: "p", count: 40_000)) HTTP/1.1\r\nHost: x\r\n\r\n")
        let (bytes, _) = await connection.untilClosed(seconds: 2)
        #expect(RawResponse.all(in: bytes).first?.status == 414)
    }

    /// 200 sockets from 127.0.0.2 drip a header block; with a share of 20 per address (of 100 connections) a
    /// request from 127.0.0.1 is answered within a second.
    @Test func oneAddressCannotTakeEveryConnection() async throws {
        let (server, _) = try startServer {
            $0.connectionLimit = 100
            $0.perIPConnectionLimit = 20
        }
        defer { server.stop() }
        var drippers: [RawConnection] = []
        for _ in 0..<200 {
            guard let dripper = try? RawConnection(port: server.port, source: "127.0.0.2") else { continue }
            try? dripper.send("GET / HTTP/1.1\r\nHo")
            drippers.append(dripper)
        }
        let started = now()
        let connection = try RawConnection(port: server.port, source: "127.0.0.1")
        try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try await connection.response(seconds: 1)
        #expect(answer.status == 200)
        #expect(now() - started < 1)
        #expect(server.openConnections <= 21, "the address's share, and the one request")
        withExtendedLifetime(drippers) {}
    }

    /// The same attack without a share: every slot is taken, and 127.0.0.1 waits in the kernel's backlog
    /// (proves the test above can fail).
    @Test func withoutAShareOneAddressTakesEverySlot() async throws {
        let (server, _) = try startServer {
            $0.connectionLimit = 100
            $0.perIPConnectionLimit = 0
        }
        defer { server.stop() }
        var drippers: [RawConnection] = []
        for _ in 0..<200 {
            guard let dripper = try? RawConnection(port: server.port, source: "127.0.0.2") else { continue }
            try? dripper.send("GET / HTTP/1.1\r\nHo")
            drippers.append(dripper)
        }
        let connection = try RawConnection(port: server.port, source: "127.0.0.1")
        try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        await #expect(throws: RawConnection.Failure.self) { try await connection.response(seconds: 1) }
        withExtendedLifetime(drippers) {}
    }

    /// At the connection limit the next connection is not accepted and closed: it waits in the kernel's backlog
    /// and is served once a connection ends.
    @Test func pastTheLimitAConnectionWaitsAndIsServedWhenOneCloses() async throws {
        let (server, _) = try startServer {
            $0.connectionLimit = 16  // the least the server takes
            $0.perIPConnectionLimit = 0
        }
        defer { server.stop() }
        var holders = try await holdEverySlot(of: server, limit: 16)
        let waiting = try RawConnection(port: server.port)
        try waiting.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(!waiting.waitReadable(seconds: 0.5), "answered or closed at the limit")
        holders.removeFirst()
        #expect(try await waiting.response(seconds: 2).status == 200)
        withExtendedLifetime(holders) {}
    }

    /// A client sending one header byte every 100 ms is cut off once the header deadline (0.5 s) passed
    /// (the watchdog sweeps four times a second).
    @Test func drippingHeadersAreCutOffAtTheDeadline() async throws {
        let (server, _) = try startServer { $0.headerDeadlineSeconds = 0.5 }
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        let started = now()
        var cutOff: Double?
        for byte in Array("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "s"), count: 30) {
            let sent = (try? connection.send([byte])) != nil
            let closed = sent ? await connection.untilClosed(seconds: 0.1).closed : true
            if closed {
                cutOff = now() - started
                break
            }
        }
        let elapsed = try #require(cutOff, "still connected after 6 s of dripping")
        #expect(elapsed >= 0.5 && elapsed < 1.2, "cut off after \(elapsed) s")
    }
}
