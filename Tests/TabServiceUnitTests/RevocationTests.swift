import Foundation
import Logging
import MicroHTTPD
import TabServiceTestSupport
import TabStore
import Testing

@testable import TabService

private func object(_ response: TestResponse) -> [String: Any] { CollectionHarness.object(response) }

/// Revoked versions (docs/delivery.md, "Revoked versions"): the rules through the write side's collections, in
/// process, and what the client plane answers through the service.
@Suite struct RevocationTests {
    private static func reason(_ text: String) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: ["reason": text])) ?? Data())
    }

    /// Two published versions of `account`: v1 (served by nobody now) and v2 (the pointer).
    private func twoVersions(_ harness: WriteHarness, _ account: String) async throws -> String {
        let first = await harness.send(.put, "/v1/accounts/\(account)/layout", headers: [("If-None-Match", "*")], body: document(["One"]))
        let second = await harness.send(
            .put, "/v1/accounts/\(account)/layout", headers: [("If-Match", try #require(first.header("ETag")))],
            body: document(["One", "Two"]))
        #expect(second.status == 200, "\(second.text)")
        return try #require(second.header("ETag"))
    }

    @Test func aVersionNobodyServesIsRevokedOnceAndUnrevoked() async throws {
        let harness = try await WriteHarness()
        _ = try await twoVersions(harness, "acme")
        let revoked = await harness.send(
            .post, "/v1/accounts/acme/layout/versions/1/revoke", body: Self.reason("broke\u{202E} launch\u{0007}"))
        #expect(revoked.status == 200, "\(revoked.text)")
        #expect(object(revoked)["revoked"] as? Bool == true && object(revoked)["reason"] as? String == "broke launch")
        let served = harness.changes.snapshot(for: .production).revoked("acme")
        #expect(served?.all == [1] && served?.header == HTTPHeader("Tabs-Revoked", "1"), "published in the snapshot")

        let again = await harness.send(.post, "/v1/accounts/acme/layout/versions/1/revoke", body: Self.reason("other"))
        #expect(again.status == 200 && object(again)["reason"] as? String == "broke launch", "a second revoke changes nothing")
        #expect(try await harness.store.revocations(account: "acme").count == 1)

        let versions = await harness.send(.get, "/v1/accounts/acme/layout/versions")
        let listed = (object(versions)["versions"] as? [[String: Any]]) ?? []
        #expect((listed.last?["revoked"] as? [String: Any])?["reason"] as? String == "broke launch")
        #expect(listed.first?["revoked"] == nil)

        let unrevoked = await harness.send(.delete, "/v1/accounts/acme/layout/versions/1/revoke")
        #expect(unrevoked.status == 200 && object(unrevoked)["revoked"] as? Bool == false, "\(unrevoked.text)")
        #expect(harness.changes.snapshot(for: .production).revoked("acme")?.all.isEmpty == true)
        #expect(harness.changes.snapshot(for: .production).revoked("acme")?.header == nil)
        let twice = await harness.send(.delete, "/v1/accounts/acme/layout/versions/1/revoke")
        #expect(twice.status == 200 && object(twice)["revoked"] as? Bool == false)
    }

    @Test func aServedOrUnknownVersionIsRefused() async throws {
        let harness = try await WriteHarness(environments: ["staging", "production"])
        _ = try await twoVersions(harness, "acme")
        let pointed = await harness.send(.post, "/v1/accounts/acme/layout/versions/2/revoke", body: Self.reason("no"))
        #expect(pointed.status == 409 && pointed.header("Content-Type") == "application/problem+json", "\(pointed.text)")
        #expect((object(pointed)["environments"] as? [String]) == ["staging"])
        #expect(await harness.send(.post, "/v1/accounts/acme/layout/versions/9/revoke", body: Self.reason("no")).status == 404)
        #expect(await harness.send(.delete, "/v1/accounts/acme/layout/versions/9/revoke").status == 404)
        let noReason = await harness.send(.post, "/v1/accounts/acme/layout/versions/1/revoke", body: Array(#"{"reason": "\u0007"}"#.utf8))
        #expect(noReason.status == 422 && (object(noReason)["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "/reason")
        let long = await harness.send(
            .post, "/v1/accounts/acme/layout/versions/1/revoke", body: Self.reason(String(repeating: "é", count: 1025)))
        #expect(long.status == 422, "over 2 KiB of UTF-8")
    }

    @Test func aVersionARolloutServesIsRefusedAndARevokedOneStartsNone() async throws {
        let harness = try await WriteHarness()
        let etag = try await twoVersions(harness, "roll")
        let draft = await harness.send(
            .put, "/v1/accounts/roll/layout", query: [("publish", "false")], headers: [("If-Match", etag)], body: document(["Three"]))
        #expect(object(draft)["version"] as? Int == 3)
        let started = await harness.send(
            .post, "/v1/accounts/roll/layout/rollout", headers: [("If-Match", etag)],
            body: Array(#"{"version": 3, "percent": 25, "seed": "fixed"}"#.utf8))
        #expect(started.status == 201, "\(started.text)")
        let candidate = await harness.send(.post, "/v1/accounts/roll/layout/versions/3/revoke", body: Self.reason("bad"))
        #expect(candidate.status == 409 && (object(candidate)["rollouts"] as? [String]) == ["production"], "\(candidate.text)")
        let rolledBack = await harness.send(.post, "/v1/accounts/roll/layout/rollout/rollback")
        #expect(rolledBack.status == 200, "\(rolledBack.text)")
        #expect(await harness.send(.post, "/v1/accounts/roll/layout/versions/3/revoke", body: Self.reason("bad")).status == 200)
        let again = await harness.send(
            .post, "/v1/accounts/roll/layout/rollout", headers: [("If-Match", etag)],
            body: Array(#"{"version": 3, "percent": 25, "seed": "fixed"}"#.utf8))
        #expect(again.status == 422, "a revoked version is no candidate: \(again.text)")
    }

    private func service() async throws -> TabService { try await ServiceHarness.inProcess(importingConfigs: false) }

    @Test func theClientPlaneAnswersGoneListsAndNamesIt() async throws {
        let service = try await service()
        let admin = [("Authorization", "Bearer \(ServiceHarness.token)"), ("Content-Type", "application/json")]
        let first = await service.respond(
            to: TestRequest(.put, "/v1/accounts/jack/layout", headers: admin + [("If-None-Match", "*")], body: document(["One"])))
        _ = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/jack/layout", headers: admin + [("If-Match", try #require(first.header("ETag")))],
                body: document(["One", "Two"])))
        let before = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs"))
        #expect(before.status == 200 && before.header("Tabs-Revoked") == nil, "none revoked: no field")

        let made = await service.respond(
            to: TestRequest(
                .post, "/v1/tokens", headers: admin, body: Array(#"{"name": "ci", "scopes": ["write"], "accounts": ["jack"]}"#.utf8)))
        let writer = try #require(object(made)["token"] as? String)
        let refused = await service.respond(
            to: TestRequest(
                .post, "/v1/accounts/jack/layout/versions/1/revoke",
                headers: [("Authorization", "Bearer \(writer)"), ("Content-Type", "application/json")], body: Self.reason("no")))
        #expect(refused.status == 403, "revoking is deploy's: \(refused.text)")

        let revoked = await service.respond(
            to: TestRequest(.post, "/v1/accounts/jack/layout/versions/1/revoke", headers: admin, body: Self.reason("broke launch")))
        #expect(revoked.status == 200, "\(revoked.text)")
        let gone = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("version", "1")]))
        #expect(gone.status == 410 && gone.header("Content-Type") == "application/problem+json")
        #expect(gone.header("Cache-Control")?.contains("immutable") == false)
        let manifest = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/manifest"))
        #expect(object(manifest)["revoked"] as? [Int] == [1], "\(manifest.text)")
        let tabs = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs"))
        #expect(tabs.status == 200 && tabs.header("Tabs-Revoked") == "1")
        let revalidated = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("If-None-Match", try #require(tabs.header("ETag")))]))
        #expect(revalidated.status == 304 && revalidated.header("Tabs-Revoked") == "1", "a revalidating client hears of it too")
        let pinned = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("version", "2")]))
        #expect(pinned.status == 200 && pinned.header("Tabs-Revoked") == nil, "an immutable answer carries nothing that changes")

        let audit = await service.respond(to: TestRequest(.get, "/v1/audit", headers: admin))
        let actions = (object(audit)["entries"] as? [[String: Any]])?.compactMap { $0["action"] as? String } ?? []
        #expect(actions.contains("layout.revoke"))

        let unrevoked = await service.respond(to: TestRequest(.delete, "/v1/accounts/jack/layout/versions/1/revoke", headers: admin))
        #expect(unrevoked.status == 200)
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("version", "1")])).status == 200)
        let after = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/manifest"))
        #expect(object(after)["revoked"] == nil)
        #expect((object(after)["revision"] as? Int ?? 0) >= (object(manifest)["revision"] as? Int ?? 0))
    }
}
