import MicroHTTPD
import TabTestSupport
import Testing

/// The per-request index of field lines (``FieldIndex``) answers what libmicrohttpd's list does: lines combined in
/// order, names compared ignoring case, and a request with more lines than the index holds answered the same way.
@Suite struct FieldIndexTests {
    @Test(arguments: [0, 5, 15, 16, 40, 80])
    func fieldsAreCombinedTheSameWithAnyNumberOfOtherLines(others: Int) async throws {
        let (server, _) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        let filler = (0..<others).map { "X-Filler-\($0): \($0)\r\n" }.joined()
        // The Accept lines come first, in the middle and last, so that an index cut short would lose some.
        try connection.send(
            "GET /a HTTP/1.1\r\nHost: x\r\nAccept: text/plain  \r\n\(filler)aCCept:application/json\r\n\(filler)ACCEPT: */*;q=0.1\r\n\r\n")
        #expect(try await connection.response(seconds: 10).text == "GET /a body=0 accept=text/plain, application/json, */*;q=0.1")
        try connection.send("GET /b HTTP/1.1\r\nHost: x\r\n\(filler)\r\n")
        #expect(try await connection.response(seconds: 10).text == "GET /b body=0 accept=-")
    }

    @Test func aRequestWithABodyReadsItsFieldsFromTheIndexToo() async throws {
        let (server, _) = try startServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        try connection.send("PUT /p HTTP/1.1\r\nHost: x\r\nAccept: a\r\nContent-Length: 3\r\nAccept: b\r\n\r\nabc")
        #expect(try await connection.response(seconds: 10).text == "PUT /p body=3 accept=a, b")
    }
}
