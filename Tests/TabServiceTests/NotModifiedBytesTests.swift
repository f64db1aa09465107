import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

@testable import TabService

/// At the service: the 304 each real client gets (the header sets of docs/performance.md's clients) is, byte for byte,
/// the header block it was before the 304 stopped holding a copy of the body: the status line, `Date`, then `ETag`,
/// `Cache-Control`, `Vary`, `Last-Modified` as the 200 gave them, the cache keys (`Surrogate-Key`, `Cache-Tag`; not on a
/// long-poll's, which no cache stores), and the 200's `Content-Length`; nothing after it.
@Suite struct NotModifiedBytesTests {
    static let clients: [(name: String, headers: [(String, String)])] = [
        ("iOS URLSession", [("Accept", "*/*"), ("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8"), ("Accept-Encoding", "gzip, deflate, br")]),
        (
            "iOS Alamofire",
            [
                ("Accept", "*/*"), ("Accept-Language", "en-US;q=1.0, fr-CA;q=0.9"),
                ("Accept-Encoding", "br;q=1.0, gzip;q=0.9, deflate;q=0.8"),
            ]
        ),
        ("Android OkHttp", [("Accept-Language", "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7"), ("Accept-Encoding", "gzip")]),
        ("Linux URLSession", [("Accept", "*/*"), ("Accept-Language", "en"), ("Accept-Encoding", "deflate, gzip, br, zstd")]),
        (
            "Chromium",
            [
                ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"),
                ("Accept-Language", "en-US,en;q=0.9"), ("Accept-Encoding", "gzip, deflate, br, zstd"),
            ]
        ),
        ("curl", [("Accept", "*/*")]),
        ("plist", [("Accept", "application/x-plist"), ("Accept-Language", "fr")]),
    ]

    private static func request(_ target: String, _ headers: [(String, String)], method: String = "GET") -> String {
        "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
    }

    /// The raw answer with its `Date` value masked.
    private static func masked(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
            .map { $0.lowercased().hasPrefix("date: ") ? "Date: <masked>" : $0 }.joined(separator: "\r\n")
    }

    @Test func every304IsTheHeaderBlockItWasBeforeWithNothingAfterIt() async throws {
        let harness = try await ServiceHarness()
        for client in Self.clients {
            let connection = try RawConnection(port: harness.port)
            // The brotli form is made after the first request: read until the coding is settled (two equal tags).
            var ok = try await HTTPTestClient(port: harness.port).send("GET", "/v1/accounts/jack/tabs", headers: client.headers)
            for _ in 0..<100 {
                try await Task.sleep(for: .milliseconds(20))
                let again = try await HTTPTestClient(port: harness.port).send("GET", "/v1/accounts/jack/tabs", headers: client.headers)
                if again.header("ETag") == ok.header("ETag") { break }
                ok = again
            }
            let etag = try #require(ok.header("ETag"))
            let base = [
                "HTTP/1.1 304 Not Modified", "Date: <masked>", "ETag: \(etag)", "Cache-Control: no-cache",
                "Vary: \(try #require(ok.header("Vary")))", "Last-Modified: \(try #require(ok.header("Last-Modified")))",
                "Content-Length: \(ok.body.count)", "", "",
            ].joined(separator: "\r\n")
            // The cache keys after the validators: a cache that revalidates keeps its copy indexed by them.
            let keys =
                "Surrogate-Key: tabs:jack tabs:jack:production tabs-environment:production\r\n"
                + "Cache-Tag: tabs:jack,tabs:jack:production,tabs-environment:production\r\n"
            let expected = base.replacingOccurrences(of: "Content-Length:", with: keys + "Content-Length:")
            for method in ["GET", "HEAD"] {
                try connection.send(Self.request("/v1/accounts/jack/tabs", client.headers + [("If-None-Match", etag)], method: method))
                #expect(Self.masked(try await connection.readRawAnswer()) == expected, "\(client.name) \(method)")
            }
            // A held long-poll that times out answers the same 304 with `no-store` and the preference it applied.
            let poll = try RawConnection(port: harness.port)
            try poll.send(Self.request("/v1/accounts/jack/tabs", client.headers + [("If-None-Match", etag), ("Prefer", "wait=1")]))
            let held = Self.masked(try await poll.readRawAnswer(seconds: 5))
            let heldExpected = base.replacingOccurrences(of: "Cache-Control: no-cache", with: "Cache-Control: no-store")
                .replacingOccurrences(of: "Content-Length:", with: "Preference-Applied: wait=1\r\nContent-Length:")
            #expect(held == heldExpected, "\(client.name) long-poll")
        }
    }
}
