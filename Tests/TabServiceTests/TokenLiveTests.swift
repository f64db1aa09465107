import Foundation
import TabServiceTestSupport
import Testing

/// Scoped tokens over a real socket (the in-process suite is `TokenTests`).
@Suite struct TokenLiveTests {
    @Test func aTokenMadeOverTheSocketWorksUntilRevoked() async throws {
        let harness = try await ServiceHarness()
        defer { harness.server.stop() }
        let client = harness.client()
        let made = try await client.send(
            "POST", "/v1/tokens", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: Array(#"{"name": "ios ci", "scopes": ["write"], "accounts": ["jack"]}"#.utf8))
        #expect(made.status == 201)
        let id = try #require(made.json?["id"] as? String)
        let secret = try #require(made.json?["token"] as? String)
        let mine = [("Authorization", "Bearer \(secret)")]

        #expect(try await client.send("GET", "/v1/accounts/jack/layout", headers: mine).status == 200)
        let refused = try await client.send(
            "PUT", "/v1/accounts/jill/layout", headers: mine + [("Content-Type", "application/json"), ("If-Match", "*")],
            body: document(["x"]))
        #expect(refused.status == 403)
        #expect(refused.header("WWW-Authenticate") == #"Bearer realm="tabserver", error="insufficient_scope", scope="write""#)
        #expect(refused.header("Content-Type") == "application/problem+json")

        #expect(try await client.send("DELETE", "/v1/tokens/\(id)", headers: ServiceHarness.admin()).status == 204)
        let revoked = try await client.send("GET", "/v1/accounts/jack/layout", headers: mine)
        #expect(revoked.status == 401 && revoked.header("WWW-Authenticate")?.contains(#"error="invalid_token""#) == true)
    }
}
