import Foundation
import MicroHTTPD
import TabLayout
import TabServiceTestSupport
import TabStore
import Testing

@testable import TabService

private func object(_ response: TestResponse) -> [String: Any] { CollectionHarness.object(response) }

/// The write side through its own collections (management, builds, change requests, rollouts) over one ``Changes``,
/// in process and without a service (over real sockets: `ManagementTests`, `BuildsLiveTests`,
/// `ChangeRequestLiveTests`, `RolloutLiveTests`).
@Suite struct WriteRoutesTests {
    @Test func aLayoutIsWrittenAndReadBackUnderItsPreconditions() async throws {
        let harness = try await WriteHarness()
        let created = await harness.send(.put, "/v1/accounts/acme/layout", body: document(["Home"]))
        #expect(created.status == 201, "\(created.text)")
        let etag = try #require(created.header("ETag"))
        #expect(object(created)["version"] as? Int == 1 && created.header("Layout-Version") == "1")
        let read = await harness.send(.get, "/v1/accounts/acme/layout")
        #expect(read.status == 200 && read.body == document(["Home"]) && read.header("ETag") == etag)

        let unconditional = await harness.send(.put, "/v1/accounts/acme/layout", body: document(["Home", "Search"]))
        #expect(unconditional.status == 428, "a replacement names the version it replaces")
        let stale = await harness.send(
            .put, "/v1/accounts/acme/layout", headers: [("If-Match", "\"stale\"")], body: document(["Home", "Search"]))
        #expect(stale.status == 412)
        let replaced = await harness.send(
            .put, "/v1/accounts/acme/layout", headers: [("If-Match", etag)], body: document(["Home", "Search"]))
        #expect(replaced.status == 200 && object(replaced)["version"] as? Int == 2, "\(replaced.text)")
        #expect(harness.changes.snapshot(for: .production).record("acme")?.version == 2, "published once stored")
        let versions = await harness.send(.get, "/v1/accounts/acme/layout/versions")
        #expect((object(versions)["versions"] as? [[String: Any]])?.compactMap { $0["version"] as? Int } == [2, 1])
    }

    @Test func aLayoutALiveBuildCannotOpenIsRefused() async throws {
        let harness = try await WriteHarness()
        // document(["Home", "Search"]) has tabs t0 (T0ViewController) and t1 (T1ViewController).
        let declared = await harness.send(.put, "/v1/builds/iphone/2.0", body: Array(#"{"viewControllers": ["T0ViewController"]}"#.utf8))
        #expect(declared.status == 201 && object(declared)["live"] as? Bool == true, "\(declared.text)")
        #expect(harness.changes.builds.all.map(\.id.version) == ["2.0"], "the registry is reloaded after the declaration")
        let refused = await harness.send(
            .put, "/v1/accounts/gated/layout", headers: [("If-None-Match", "*")], body: document(["Home", "Search"]))
        #expect(refused.status == 422 && (object(refused)["type"] as? String)?.hasSuffix("incompatible-build") == true)
        let errors = object(refused)["errors"] as? [[String: Any]]
        #expect(errors?.first?["pointer"] as? String == "/tabs/1/rootViewController")
        #expect(await harness.send(.get, "/v1/accounts/gated/layout").status == 404, "nothing stored")
        let opens = await harness.send(.put, "/v1/accounts/gated/layout", headers: [("If-None-Match", "*")], body: document(["Home"]))
        #expect(opens.status == 201)
    }

    @Test func aNewBuildPastMaxBuildsIs409AndAReplacementIsNot() async throws {
        let harness = try await WriteHarness(maxBuilds: 2)
        let spec = Array(#"{"viewControllers": ["T0ViewController"]}"#.utf8)
        #expect(await harness.send(.put, "/v1/builds/iphone/1.0", body: spec).status == 201)
        #expect(await harness.send(.put, "/v1/builds/iphone/2.0", body: spec).status == 201)
        let third = await harness.send(.put, "/v1/builds/iphone/3.0", body: spec)
        #expect(third.status == 409 && (object(third)["type"] as? String)?.hasSuffix("too-many-builds") == true, "\(third.text)")
        #expect(
            await harness.send(.put, "/v1/builds/iphone/2.0", body: Array(#"{"viewControllers": ["T1ViewController"]}"#.utf8)).status == 200
        )
        #expect(await harness.send(.delete, "/v1/builds/iphone/1.0").status == 204)
        #expect(await harness.send(.put, "/v1/builds/iphone/3.0", body: spec).status == 201, "room again after a retirement")
    }

    @Test func aBuildsSlotIsNeverGivenTwiceHoweverOftenItIsDeclared() {
        let registry = BuildRegistry()
        var seen = Set<UInt64>()
        // Past 65,536 declarations a 16-bit counter gave an old slot again (and the answers trimmed for it).
        for n in 0..<70_000 {
            let spec = Array(#"{"viewControllers": ["V\#(n)ViewController"]}"#.utf8)
            registry.replace(with: [
                StoredBuild(platform: "iphone", appVersion: "2.0", spec: spec, declaredAtMillis: 0, declaredBy: "ci", lastSeenMillis: nil)
            ])
            let slot = registry.declared(platform: .iphone, appVersion: AppVersion("2.0"))?.slot ?? 0
            seen.insert(slot)
        }
        #expect(seen.count == 70_000 && !seen.contains(0), "\(70_000 - seen.count) slots given twice")
    }

    @Test func aChangeToAProtectedEnvironmentIsHeldApprovedAndApplied() async throws {
        let harness = try await WriteHarness(environments: ["staging", "production"], approvals: ["production"])
        let production = [("environment", "production")]
        let held = await harness.send(
            .put, "/v1/accounts/reviewed/layout", query: production, headers: [("If-None-Match", "*")], body: document(["Home"]))
        #expect(held.status == 202, "\(held.text)")
        let id = try #require((object(held)["changeRequest"] as? [String: Any])?["id"] as? String)
        #expect(held.header("Location") == "/v1/change-requests/\(id)")
        #expect(harness.changes.snapshot(for: .production).record("reviewed") == nil, "held, not served")

        #expect(await harness.send(.post, "/v1/change-requests/\(id)/approve").status == 403, "not by its author")
        let approved = await harness.send(.post, "/v1/change-requests/\(id)/approve", token: WriteHarness.reviewer)
        #expect(approved.status == 200 && object(approved)["state"] as? String == "approved", "\(approved.text)")
        let applied = await harness.send(.post, "/v1/change-requests/\(id)/apply")
        #expect(applied.status == 200 && object(applied)["state"] as? String == "applied", "\(applied.text)")
        #expect(harness.changes.snapshot(for: .production).record("reviewed") != nil, "served once applied")
        let read = await harness.send(.get, "/v1/accounts/reviewed/layout", query: production)
        #expect(read.status == 200 && read.body == document(["Home"]))
        #expect(await harness.send(.post, "/v1/change-requests/\(id)/apply").status == 409, "applied once")
    }

    @Test func aHeldChangeThisBuildDoesNotKnowFailsAndWritesNothing() async throws {
        let harness = try await WriteHarness(approvals: ["production"])
        let held = await harness.send(.put, "/v1/accounts/future/layout", headers: [("If-None-Match", "*")], body: document(["Home"]))
        let id = try #require((object(held)["changeRequest"] as? [String: Any])?["id"] as? String)
        #expect(await harness.send(.post, "/v1/change-requests/\(id)/approve", token: WriteHarness.reviewer).status == 200)
        // A row as a newer build would write it: the same request, with an action this build has never heard of.
        var stored = try #require(try await harness.store.changeRequest(id: id))
        let text = String(decoding: stored.record, as: UTF8.self)
        #expect(text.contains(#""action":"layout.put""#), "\(text)")
        let previous = stored.record
        stored.record = Array(text.replacingOccurrences(of: #""action":"layout.put""#, with: #""action":"layout.archive""#).utf8)
        #expect(try await harness.store.update(changeRequest: stored, replacing: previous, audit: nil, event: nil))

        let applied = await harness.send(.post, "/v1/change-requests/\(id)/apply")
        let after = await harness.send(.get, "/v1/change-requests/\(id)")
        #expect(object(after)["state"] as? String == "failed", "\(applied.text) / \(after.text)")
        #expect((object(after)["reason"] as? String)?.contains("layout.archive") == true, "\(after.text)")
        #expect(harness.changes.snapshot(for: .production).record("future") == nil, "nothing written")
        #expect(await harness.send(.get, "/v1/accounts/future/layout").status == 404)
    }

    @Test func aRejectionsReasonIsAtMostTwoKibibytes() async throws {
        let harness = try await WriteHarness(approvals: ["production"])
        let held = await harness.send(.put, "/v1/accounts/rejected/layout", headers: [("If-None-Match", "*")], body: document(["Home"]))
        let id = try #require((object(held)["changeRequest"] as? [String: Any])?["id"] as? String)
        let long = Array(#"{"reason": "\#(String(repeating: "x", count: 2_049))"}"#.utf8)
        let refused = await harness.send(.post, "/v1/change-requests/\(id)/reject", body: long, token: WriteHarness.reviewer)
        #expect(refused.status == 422 && (object(refused)["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "/reason")
        let fits = Array(#"{"reason": "\#(String(repeating: "x", count: 2_048))"}"#.utf8)
        #expect(await harness.send(.post, "/v1/change-requests/\(id)/reject", body: fits, token: WriteHarness.reviewer).status == 200)
    }

    @Test func aRolloutIsStartedPausedAndCompleted() async throws {
        let harness = try await WriteHarness()
        let first = await harness.send(.put, "/v1/accounts/roll/layout", headers: [("If-None-Match", "*")], body: document(["One"]))
        let etag = try #require(first.header("ETag"))
        let draft = await harness.send(
            .put, "/v1/accounts/roll/layout", query: [("publish", "false")], headers: [("If-Match", etag)], body: document(["One", "Two"]))
        #expect(draft.status == 200 && object(draft)["version"] as? Int == 2, "\(draft.text)")

        let started = await harness.send(
            .post, "/v1/accounts/roll/layout/rollout", headers: [("If-Match", etag)],
            body: Array(#"{"version": 2, "percent": 25, "seed": "fixed"}"#.utf8))
        #expect(started.status == 201 && object(started)["state"] as? String == "running", "\(started.text)")
        #expect(harness.changes.snapshot(for: .production).contents.rollouts["roll"] != nil, "served once started")
        let paused = await harness.send(.patch, "/v1/accounts/roll/layout/rollout", body: Array(#"{"paused": true}"#.utf8))
        #expect(paused.status == 200 && object(paused)["state"] as? String == "paused", "\(paused.text)")
        let completed = await harness.send(.post, "/v1/accounts/roll/layout/rollout/complete")
        #expect(completed.status == 200 && object(completed)["state"] as? String == "completed", "\(completed.text)")
        #expect(harness.changes.snapshot(for: .production).record("roll")?.version == 2, "the candidate is served to everyone")
        let read = await harness.send(.get, "/v1/accounts/roll/layout/rollout")
        #expect(read.status == 200 && object(read)["state"] as? String == "completed")
    }
}
