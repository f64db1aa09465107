import Foundation
import TabServiceTestSupport
import TabSigning
import TabTestSupport
import Testing

/// `…/tabs/manifest` and `…/tabs?version=N` over a real socket: one answer for every install, the rollout's
/// schedule, immutable versions with the same tags as `…/tabs`, drafts never shown, long-polls and signatures.
@Suite(.serialized) struct ManifestLiveTests {
    static let okHttp = [("Accept-Encoding", "gzip"), ("User-Agent", "okhttp/4.12.0"), ("Connection", "Keep-Alive")]

    static func json(_ response: HTTPTestClient.Response) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    @Test func everyInstallGetsTheSameManifestAndAVersionByNumberIsImmutable() async throws {
        let signer = try #require(Signer(keys: [SigningKey.generate()]))
        let harness = try await ServiceHarness(signer: signer)
        defer { harness.application.stop() }
        let client = harness.client()
        let write = ServiceHarness.admin([("Content-Type", "application/json")])
        let first = try await client.send(
            "PUT", "/v1/accounts/manifested/layout", headers: write + [("If-None-Match", "*")], body: document(["Home"]))
        #expect(first.status == 201)
        let draft = try await client.send(
            "PUT", "/v1/accounts/manifested/layout?publish=false", headers: write + [("If-Match", first.header("ETag") ?? "")],
            body: document(["Home", "Search"]))
        #expect(draft.status == 201 || draft.status == 200, "\(draft.status) \(String(decoding: draft.body, as: UTF8.self))")

        let one = try await client.send("GET", "/v1/accounts/manifested/tabs/manifest", headers: Self.okHttp + [("X-Install-Id", "one")])
        let two = try await client.send("GET", "/v1/accounts/manifested/tabs/manifest", headers: [("X-Install-Id", "two")])
        #expect(one.status == 200 && one.body == two.body && one.header("ETag") == two.header("ETag"))
        #expect(one.header("Cache-Control") == "public, max-age=30" && one.header("Vary") == nil)
        let manifest = Self.json(one)
        #expect(manifest["layout"] as? String == "manifested" && manifest["environment"] as? String == "production")
        #expect((manifest["stable"] as? [String: Any])?["version"] as? Int == 1 && manifest["rollout"] is NSNull)
        #expect(
            signer.verifies(
                one.header("Tabs-Signature") ?? "", kind: .manifest, account: "manifested", environment: "production", body: one.body))
        let again = try await client.send(
            "GET", "/v1/accounts/manifested/tabs/manifest", headers: [("If-None-Match", one.header("ETag") ?? "")])
        #expect(again.status == 304 && again.header("Tabs-Signature") == nil)

        // Version 1 by number: the same bytes and tag as …/tabs, immutable, not varying on install or environment.
        let tabs = try await client.send("GET", "/v1/accounts/manifested/tabs")
        let pinned = try await client.send("GET", "/v1/accounts/manifested/tabs?version=1")
        #expect(pinned.status == 200 && pinned.body == tabs.body && pinned.header("ETag") == tabs.header("ETag"))
        #expect(pinned.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(pinned.header("Vary")?.contains("X-Install-Id") == false)
        #expect(
            signer.verifies(
                pinned.header("Tabs-Signature") ?? "", kind: .layout, account: "manifested", environment: "production", body: pinned.body))
        let revalidated = try await client.send(
            "GET", "/v1/accounts/manifested/tabs?version=1", headers: [("If-None-Match", tabs.header("ETag") ?? "")])
        #expect(revalidated.status == 304 && revalidated.header("Cache-Control") == "public, max-age=31536000, immutable")
        // A draft that no environment and no rollout names is not shown; a version that is not a number is 400.
        #expect(try await client.send("GET", "/v1/accounts/manifested/tabs?version=2").status == 404)
        #expect(try await client.send("GET", "/v1/accounts/manifested/tabs?version=two").status == 400)
        #expect(try await client.send("GET", "/v1/accounts/manifested/tabs?version=0").status == 400)

        // A stepped rollout of the draft: the manifest names it with the steps to come, max-age never past the next.
        let started = try await client.send(
            "POST", "/v1/accounts/manifested/layout/rollout", headers: write + [("If-Match", first.header("ETag") ?? "")],
            body: Array(#"{"version": 2, "steps": [{"percent": 10, "hold": "PT20S"}, {"percent": 50, "hold": "PT1H"}], "seed": "m"}"#.utf8))
        #expect(started.status == 201, "\(String(decoding: started.body, as: UTF8.self))")
        let during = try await client.send("GET", "/v1/accounts/manifested/tabs/manifest")
        let rollout = try #require(Self.json(during)["rollout"] as? [String: Any])
        #expect(rollout["version"] as? Int == 2 && rollout["percent"] as? Int == 10 && rollout["seed"] as? String == "m")
        #expect((rollout["schedule"] as? [[String: Any]])?.compactMap { $0["percent"] as? Int } == [50, 100])
        let maxAge = Int(during.header("Cache-Control")?.split(separator: "=").last ?? "") ?? 99
        #expect(maxAge <= 20)
        #expect((Self.json(during)["revision"] as? Int ?? 0) > (manifest["revision"] as? Int ?? 0))
        // The candidate by number now, with the tag an install in its arm gets from …/tabs.
        let candidate = try await client.send("GET", "/v1/accounts/manifested/tabs?version=2")
        #expect(candidate.status == 200 && Self.json(candidate)["version"] as? Int == 2)
        #expect(candidate.header("Vary")?.contains("X-Install-Id") == false)

        // Rolled back: the manifest names no rollout, and its revision still grows (clients keep the highest).
        let rolledBack = try await client.send(
            "POST", "/v1/accounts/manifested/layout/rollout/rollback", headers: write, body: Array(#"{"reason": "crashes"}"#.utf8))
        #expect(rolledBack.status == 200, "\(String(decoding: rolledBack.body, as: UTF8.self))")
        let after = Self.json(try await client.send("GET", "/v1/accounts/manifested/tabs/manifest"))
        #expect(after["rollout"] is NSNull)
        #expect((after["revision"] as? Int ?? 0) > (Self.json(during)["revision"] as? Int ?? .max))
        // A version a rollout served stays immutable after it ends (a CDN or an install may still ask for it).
        let past = try await client.send(
            "GET", "/v1/accounts/manifested/tabs?version=2", headers: [("If-None-Match", candidate.header("ETag") ?? "")])
        #expect(past.status == 304 && past.header("Cache-Control")?.contains("immutable") == true)
    }

    /// A version by number is signed for the environment asked for, so it is answered only for an environment that
    /// serves or served it; named by `Tabs-Environment` alone, the answer varies on that field.
    @Test func aVersionByNumberIsAnsweredOnlyForAnEnvironmentThatServesOrServedIt() async throws {
        let signer = try #require(Signer(keys: [SigningKey.generate()]))
        let harness = try await ServiceHarness(environments: ["staging", "production"], signer: signer)
        defer { harness.application.stop() }
        let client = harness.client()
        let write = ServiceHarness.admin([("Content-Type", "application/json")])
        // Version 1 of an account without a layout of its own in production is `default`'s there (configs/ seeded
        // one): versions 2 and up are staging's alone.
        var etag: String?
        for titles in [["Home"], ["Home", "Search"]] {
            let put = try await client.send(
                "PUT", "/v1/accounts/staged/layout?environment=staging",
                headers: write + [etag.map { ("If-Match", $0) } ?? ("If-None-Match", "*")], body: document(titles))
            #expect(put.status == 200 || put.status == 201, "\(String(decoding: put.body, as: UTF8.self))")
            etag = put.header("ETag")
        }

        // Served now by staging only.
        #expect(try await client.send("GET", "/v1/accounts/staged/tabs?version=2&environment=production").status == 404)
        #expect(
            try await client.send("GET", "/v1/accounts/staged/tabs?version=2", headers: [("Tabs-Environment", "production")]).status
                == 404)
        let staged = try await client.send("GET", "/v1/accounts/staged/tabs?version=2&environment=staging")
        #expect(staged.status == 200)
        #expect(
            signer.verifies(
                staged.header("Tabs-Signature") ?? "", kind: .layout, account: "staged", environment: "staging", body: staged.body))
        #expect(staged.header("Vary")?.contains("Tabs-Environment") == false, "the URL names the environment")
        let byHeader = try await client.send("GET", "/v1/accounts/staged/tabs?version=2", headers: [("Tabs-Environment", "staging")])
        #expect(byHeader.status == 200 && byHeader.body == staged.body)
        #expect(byHeader.header("Vary")?.contains("Tabs-Environment") == true, "only the field names the environment")

        // Served before by staging only (read from the store's history), and a draft nowhere.
        let third = try await client.send(
            "PUT", "/v1/accounts/staged/layout?environment=staging", headers: write + [("If-Match", etag ?? "")],
            body: document(["Home", "Search", "More"]))
        #expect(third.status == 200 || third.status == 201)
        #expect(try await client.send("GET", "/v1/accounts/staged/tabs?version=2&environment=production").status == 404)
        #expect(try await client.send("GET", "/v1/accounts/staged/tabs?version=2&environment=staging").status == 200)
        #expect(try await client.send("GET", "/v1/accounts/staged/tabs?version=3&environment=production").status == 404)
        let draft = try await client.send(
            "PUT", "/v1/accounts/staged/layout?environment=staging&publish=false",
            headers: write + [("If-Match", third.header("ETag") ?? "")], body: document(["Home", "Search", "More", "Four"]))
        #expect(draft.status == 200 || draft.status == 201)
        #expect(try await client.send("GET", "/v1/accounts/staged/tabs?version=4&environment=staging").status == 404)
    }

    @Test func aHeldManifestIsAnsweredByTheChangeThatAltersIt() async throws {
        let harness = try await ServiceHarness()
        defer { harness.application.stop() }
        let client = harness.client()
        let before = try await client.send("GET", "/v1/accounts/polled-manifest/tabs/manifest")
        #expect(before.status == 200 && Self.json(before)["layout"] as? String == "default")
        async let held = client.send(
            "GET", "/v1/accounts/polled-manifest/tabs/manifest?wait=20", headers: [("If-None-Match", before.header("ETag") ?? "")])
        try await Task.sleep(for: .milliseconds(300))
        let started = ContinuousClock.now
        let put = try await harness.client().send(
            "PUT", "/v1/accounts/polled-manifest/layout",
            headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]), body: document(["Home"]))
        #expect(put.status == 201)
        let answer = try await held
        #expect(answer.status == 200 && Self.json(answer)["layout"] as? String == "polled-manifest")
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(answer.header("Cache-Control") == "no-store")
    }
}
