import ArgumentParser
import Foundation
import MicroHTTPD
import TabRuntime
import TabTestSupport
import Testing

@testable import tabserver

#if canImport(Glibc)
    import Glibc
#endif

/// `--max-connections` and `--max-held` (and their environment variables), their defaults from the open-file and
/// memory limits, and the held limit holding over a socket with the reserve for `/healthz` left free. The environment
/// variables are proven on the binary (`theHeldLimitHoldsOverASocket`): `setenv` in this process would race with
/// the suites that start processes (Foundation's `Process.run` reads `environ`).
@Suite(.serialized) struct ConnectionLimitsTests {
    static let gib = 1 << 30

    @Test func theDefaultConnectionLimitIsTheSmallerOfFilesAndMemory() {
        let http = HTTPServerConfiguration()
        #expect(http.connectionCostBytes == 24 * 1024)
        // 24 GiB and 20,000 descriptors: the descriptors decide.
        #expect(http.derivedConnectionLimit(openFiles: 20_000, memoryBytes: 24 * Self.gib) == 19_872)
        // A 512 MiB container with a million descriptors: half its memory at 24 KiB each.
        #expect(http.derivedConnectionLimit(openFiles: 1_048_576, memoryBytes: 512 << 20) == 10_922)
        // No open-file limit: memory alone.
        #expect(http.derivedConnectionLimit(openFiles: nil, memoryBytes: 24 * Self.gib) == 524_288)
        // Never below 64, however small the limits.
        #expect(http.derivedConnectionLimit(openFiles: 100, memoryBytes: 1 << 20) == 64)
        // A smaller header limit makes each connection cheaper, so more fit in the same memory.
        var small = HTTPServerConfiguration()
        small.maxHeaderBytes = 4096
        #expect(small.derivedConnectionLimit(openFiles: nil, memoryBytes: 512 << 20) > 10_922)
    }

    @Test func flagsWinOverTheEnvironmentAndTheDefault() throws {
        let serve = try Serve.parse(["--max-connections", "5000", "--max-held", "300"])
        let limits = try serve.connectionLimits(Environment(), http: HTTPServerConfiguration(), memoryBytes: Self.gib, openFiles: 20_000)
        #expect(limits.connections == 5000 && limits.held == 300)
        let defaults = try Serve.parse([]).connectionLimits(
            Environment(), http: HTTPServerConfiguration(), memoryBytes: 24 * Self.gib, openFiles: 20_000)
        #expect(defaults.connections == 19_872 && defaults.held == nil)
    }

    @Test func theHeaderLimitIsAFlagWithinItsRange() throws {
        #expect(try Serve.parse(["--max-header-bytes", "4096"]).headerLimit(Environment()) == 4096)
        #expect(try Serve.parse([]).headerLimit(Environment()) == nil)
        for wrong in ["2047", "65537"] {
            #expect(throws: ValidationError.self) { try Serve.parse(["--max-header-bytes", wrong]).headerLimit(Environment()) }
        }
        var small = HTTPServerConfiguration()
        small.maxHeaderBytes = 4096
        #expect(small.connectionPoolBytes == 8192)
    }

    @Test func theResumeSliceIsAFlagWithinItsRange() throws {
        #expect(try Serve.parse(["--resume-slice", "64"]).resumeSliceSize(Environment()) == 64)
        #expect(try Serve.parse([]).resumeSliceSize(Environment()) == nil)
        for wrong in ["0", "65537"] {
            #expect(throws: ValidationError.self) { try Serve.parse(["--resume-slice", wrong]).resumeSliceSize(Environment()) }
        }
        #expect(HTTPServerConfiguration().resumeSlice == 128)
    }

    @Test(arguments: [["--max-connections", "15"], ["--max-held", "0"], ["--max-held=-3"]])
    func limitsBelowTheirFloorAreUsageErrors(arguments: [String]) throws {
        let serve = try Serve.parse(arguments)
        #expect(throws: ValidationError.self) {
            try serve.connectionLimits(Environment(), http: HTTPServerConfiguration(), memoryBytes: Self.gib, openFiles: 20_000)
        }
    }

    /// The binary with `TABSERVER_MAX_CONNECTIONS=200` and `TABSERVER_MAX_HELD=3`: three long-polls are held, the
    /// fourth is 503 at once, `/healthz` and a write still answer, and SIGTERM answers the three with 304. With
    /// `TABSERVER_MAX_HEADER_BYTES=4096` a 3 KiB header block is served and a 5 KiB one is 431.
    @Test func theHeldLimitHoldsOverASocket() async throws {
        let server = try await SingleBinaryTests.LoneBinary(environment: [
            "TABSERVER_MAX_CONNECTIONS": "200", "TABSERVER_MAX_HELD": "3", "TABSERVER_PER_ADDRESS_CONNECTIONS": "0",
            "TABSERVER_MAX_HEADER_BYTES": "4096",
        ])
        defer { server.stop() }
        #expect(server.output.contains("up to 200 connections and 3 held long-polls"), "\(server.output)")
        let layout = #"{"schemaVersion":1,"tabs":[{"id":"home","title":"Home","rootViewController":"HomeViewController"}]}"#
        let put = try RawConnection(port: server.port)
        try put.send(
            "PUT /v1/accounts/held/layout HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer lone-binary-test-token-0123\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(layout.utf8.count)\r\n\r\n\(layout)")
        #expect(try put.readResponse(seconds: 5).status == 201)
        let (status, headers, _) = try SingleBinaryTests.get(server.port, "/v1/accounts/held/tabs")
        #expect(status == 200)
        let etag = try #require(headers["etag"])
        let poll = "GET /v1/accounts/held/tabs?wait=30 HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: \(etag)\r\n\r\n"
        var held: [RawConnection] = []
        for _ in 0..<3 {
            let connection = try RawConnection(port: server.port)
            try connection.send(poll)
            held.append(connection)
        }
        for connection in held { #expect(!connection.waitReadable(seconds: 0.3), "a poll within the limit is held") }
        let refused = try RawConnection(port: server.port)
        try refused.send(poll)
        let answer = try refused.readResponse(seconds: 5)
        #expect(answer.status == 503 && answer.header("Retry-After") != nil, "\(answer.status) \(answer.text)")
        #expect(answer.text.contains("3 long-polls"), "\(answer.text)")
        #expect(try SingleBinaryTests.get(server.port, "/healthz").0 == 200)
        let padding = { (bytes: Int) in "X-Padding: \(String(repeating: "a", count: bytes))\r\n" }
        #expect(try SingleBinaryTests.get(server.port, "/healthz", headers: padding(3000)).0 == 200)
        #expect(try SingleBinaryTests.get(server.port, "/healthz", headers: padding(5000)).0 == 431)
        kill(server.process.processIdentifier, SIGTERM)
        for connection in held { #expect(try connection.readResponse(seconds: 10).status == 304) }
    }
}
