import Foundation
import MicroHTTPD
import TabTestSupport
import Testing

/// Serves `/derived/N`, a response over the body of a response that only the derived one still references, with
/// header fields of its own (`X-Derived: N`).
private final class DerivedHandler: HTTPHandler {
    let derived: [PreparedResponse]

    init(bodies: [[UInt8]]) throws {
        // The originals are dropped at the end of this initializer: only the derived responses keep them alive.
        derived = try bodies.enumerated().map { index, body in
            let original = try PreparedResponse(status: 200, headers: [HTTPHeader("ETag", "\"\(index)\"")], body: body)
            return try PreparedResponse(
                status: 200, headers: [HTTPHeader("ETag", "\"\(index)\""), HTTPHeader("X-Derived", "\(index)")], sharingBodyOf: original)
        }
    }

    func handle(_ request: borrowing HTTPRequest) -> HTTPReply {
        guard let index = Int(request.path.split(separator: "/").last ?? ""), index < derived.count else {
            return .response(HTTPResponse(status: 404))
        }
        return .prepared(derived[index])
    }

    func reject(_ violation: RequestLimitViolation) -> HTTPResponse { HTTPResponse(status: 400) }
}

/// A version's immutable answer and a signed answer are prepared once over the plain answer's body
/// (`PreparedResponse(status:headers:sharingBodyOf:)`): the same bytes, their own header fields, no copy, and the
/// body stays valid as long as the derived response is used, whatever happens to the one it came from.
@Suite struct SharedBodyResponseTests {
    @Test func aDerivedResponseSendsTheSharedBodyWithItsOwnFields() async throws {
        let bodies: [[UInt8]] = [[], Array("{}".utf8), (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }]
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), handler: try DerivedHandler(bodies: bodies))
        defer { server.stop() }
        let client = HTTPTestClient(port: server.port)
        for round in 0..<3 {
            for (index, body) in bodies.enumerated() {
                let answer = try await client.send("GET", "/derived/\(index)")
                #expect(answer.status == 200 && answer.body == body, "body \(index), round \(round)")
                #expect(answer.header("X-Derived") == "\(index)" && answer.header("Content-Length") == "\(body.count)")
            }
        }
        let head = try await client.send("HEAD", "/derived/2")
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == "70000")
    }

    @Test func aBodilessResponseDerivesABodilessOne() throws {
        let original = try PreparedResponse(status: 304, headers: [HTTPHeader("ETag", "\"a\"")], announcingLength: 1234)
        let derived = try PreparedResponse(status: 304, headers: [HTTPHeader("ETag", "\"a\"")], sharingBodyOf: original)
        #expect(derived.announcedLength == 1234 && derived.body.isEmpty)
    }
}
