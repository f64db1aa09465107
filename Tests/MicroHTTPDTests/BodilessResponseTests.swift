import Foundation
import MicroHTTPD
import TabTestSupport
import Testing

/// Serves, for header set N, the 304 built the old way over a copy of the body (`/buffered/N`), the bodiless one
/// announcing the same length (`/bodiless/N`), and a per-request copy of the bodiless one (`/copied/N`).
private final class NotModifiedHandler: HTTPHandler {
    let buffered: [PreparedResponse]
    let bodiless: [PreparedResponse]
    let wrongStatus: PreparedResponse

    init(headerSets: [[HTTPHeader]], body: [UInt8]) throws {
        buffered = try headerSets.map { try PreparedResponse(status: 304, headers: $0, body: body) }
        bodiless = try headerSets.map { try PreparedResponse(status: 304, headers: $0, announcingLength: body.count) }
        wrongStatus = try PreparedResponse(status: 200, headers: headerSets[0], announcingLength: body.count)
    }

    func handle(_ request: borrowing HTTPRequest) -> HTTPReply {
        let parts = request.path.split(separator: "/")
        guard parts.count == 2, let index = Int(parts[1]), index < bodiless.count else { return .prepared(wrongStatus) }
        switch parts[0] {
        case "buffered": return .prepared(buffered[index])
        case "copied": return .response(HTTPResponse(sharing: bodiless[index], headers: bodiless[index].headers))
        default: return .prepared(bodiless[index])
        }
    }

    func reject(_ violation: RequestLimitViolation) -> HTTPResponse { HTTPResponse(status: 400) }
}

/// A 304 built once per representation without a body buffer sends, byte for byte, the header block the
/// 304 built over a copy of its 200's body sent (the `Date` line aside, which is the clock's), and nothing after it.
@Suite struct BodilessResponseTests {
    /// Header sets as the read path builds them (ETag, Cache-Control, Vary, Last-Modified), for several codings and
    /// caching policies, and one with a header libmicrohttpd treats specially (`Connection`).
    static let headerSets: [[HTTPHeader]] = [
        [
            HTTPHeader("ETag", "\"4f1c2a9be07d43a1b6c59e8d2f7a3c10aa55bb66\""), HTTPHeader("Cache-Control", "no-cache"),
            HTTPHeader("Vary", "Accept, Accept-Language, Accept-Encoding"), HTTPHeader("Last-Modified", "Mon, 23 Nov 2026 15:31:02 GMT"),
        ],
        [
            HTTPHeader("ETag", "\"4f1c2a9be07d43a1b6c59e8d2f7a3c10aa55bb66.br\""), HTTPHeader("Cache-Control", "max-age=60, public"),
            HTTPHeader("Vary", "Accept-Encoding"), HTTPHeader("Last-Modified", "Thu, 01 Jan 1970 00:00:00 GMT"),
        ],
        [HTTPHeader("ETag", "\"x.gzip\""), HTTPHeader("Cache-Control", "no-store")],
        [HTTPHeader("ETag", "\"c\""), HTTPHeader("Connection", "close")],
    ]

    /// Everything the server sends for `request` on a new connection within a short wait after the header block,
    /// with the `Date` line's value masked.
    private func rawAnswer(_ port: UInt16, _ request: String) async throws -> String {
        let connection = try RawConnection(port: port)
        try connection.send(request)
        let bytes = try await connection.readRawAnswer()
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        return lines.map { $0.lowercased().hasPrefix("date: ") ? "Date: <masked>" : $0 }.joined(separator: "\r\n")
    }

    @Test(arguments: [0, 1, 538, 1742])
    func aBodiless304SendsTheBytesOfThe304BuiltOverTheBody(length: Int) async throws {
        let body = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let handler = try NotModifiedHandler(headerSets: Self.headerSets, body: body)
        let server = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), handler: handler)
        defer { server.stop() }
        for index in Self.headerSets.indices {
            for method in ["GET", "HEAD"] {
                let before = try await rawAnswer(server.port, "\(method) /buffered/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                let after = try await rawAnswer(server.port, "\(method) /bodiless/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                let copied = try await rawAnswer(server.port, "\(method) /copied/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(before.hasPrefix("HTTP/1.1 304 Not Modified\r\n"), "\(before)")
                #expect(before.hasSuffix("Content-Length: \(length)\r\n\r\n"), "the 200's length, then nothing: \(before)")
                #expect(after == before, "\(method) set \(index), \(length) B")
                #expect(copied == before, "\(method) set \(index), \(length) B, per-request copy")
            }
        }
        // HTTP/1.0 too (libmicrohttpd answers it with its own connection handling).
        let before = try await rawAnswer(server.port, "GET /buffered/0 HTTP/1.0\r\n\r\n")
        #expect(try await rawAnswer(server.port, "GET /bodiless/0 HTTP/1.0\r\n\r\n") == before)
    }

    @Test func aBodilessResponseNeverSendsABody() async throws {
        let handler = try NotModifiedHandler(headerSets: Self.headerSets, body: Array(repeating: 0x41, count: 100))
        let server = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), handler: handler)
        defer { server.stop() }
        // A 200 made bodiless by mistake: the connection is closed rather than any byte of a body sent.
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /wrong HTTP/1.1\r\nHost: x\r\n\r\n")
        let (bytes, closed) = await connection.untilClosed(seconds: 3)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(closed)
        #expect(!text.contains("AAAA"), "\(text)")
        #expect(text.isEmpty || text.hasSuffix("\r\n\r\n"), "\(text)")
    }

    @Test func aBodilessResponseHasNoBodyInProcessAndAnnouncesItsLength() throws {
        let prepared = try PreparedResponse(status: 304, headers: Self.headerSets[0], announcingLength: 1742)
        #expect(prepared.body.isEmpty)
        #expect(prepared.announcedLength == 1742)
        let copy = HTTPResponse(sharing: prepared, headers: [])
        #expect(copy.body.isEmpty && copy.announcedLength == 1742)
        let full = try PreparedResponse(status: 200, headers: [], body: [1, 2, 3])
        #expect(HTTPResponse(sharing: full, headers: []).body == [1, 2, 3])
        #expect(HTTPResponse(sharing: full, headers: []).announcedLength == nil)
    }
}
