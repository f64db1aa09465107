import Foundation
import MicroHTTPD
import TabTestSupport
import Testing

/// Stop within a bound, the stopping hook, and deferred HEAD.
@Suite struct StopTests {
    /// Runs `server.stop()` on a thread of its own and returns how long it took.
    func timedStop(_ server: HTTPServer) async -> Double {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                let started = now()
                server.stop()
                continuation.resume(returning: now() - started)
            }
            thread.start()
        }
    }

    @Test func aClientDrippingItsBodyDoesNotHoldStopPastTheGrace() async throws {
        let (server, _) = try startServer { $0.stopGraceSeconds = 1 }
        let connection = try RawConnection(port: server.port)
        try connection.send("PUT /p HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        #expect(try await eventually { server.requestsInFlight == 1 })
        let took = await timedStop(server)
        #expect(took >= 0.9 && took < 1.5, "stop took \(took) s with a grace of 1 s")
        #expect(await connection.untilClosed(seconds: 1).closed)
    }

    /// While a held request keeps the stop in its grace, a new connection is closed at once, unanswered (the
    /// accept policy refuses it: the epoll daemon is not quiesced, see `Daemon.closeListener`), and the held one
    /// still gets its 503.
    @Test func aStoppingServerClosesNewConnectionsUnanswered() async throws {
        let (server, _) = try startServer { $0.stopGraceSeconds = 1 }
        let held = try RawConnection(port: server.port)
        try held.send("GET /defer HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await eventually { server.suspendedConnections == 1 })
        let port = server.port
        async let took = timedStop(server)
        try await Task.sleep(for: .milliseconds(300))
        let late = try RawConnection(port: port)
        late.sendTolerant(Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let (bytes, closed) = await late.untilClosed(seconds: 0.5)
        #expect(bytes.isEmpty && closed, "a connection during the stop's grace: \(bytes.count) bytes, closed \(closed)")
        #expect(await took < 1.6)
        #expect(try await held.response().status == 503)
    }

    /// Stopping while clients connect and send on both workers, again and again, ends every time (the stop's
    /// `MHD_quiesce_daemon` raced the epoll workers over the listening socket and could abort the process).
    @Test func stoppingWhileClientsConnectNeverAborts() async throws {
        for _ in 0..<40 {
            let (server, _) = try startServer { $0.stopGraceSeconds = 0.2 }
            let port = server.port
            let clients = (0..<4).map { _ in
                Thread {
                    for _ in 0..<200 {
                        guard let connection = try? RawConnection(port: port) else { return }
                        connection.sendTolerant(Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
                        _ = try? connection.readResponse(seconds: 1)
                    }
                }
            }
            for client in clients { client.start() }
            try await Task.sleep(for: .milliseconds(15))
            let took = await timedStop(server)
            #expect(took < 1, "stop took \(took) s")
        }
    }

    @Test func heldRequestsAreAnsweredThroughTheStoppingHook() async throws {
        let handler = ProbeHandler(answerOnStop: HTTPResponse(status: 304))
        let (server, _) = try startServer(handler) { $0.stopGraceSeconds = 5 }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /defer HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await eventually { server.suspendedConnections == 1 })
        let took = await timedStop(server)
        #expect(took < 0.5, "the hook answered at once; stop took \(took) s")
        #expect(try await connection.response().status == 304)
    }

    @Test func aHeldRequestThatOutlivesTheGraceIsAnswered503() async throws {
        let (server, _) = try startServer { $0.stopGraceSeconds = 0.5 }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /defer HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await eventually { server.suspendedConnections == 1 })
        let took = await timedStop(server)
        #expect(took >= 0.45 && took < 1.0, "stop took \(took) s with a grace of 0.5 s")
        let (bytes, _) = await connection.untilClosed(seconds: 1)
        let answer = RawResponse.all(in: bytes).first
        #expect(answer?.status == 503 && answer?.header("Content-Type") == "application/problem+json")
    }

    @Test func aDeferredHEADAnswersHeadersOnly() async throws {
        let handler = ProbeHandler()
        let (server, _) = try startServer(handler)
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("HEAD /defer HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await eventually { server.suspendedConnections == 1 })
        handler.gate.open(with: HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/plain")], body: Array("hello".utf8)))
        let answer = try await connection.response(head: true)
        #expect(answer.status == 200 && answer.header("Content-Length") == "5" && answer.body.isEmpty)
        try connection.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await connection.response().text == "GET /after body=0 accept=-", "no stray body bytes before the next answer")
    }
}

/// A field sent on several lines is one comma-separated list (RFC 9110 §5.3).
@Suite struct CombinedFieldTests {
    @Test func repeatedFieldLinesAreJoinedInOrder() async throws {
        let (server, _) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send(
            "GET /a HTTP/1.1\r\nHost: x\r\nAccept: text/plain  \r\nX-Other: 1\r\naccept:application/json\r\nACCEPT: */*;q=0.1\r\n\r\n")
        #expect(try await connection.response().text == "GET /a body=0 accept=text/plain, application/json, */*;q=0.1")
        try connection.send("GET /b HTTP/1.1\r\nHost: x\r\nAccept:   text/html \r\n\r\n")
        #expect(try await connection.response().text == "GET /b body=0 accept=text/html")
        try connection.send("GET /c HTTP/1.1\r\nHost: x\r\nAccept:\r\nAccept: a\r\n\r\n")
        #expect(try await connection.response().text == "GET /c body=0 accept=, a")
    }
}
