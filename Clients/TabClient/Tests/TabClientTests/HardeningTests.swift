import Foundation
import Testing

@testable import TabClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the client does with what a server should never send: JSON nested too deep, bodies too large, text too long,
/// redirects. The conformance scenarios prove the same through the client; these name the limits.
@Suite struct HardeningTests {
    @Test func jsonDeeperThan64IsRefusedUnread() throws {
        let fine = "{\"a\":" + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}"
        try JSONLimits.checkDepth(Data(fine.utf8))
        let deep = "{\"a\":" + String(repeating: "[", count: 64)
        #expect(throws: JSONLimits.TooDeep.self) { try JSONLimits.checkDepth(Data(deep.utf8)) }
        // Brackets inside strings, escaped quotes included, do not count.
        try JSONLimits.checkDepth(Data(("{\"a\":\"\\\"" + String(repeating: "[", count: 3000) + "\"}").utf8))
        #expect(throws: TabClientError.self) { try CompiledLayout.decode(Data(deep.utf8)) }
    }

    @Test func errorTextIsCappedAndEscaped() {
        let error = TabClientError.unexpectedStatus(500, detail: String(repeating: "é", count: 100_000), retryAfter: nil)
        #expect("\(error)".utf8.count < 1024)
        #expect(Quoting.capped("a\nb\u{1b}[31m") == "a\\nb\\u001b[31m")
        #expect(Quoting.capped(String(repeating: "x", count: 1000)).utf8.count < 400)
    }

    @Test func originIsSchemeHostAndPort() throws {
        let base = try #require(URL(string: "https://tabs.example.com/v1"))
        #expect(URLSession.sameOrigin(base, try #require(URL(string: "https://TABS.example.com:443/other"))))
        #expect(!URLSession.sameOrigin(base, try #require(URL(string: "http://tabs.example.com/v1"))))
        #expect(!URLSession.sameOrigin(base, try #require(URL(string: "https://tabs.example.com:8443/v1"))))
        #expect(!URLSession.sameOrigin(base, try #require(URL(string: "https://cdn.example.com/v1"))))
    }

    @Test func aBodyOverTheCapIsAFaultAndTheLastGoodLayoutStays() async throws {
        let huge = Data(repeating: UInt8(ascii: " "), count: ExchangeDelegate.maximumBody + 1)
        let responder = try RawHTTPResponder { _ in
            .respond(status: 200, headers: [("Content-Type", "application/json"), ("ETag", "\"huge\"")], body: huge)
        }
        let bundle = try Fixtures.jackBundle()
        let client = try TabClient(configuration: Fixtures.configuration(server: responder.url), bundle: bundle)
        do {
            _ = try await client.refresh()
            Issue.record("a body over the cap was read")
        } catch {
            guard case .transport(let reason) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(reason.contains("larger than \(ExchangeDelegate.maximumBody) bytes"))
        }
        #expect(client.current == bundle.representations[0].layout)
    }
}
