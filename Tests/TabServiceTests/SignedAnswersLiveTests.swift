import Foundation
import TabServiceTestSupport
import TabSigning
import TabTestSupport
import Testing

/// `--signing-key` over a real socket: `Tabs-Signature` on every 200 of `…/tabs` (each coding carries the identity
/// body's), none on 304s and other resources, bound to the path's account and the environment; `/v1/keys`.
@Suite(.serialized) struct SignedAnswersLiveTests {
    static let cfNetwork = [
        ("Accept", "*/*"), ("Accept-Language", "en-GB,en;q=0.9"), ("User-Agent", "Jack/2.1 CFNetwork/1496.0.7 Darwin/23.5.0"),
    ]

    @Test func everyOKOfTabsIsSignedForItsAccountAndEnvironment() async throws {
        let signer = try #require(Signer(keys: [SigningKey.generate(), SigningKey.generate()]))
        let harness = try await ServiceHarness(signer: signer)
        defer { harness.application.stop() }
        let client = harness.client()

        let plain = try await client.send("GET", "/v1/accounts/jack/tabs", headers: Self.cfNetwork)
        #expect(plain.status == 200)
        let header = try #require(plain.header("Tabs-Signature"))
        #expect(header.hasPrefix("keyid=\"\(signer.keys[0].keyID)\", sig=\""))
        #expect(signer.verifies(header, kind: .layout, account: "jack", environment: "production", body: plain.body))
        #expect(!signer.verifies(header, kind: .manifest, account: "jack", environment: "production", body: plain.body))
        #expect(!signer.verifies(header, kind: .layout, account: "jack", environment: "staging", body: plain.body))
        var flipped = plain.body
        flipped[flipped.count / 2] ^= 0x20
        #expect(!signer.verifies(header, kind: .layout, account: "jack", environment: "production", body: flipped))

        // Every coding carries the identity body's signature; a 304 carries none.
        let gzipped = try await client.send("GET", "/v1/accounts/jack/tabs", headers: Self.cfNetwork + [("Accept-Encoding", "gzip")])
        #expect(gzipped.header("Content-Encoding") == "gzip" && gzipped.header("Tabs-Signature") == header)
        let plist = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("Accept", "application/x-plist")])
        #expect(
            signer.verifies(
                plist.header("Tabs-Signature") ?? "", kind: .layout, account: "jack", environment: "production", body: plist.body))
        let etag = try #require(plain.header("ETag"))
        let revalidated = try await client.send("GET", "/v1/accounts/jack/tabs", headers: Self.cfNetwork + [("If-None-Match", etag)])
        #expect(revalidated.status == 304 && revalidated.header("Tabs-Signature") == nil)
        #expect(try await client.send("GET", "/v1/accounts/jack/tabs/preview.svg").header("Tabs-Signature") == nil)

        // An account served `default` gets a signature bound to its own name, not to `default`'s.
        let fallback = try await client.send("GET", "/v1/accounts/nobody-here/tabs")
        let theirs = try #require(fallback.header("Tabs-Signature"))
        #expect(signer.verifies(theirs, kind: .layout, account: "nobody-here", environment: "production", body: fallback.body))
        #expect(!signer.verifies(theirs, kind: .layout, account: "default", environment: "production", body: fallback.body))

        // A held long-poll answered by a change is signed too.
        let held = try await client.send("GET", "/v1/accounts/signed-poll/tabs?wait=20")
        let heldTag = try #require(held.header("ETag"))
        async let answer = client.send("GET", "/v1/accounts/signed-poll/tabs?wait=20", headers: [("If-None-Match", heldTag)])
        try await Task.sleep(for: .milliseconds(300))
        let put = try await harness.client().send(
            "PUT", "/v1/accounts/signed-poll/layout",
            headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]), body: document(["Home"]))
        #expect(put.status == 201)
        let changed = try await answer
        #expect(changed.status == 200)
        #expect(
            signer.verifies(
                changed.header("Tabs-Signature") ?? "", kind: .layout, account: "signed-poll", environment: "production", body: changed.body
            ))

        // Each bundle entry carries the exact bytes signed, checked as an answer from the network is.
        let bundle = try await client.send("GET", "/v1/accounts/jack/tabs/bundle?locale=en&locale=fr")
        let entries = try #require(
            (try JSONSerialization.jsonObject(with: Data(bundle.body)) as? [String: Any])?["representations"] as? [[String: Any]])
        #expect(entries.count == 2)
        for entry in entries {
            let signed = try #require(entry["signed"] as? [String: String])
            let body = try #require(Data(base64Encoded: signed["body"] ?? "")).map { $0 }
            let header = "keyid=\"\(signed["keyid"] ?? "")\", sig=\"\(signed["sig"] ?? "")\""
            #expect(signer.verifies(header, kind: .layout, account: "jack", environment: "production", body: body))
            let served = try await client.send(
                "GET", "/v1/accounts/jack/tabs?locale=\(entry["locale"] as? String ?? "")", headers: [("Accept-Encoding", "identity")])
            #expect(served.body == body && served.header("Tabs-Signature") == header)
        }

        let keys = try await client.send("GET", "/v1/keys")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(keys.body)) as? [String: [[String: String]]])
        #expect(listed["keys"]?.compactMap { $0["kid"] } == signer.keys.map(\.keyID))
        #expect(keys.header("Cache-Control") == "public, max-age=300")
        let again = try await client.send("GET", "/v1/keys", headers: [("If-None-Match", keys.header("ETag") ?? "")])
        #expect(again.status == 304)
    }

    @Test func withoutAKeyNothingIsSignedAndNoKeyIsListed() async throws {
        let harness = try await ServiceHarness()
        defer { harness.application.stop() }
        let client = harness.client()
        #expect(try await client.send("GET", "/v1/accounts/jack/tabs").header("Tabs-Signature") == nil)
        #expect(String(decoding: try await client.send("GET", "/v1/keys").body, as: UTF8.self) == #"{"keys":[]}"#)
    }
}
