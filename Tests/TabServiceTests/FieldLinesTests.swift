import Foundation
import HeaderFields
import Logging
import TabConfigs
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// A field sent on several lines is one list (RFC 9110 §5.3), `Accept` included; of codings a client
/// weighs equally, the smallest form is sent. In process and over a real socket.
@Suite struct FieldLinesTests {
    private static func inProcessService() async throws -> TabService { try await ServiceHarness.inProcess() }

    /// The raw request for jack's tabs with `lines` as its header lines.
    private static func rawRequest(_ lines: [String]) -> [UInt8] {
        Array(("GET /v1/accounts/jack/tabs HTTP/1.1\r\nHost: 127.0.0.1\r\n" + lines.map { $0 + "\r\n" }.joined() + "\r\n").utf8)
    }

    @Test func acceptOnTwoLinesIsOneListInProcess() async throws {
        let service = try await Self.inProcessService()
        let split = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept", "text/html"), ("Accept", "application/x-plist")]))
        #expect(split.status == 200)
        #expect(split.header("Content-Type") == "application/x-plist")
        let first = await service.respond(
            to: TestRequest(
                .get, "/v1/accounts/jack/tabs", headers: [("Accept", "application/x-plist;q=0.5"), ("Accept", "application/json")]))
        #expect(first.header("Content-Type") == "application/json", "the second line's higher q counts")
        let none = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept", "text/html"), ("Accept", "image/png")]))
        #expect(none.status == 406)
    }

    @Test func acceptOnTwoLinesIsOneListOverASocket() async throws {
        let harness = try await ServiceHarness()
        let connection = try RawConnection(port: harness.port)
        try connection.send(Self.rawRequest(["Accept: text/html", "Accept: application/x-plist"]))
        let split = try await connection.response(seconds: 10)
        #expect(split.status == 200)
        #expect(split.header("Content-Type") == "application/x-plist")
        #expect(String(decoding: split.body, as: UTF8.self).hasPrefix("<?xml"))
        try connection.send(Self.rawRequest(["Accept: text/html", "Accept: image/png"]))
        #expect(try await connection.response(seconds: 10).status == 406)
        // The legacy plist route reads Accept the same way.
        try connection.send(
            Array(
                "GET /v1/accounts/jack/ApplicationHierarchy.plist HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nAccept: */*\r\n\r\n"
                    .utf8))
        #expect(try await connection.response(seconds: 10).status == 200)
    }

    @Test func equalWeightsGetTheSmallestForm() throws {
        let body = Array(String(repeating: "{\"tabs\":[\"home\",\"settings\"]},", count: 40).utf8)
        func representation(gzip: Int, br: Int) throws -> Representation {
            try Representation(
                body: body, contentType: "application/json", locale: "en", vary: "Accept-Encoding", lastModifiedSeconds: 0,
                ambiguous: false, cacheControl: "no-cache",
                codings: [.gzip: [UInt8](repeating: 1, count: gzip), .br: [UInt8](repeating: 2, count: br)])
        }
        let iOS = Array("gzip, deflate, br".utf8)
        let brSmaller = try representation(gzip: 120, br: 100)
        let gzipSmaller = try representation(gzip: 100, br: 120)
        let same = try representation(gzip: 100, br: 100)
        iOS.withUnsafeBufferPointer { field in
            #expect(brSmaller.form(acceptEncoding: field)?.coding == .br)
            #expect(gzipSmaller.form(acceptEncoding: field)?.coding == .gzip)
            #expect(same.form(acceptEncoding: field)?.coding == .br, "equal sizes: brotli first")
        }
        // A weight still beats size.
        Array("gzip;q=0.5, br;q=0.4".utf8).withUnsafeBufferPointer { field in
            #expect(brSmaller.form(acceptEncoding: field)?.coding == .gzip)
        }
        #expect(CodingPreference(identity: 10, gzip: nil, br: nil) == CodingPreference(identity: 10, gzip: nil, br: nil))
        #expect(CodingPreference(identity: 10, gzip: 5, br: nil).order.0 == .gzip)
    }

    @Test func iOSHeadersGetBrotliOnceItExistsOverASocket() async throws {
        let harness = try await ServiceHarness()
        let connection = try RawConnection(port: harness.port)
        let deadline = ContinuousClock.now + .seconds(10)
        var coding: String?
        repeat {
            // Accept-Encoding on two lines, as a proxy may forward it: one list, `gzip, deflate, br`.
            try connection.send(Self.rawRequest(["Accept: */*", "Accept-Encoding: gzip, deflate", "Accept-Encoding: br"]))
            let answer = try await connection.response(seconds: 10)
            #expect(answer.status == 200)
            coding = answer.header("Content-Encoding")
            if coding != "br" { try await Task.sleep(for: .milliseconds(20)) }
        } while coding != "br" && ContinuousClock.now < deadline
        #expect(coding == "br", "the brotli form is smaller than gzip for a layout, and is sent once made")
    }
}
