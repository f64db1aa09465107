import Foundation
import TabServiceTestSupport
import TabSigning
import TabTestSupport
import Testing

/// The same over a socket: made-up names each get a manifest naming them, signed for them, and `/metrics` shows the
/// bound held.
@Suite(.serialized) struct FallbackManifestLiveTests {
    @Test func madeUpAccountsManifestsNameThemVerifyAndStayWithinTheLimit() async throws {
        let signer = try #require(Signer(keys: [SigningKey.generate()]))
        let harness = try await ServiceHarness(signer: signer, maxFallbackManifests: 50)
        defer { harness.application.stop() }
        let client = harness.client()
        var first: HTTPTestClient.Response?
        for number in 0..<500 {
            let name = "made-up-\(number)"
            let answer = try await client.send("GET", "/v1/accounts/\(name)/tabs/manifest")
            let body = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] ?? [:]
            #expect(answer.status == 200 && body["account"] as? String == name && body["layout"] as? String == "default")
            #expect(
                signer.verifies(
                    answer.header("Tabs-Signature") ?? "", kind: .manifest, account: name, environment: "production", body: answer.body))
            if number == 0 { first = answer }
        }
        let metrics = try await client.send("GET", "/metrics")
        let text = String(decoding: metrics.body, as: UTF8.self)
        // Every manifest kept, of either kind: none of an account with a layout was asked for.
        let kept = text.split(separator: "\n").filter { $0.hasPrefix("tabserver_manifests_kept{") }
            .compactMap { Int($0.split(separator: " ").last ?? "") }
        #expect(kept.count == 2 && kept.reduce(0, +) <= 50, "\(kept)")
        // The first went long ago: made and signed again, the same bytes and tag, and a 304 for its tag.
        let again = try await client.send("GET", "/v1/accounts/made-up-0/tabs/manifest")
        #expect(again.body == first?.body && again.header("ETag") == first?.header("ETag"))
        #expect(
            signer.verifies(
                again.header("Tabs-Signature") ?? "", kind: .manifest, account: "made-up-0", environment: "production", body: again.body))
        let current = try await client.send(
            "GET", "/v1/accounts/made-up-0/tabs/manifest", headers: [("If-None-Match", first?.header("ETag") ?? "")])
        #expect(current.status == 304)
    }
}
