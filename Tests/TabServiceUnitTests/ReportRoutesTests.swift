import Foundation
import TabDelivery
import TabServiceTestSupport
import TabStore
import Testing

@testable import TabService

/// `POST …/tabs/reports` and the guard in process (``WriteHarness``, no socket, no clock in the background): the arm
/// decided by the server, repeats counted once, the guard applied once by ``ReportLedger/evaluate(_:)`` with author
/// `tabserver`, and `GET …/rollout`'s `guard` and `health`.
@Suite struct ReportRoutesTests {
    static func report(_ harness: WriteHarness, _ install: String, _ reports: String) async -> TestResponse {
        await harness.respond(
            to: TestRequest(
                .post, "/v1/accounts/roll/tabs/reports", headers: [("Content-Type", "application/json")],
                body: Array(#"{"installId": "\#(install)", "reports": [\#(reports)]}"#.utf8)))
    }

    /// Version 1 served and version 2 a draft, with a rollout of version 2 to everyone (100 %) carrying `guard`.
    static func guarded(_ guardRule: String) async throws -> WriteHarness {
        let harness = try await WriteHarness()
        let first = await harness.send(.put, "/v1/accounts/roll/layout", headers: [("If-None-Match", "*")], body: document(["One"]))
        let etag = try #require(first.header("ETag"))
        let draft = await harness.send(
            .put, "/v1/accounts/roll/layout", query: [("publish", "false")], headers: [("If-Match", etag)], body: document(["One", "Two"]))
        #expect(draft.status == 200, "\(draft.text)")
        let started = await harness.send(
            .post, "/v1/accounts/roll/layout/rollout", headers: [("If-Match", etag)],
            body: Array(#"{"version": 2, "percent": 100, "guard": \#(guardRule)}"#.utf8))
        #expect(started.status == 201, "\(started.text)")
        return harness
    }

    static func rollout(_ harness: WriteHarness) async throws -> [String: Any] {
        let read = await harness.send(.get, "/v1/accounts/roll/layout/rollout")
        return try #require((try? JSONSerialization.jsonObject(with: Data(read.body))) as? [String: Any])
    }

    @Test func theGuardTripsOnceOnTheCountsAndNamesThem() async throws {
        let harness = try await Self.guarded(
            #"{"kind": "refused", "maxRate": 0.25, "minInstalls": 4, "minFailures": 2, "action": "rollback"}"#)
        for n in 0..<8 {
            let answer = await Self.report(
                harness, "phone-\(n)", #"{"version": 2, "kind": "rendered"}, {"version": 1, "kind": "rendered"}"#)
            #expect(
                answer.status == 202 && answer.text.contains(#""accepted":1"#) && answer.text.contains(#""ignored":1"#), "\(answer.text)")
        }
        for _ in 0..<5 { _ = await Self.report(harness, "phone-0", #"{"version": 2, "kind": "refused", "reason": "bad signature"}"#) }
        await harness.ledger.evaluate(harness.changes)
        #expect(try await Self.rollout(harness)["state"] as? String == "running", "one refusing install of 8: under minFailures")
        _ = await Self.report(harness, "phone-1", #"{"version": 2, "kind": "refused"}"#)
        _ = await Self.report(harness, "phone-2", #"{"version": 2, "kind": "refused"}"#)
        await harness.ledger.evaluate(harness.changes)
        let read = try await Self.rollout(harness)
        #expect(read["state"] as? String == "rolledBack", "3 of 8 refusing: over a quarter")
        let history = try #require(read["history"] as? [[String: Any]])
        let line = try #require(history.last)
        #expect(line["author"] as? String == "tabserver" && line["change"] as? String == "rolledBack")
        #expect(
            line["reason"] as? String == "guard refused: candidate 3 of 8 installs failing (37.5%), stable 0 of 0 (0%); above maxRate 0.25",
            "\(line)")
        let health = try #require(read["health"] as? [String: [String: Any]])
        #expect(health["candidate"]?["installs"] as? Int == 8 && health["candidate"]?["failed"] as? Int == 3)
        #expect((health["candidate"]?["byKind"] as? [String: Int]) == ["rendered": 8, "refused": 3])
        #expect((read["guard"] as? [String: Any])?["kind"] as? String == "refused")
        await harness.ledger.evaluate(harness.changes)
        let after = try await Self.rollout(harness)
        #expect((after["history"] as? [[String: Any]])?.count == history.count, "applied once")
        let audit = try await harness.store.audit(afterID: 0, limit: 100, account: "roll", actor: "tabserver")
        #expect(audit.map(\.action) == ["rollout.rolledBack"])
    }

    @Test func patchSetsAndRemovesTheGuard() async throws {
        let harness = try await Self.guarded(#"{"kind": "tabFailed", "maxRatio": 3}"#)
        let removed = await harness.send(.patch, "/v1/accounts/roll/layout/rollout", body: Array(#"{"guard": null}"#.utf8))
        #expect(removed.status == 200 && removed.text.contains(#""guard":null"#), "\(removed.text)")
        let set = await harness.send(
            .patch, "/v1/accounts/roll/layout/rollout", body: Array(#"{"guard": {"kind": "reverted", "maxRate": 0.05}}"#.utf8))
        #expect(set.status == 200 && set.text.contains(#""kind":"reverted""#), "\(set.text)")
        let bad = await harness.send(
            .patch, "/v1/accounts/roll/layout/rollout", body: Array(#"{"guard": {"kind": "x", "maxRate": 2}}"#.utf8))
        #expect(bad.status == 422 && bad.text.contains("/guard/kind") && bad.text.contains("/guard/maxRate"), "\(bad.text)")
    }
}
