import Foundation
import TabServiceTestSupport
import TabSigning
import TabTestSupport
import Testing

/// A revoked version over a real socket: `…/tabs?version=N` is 410 Gone (problem+json, nothing immutable), the signed
/// manifest lists it, and `…/tabs` answers name it in `Tabs-Revoked` (200 and 304, every coding).
@Suite(.serialized) struct RevocationLiveTests {
    @Test func aRevokedVersionIsGoneListedAndNamed() async throws {
        let signer = try #require(Signer(keys: [SigningKey.generate()]))
        let harness = try await ServiceHarness(signer: signer)
        defer { harness.application.stop() }
        let client = harness.client()
        let write = ServiceHarness.admin([("Content-Type", "application/json")])
        let first = try await client.send(
            "PUT", "/v1/accounts/withdrawn/layout", headers: write + [("If-None-Match", "*")], body: document(["Home"]))
        let second = try await client.send(
            "PUT", "/v1/accounts/withdrawn/layout", headers: write + [("If-Match", first.header("ETag") ?? "")],
            body: document(["Home", "Search"]))
        #expect(second.status == 200)
        let served = try await client.send("GET", "/v1/accounts/withdrawn/tabs?version=1")
        #expect(served.status == 200 && served.header("Cache-Control")?.contains("immutable") == true)

        let revoked = try await client.send(
            "POST", "/v1/accounts/withdrawn/layout/versions/1/revoke", headers: write, body: Array(#"{"reason": "broke launch"}"#.utf8))
        #expect(revoked.status == 200, "\(String(decoding: revoked.body, as: UTF8.self))")

        let gone = try await client.send("GET", "/v1/accounts/withdrawn/tabs?version=1", headers: [("Accept-Encoding", "gzip")])
        #expect(gone.status == 410 && gone.header("Content-Type") == "application/problem+json")
        #expect(gone.header("Cache-Control") == "no-store")
        let manifest = try await client.send("GET", "/v1/accounts/withdrawn/tabs/manifest")
        let body = (try? JSONSerialization.jsonObject(with: Data(manifest.body))) as? [String: Any]
        #expect(body?["revoked"] as? [Int] == [1])
        #expect(
            signer.verifies(
                manifest.header("Tabs-Signature") ?? "", kind: .manifest, account: "withdrawn", environment: "production",
                body: manifest.body), "the list is signed with the manifest")
        for coding in ["identity", "gzip", "br"] {
            let tabs = try await client.send("GET", "/v1/accounts/withdrawn/tabs", headers: [("Accept-Encoding", coding)])
            #expect(tabs.status == 200 && tabs.header("Tabs-Revoked") == "1", "\(coding)")
            let again = try await client.send(
                "GET", "/v1/accounts/withdrawn/tabs", headers: [("Accept-Encoding", coding), ("If-None-Match", tabs.header("ETag") ?? "")])
            #expect(again.status == 304 && again.header("Tabs-Revoked") == "1", "\(coding)")
        }
        let pinned = try await client.send("GET", "/v1/accounts/withdrawn/tabs?version=2")
        #expect(pinned.status == 200 && pinned.header("Tabs-Revoked") == nil)
    }
}
