import MicroHTTPD
import TabTestSupport
import Testing

/// Decide before reading: a request that announces a body is admitted or refused when its headers are complete;
/// a refusal is answered at once, no `100 Continue` is sent and its body is never read; bodies in flight stay
/// within a memory budget.
@Suite struct AdmissionTests {
    @Test func aRefusedRequestIsAnsweredBeforeItsBodyWithout100Continue() async throws {
        let (server, handler) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        let started = now()
        try connection.send("PUT /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n")
        let (bytes, closed) = await connection.untilClosed(seconds: 2)
        let responses = RawResponse.all(in: bytes)
        #expect(responses.map(\.status) == [403], "the refusal only: no 100 Continue before it")
        #expect(closed && now() - started < 1, "answered and closed at once, without waiting for the body")
        #expect(handler.admitted.load(ordering: .relaxed) == 1 && handler.handled.load(ordering: .relaxed) == 0)
        #expect(server.bodyBytesReserved == 0)
    }

    @Test func aDeclaredLengthOverTheLimitIs413AtOnce() async throws {
        let (server, handler) = try startServer { $0.maxBodyBytes = 1000 }
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("PUT /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\nExpect: 100-continue\r\n\r\n")
        let (bytes, closed) = await connection.untilClosed(seconds: 2)
        #expect(RawResponse.all(in: bytes).map(\.status) == [413])
        #expect(closed)
        #expect(handler.admitted.load(ordering: .relaxed) == 0, "the limit is checked before the handler is asked")
    }

    /// What the admission decided reaches the handler with the body, so that it is not decided twice.
    @Test func whatAdmissionNotedReachesTheHandlerWithTheBody() async throws {
        let (server, handler) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("PUT /note/a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd")
        let response = try await connection.response()
        #expect(response.text == "PUT /note/a body=4 accept=- admission=noted /note/a")
        try connection.send("PUT /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab")
        #expect(try await connection.response().text == "PUT /plain body=2 accept=-", "no note when admission noted none")
        #expect(handler.admitted.load(ordering: .relaxed) == 2 && handler.handled.load(ordering: .relaxed) == 2)
    }

    @Test func anAdmittedRequestGets100ContinueThenItsAnswer() async throws {
        let (server, handler) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("PUT /p HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        #expect(try await connection.response().status == 100)
        try connection.send("abcd")
        #expect(try await connection.response().text == "PUT /p body=4 accept=-")
        #expect(handler.admitted.load(ordering: .relaxed) == 1)
    }

    @Test func bodilessGETIsNotAskedButAGETWithABodyIs() async throws {
        let (server, handler) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /refuse HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await connection.response().status == 200)
        #expect(handler.admitted.load(ordering: .relaxed) == 0)
        try connection.send("GET /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        #expect(try await connection.response().status == 403)
        #expect(handler.admitted.load(ordering: .relaxed) == 1)
    }

    /// Budget 1000 bytes: one upload holding 800 leaves no room for another 800 (503, Retry-After, at once), but
    /// room for 100; the reservation is given back when the upload completes.
    @Test func bodiesBeyondTheBudgetAre503WithRetryAfter() async throws {
        let (server, _) = try startServer { $0.bodyBudgetBytes = 1000 }
        defer { server.stop() }
        let holder = try RawConnection(port: server.port)
        try holder.send("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 800\r\n\r\n" + String(repeating: "a", count: 100))
        #expect(try await eventually { server.bodyBytesReserved == 800 })

        let refused = try RawConnection(port: server.port)
        try refused.send("PUT /b HTTP/1.1\r\nHost: x\r\nContent-Length: 800\r\n\r\n")
        let (bytes, closed) = await refused.untilClosed(seconds: 2)
        let answer = RawResponse.all(in: bytes).first
        #expect(answer?.status == 503 && answer?.header("Retry-After") == "2" && closed)
        #expect(answer?.header("Content-Type") == "application/problem+json")

        let small = try RawConnection(port: server.port)
        try small.send("PUT /c HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + String(repeating: "c", count: 100))
        #expect(try await small.response().text == "PUT /c body=100 accept=-")

        try holder.send(String(repeating: "a", count: 700))
        #expect(try await holder.response().text == "PUT /a body=800 accept=-")
        #expect(try await eventually { server.bodyBytesReserved == 0 })
    }

    /// A chunked body has no declared length: it is counted as it arrives; beyond the budget it is dropped, read to
    /// its end and answered 503; beyond the body limit, 413. The budget is whole again afterwards.
    @Test func chunkedBodiesAreCountedAsTheyArrive() async throws {
        let (server, _) = try startServer {
            $0.bodyBudgetBytes = 1000
            $0.maxBodyBytes = 2000
        }
        defer { server.stop() }
        let chunk = "3E8\r\n" + String(repeating: "z", count: 1000) + "\r\n"
        let overBudget = try RawConnection(port: server.port)
        try overBudget.send("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk + "0\r\n\r\n")
        let budgetAnswer = try await overBudget.response()
        #expect(budgetAnswer.status == 503 && budgetAnswer.header("Retry-After") == "2")

        let tooLarge = try RawConnection(port: server.port)
        let (server2, _) = try startServer { $0.maxBodyBytes = 1500 }
        defer { server2.stop() }
        let tooLargeThere = try RawConnection(port: server2.port)
        try tooLargeThere.send("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk + "0\r\n\r\n")
        #expect(try await tooLargeThere.response().status == 413)

        try tooLarge.send("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + "0\r\n\r\n")
        #expect(try await tooLarge.response().text == "POST /p body=1000 accept=-", "within the budget once the first was over")
        #expect(try await eventually { server.bodyBytesReserved == 0 })
    }
}
