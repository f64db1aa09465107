import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

/// Change requests over a real socket (docs/change-requests.md): a protected environment holds changes for review;
/// approvals by others, apply with the original precondition, schedules, bypass.
@Suite(.serialized) struct ChangeRequestLiveTests {
    static func object(_ response: HTTPTestClient.Response) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    static func token(_ client: HTTPTestClient, _ name: String, _ scopes: [String]) async throws -> [(String, String)] {
        let made = try await client.send(
            "POST", "/v1/tokens", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: Array(try JSONSerialization.data(withJSONObject: ["name": name, "scopes": scopes])))
        return [("Authorization", "Bearer \(try #require(object(made)["token"] as? String))")]
    }

    static let json = [("Content-Type", "application/json")]

    @Test func aProtectedChangeWaitsForOthersAndAppliesWithItsPrecondition() async throws {
        let harness = try await ServiceHarness(approvals: ["production:2"])
        defer { harness.application.stop() }
        let client = harness.client()
        let alice = try await Self.token(client, "alice", ["write"])
        let bob = try await Self.token(client, "bob", ["approve"])
        let carol = try await Self.token(client, "carol", ["approve"])
        let reader = try await Self.token(client, "dave", ["read"])

        let held = try await client.send(
            "PUT", "/v1/accounts/reviewed/layout", headers: alice + Self.json + [("If-None-Match", "*")], body: document(["Home"]))
        #expect(held.status == 202, "\(String(decoding: held.body, as: UTF8.self))")
        let request = try #require(Self.object(held)["changeRequest"] as? [String: Any])
        let id = try #require(request["id"] as? String)
        #expect(held.header("Location") == "/v1/change-requests/\(id)" && request["state"] as? String == "open")
        #expect(request["required"] as? Int == 2 && request["author"] as? String == "alice" && request["action"] as? String == "layout.put")
        #expect(Self.object(try await client.send("GET", "/v1/accounts/reviewed/tabs"))["layout"] as? String == "default")
        // The feed's position now (Last-Event-ID 0 is older than what it keeps: `reset` names the current one).
        let reset = String(
            decoding: try await client.send("GET", "/v1/events", headers: ServiceHarness.admin([("Last-Event-ID", "0")])).body,
            as: UTF8.self)
        let position = try #require(reset.split(separator: "\n").first { $0.hasPrefix("id: ") }?.dropFirst(4))

        // The author never approves; a reader may not; each approver once.
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: alice).status == 403)
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: reader).status == 403)
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: bob).status == 200)
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: bob).status == 409)
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/apply", headers: alice).status == 409)  // one of two
        let approved = try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: carol)
        #expect(Self.object(approved)["state"] as? String == "approved")
        #expect((Self.object(approved)["approvals"] as? [[String: Any]])?.compactMap { $0["by"] as? String } == ["bob", "carol"])

        let applied = try await client.send("POST", "/v1/change-requests/\(id)/apply", headers: alice)
        #expect(
            applied.status == 200 && Self.object(applied)["state"] as? String == "applied",
            "\(String(decoding: applied.body, as: UTF8.self))")
        #expect(Self.object(try await client.send("GET", "/v1/accounts/reviewed/tabs"))["layout"] as? String == "reviewed")
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/apply", headers: alice).status == 409)

        // Overtaken: a request made against the ETag that another change replaced fails with 412 and never overwrites.
        let etag = try #require(try await client.send("GET", "/v1/accounts/reviewed/layout", headers: alice).header("ETag"))
        let first = try await client.send(
            "PUT", "/v1/accounts/reviewed/layout", headers: alice + Self.json + [("If-Match", etag)], body: document(["One"]))
        let second = try await client.send(
            "PUT", "/v1/accounts/reviewed/layout", headers: alice + Self.json + [("If-Match", etag)], body: document(["Two"]))
        let firstID = try #require((Self.object(first)["changeRequest"] as? [String: Any])?["id"] as? String)
        let secondID = try #require((Self.object(second)["changeRequest"] as? [String: Any])?["id"] as? String)
        for id in [firstID, secondID] {
            _ = try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: bob)
            _ = try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: carol)
        }
        #expect(try await client.send("POST", "/v1/change-requests/\(firstID)/apply", headers: alice).status == 200)
        #expect(try await client.send("POST", "/v1/change-requests/\(secondID)/apply", headers: alice).status == 412)
        #expect(
            Self.object(try await client.send("GET", "/v1/change-requests/\(secondID)", headers: reader))["state"] as? String == "failed")
        let served = Self.object(try await client.send("GET", "/v1/accounts/reviewed/tabs"))
        #expect((served["tabs"] as? [[String: Any]])?.first?["title"] as? String == "One")

        // Reject with a reason; cancel by its author only; the list filters by state.
        let third = try await client.send(
            "DELETE", "/v1/accounts/reviewed/layout",
            headers: alice + [
                ("If-Match", try await client.send("GET", "/v1/accounts/reviewed/layout", headers: alice).header("ETag") ?? "")
            ])
        #expect(third.status == 202 && (Self.object(third)["changeRequest"] as? [String: Any])?["action"] as? String == "layout.delete")
        let thirdID = try #require((Self.object(third)["changeRequest"] as? [String: Any])?["id"] as? String)
        #expect(try await client.send("POST", "/v1/change-requests/\(thirdID)/cancel", headers: reader).status == 403)
        let rejected = try await client.send(
            "POST", "/v1/change-requests/\(thirdID)/reject", headers: bob + Self.json, body: Array(#"{"reason": "not this week"}"#.utf8))
        #expect(Self.object(rejected)["state"] as? String == "rejected" && Self.object(rejected)["reason"] as? String == "not this week")
        let failed =
            Self.object(try await client.send("GET", "/v1/change-requests?state=failed", headers: reader))["changeRequests"]
            as? [[String: Any]]
        #expect(failed?.compactMap { $0["id"] as? String } == [secondID])
        let audit = String(
            decoding: try await client.send("GET", "/v1/audit?account=reviewed", headers: ServiceHarness.admin()).body, as: UTF8.self)
        for action in [
            "change-request.open", "change-request.approved", "change-request.applied", "change-request.failed", "change-request.rejected",
        ] {
            #expect(audit.contains(action), "\(action)")
        }
        // Each transition is an `event: change-request` of the change feed, its data the request.
        let feed = String(
            decoding: try await client.send("GET", "/v1/events", headers: ServiceHarness.admin([("Last-Event-ID", String(position))])).body,
            as: UTF8.self)
        #expect(feed.contains("event: change-request\n") && feed.contains(#""state":"rejected""#), "\(feed.prefix(600))")
        // The schedule reads the counts at once after each announced transition (its period alone is 10 s).
        try await Task.sleep(for: .milliseconds(1_200))
        let metrics = String(decoding: try await client.send("GET", "/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"tabserver_change_requests{state="failed"} 1"#), "\(metrics.suffix(500))")
    }

    @Test func aScheduledRequestIsAppliedAtItsTimeAndAnAdminMayBypass() async throws {
        let harness = try await ServiceHarness(approvals: ["production"])
        defer { harness.application.stop() }
        let client = harness.client()
        let alice = try await Self.token(client, "alice", ["write"])
        let bob = try await Self.token(client, "bob", ["approve"])
        let at = Date().addingTimeInterval(2)
        let stamp = ISO8601DateFormatter().string(from: at)
        let past = try await client.send(
            "PUT", "/v1/accounts/scheduled/layout",
            headers: alice + Self.json + [("If-None-Match", "*"), ("Apply-At", "2001-01-01T00:00:00Z")],
            body: document(["Home"]))
        #expect(past.status == 422)
        let held = try await client.send(
            "PUT", "/v1/accounts/scheduled/layout", headers: alice + Self.json + [("If-None-Match", "*"), ("Apply-At", stamp)],
            body: document(["Home"]))
        let id = try #require((Self.object(held)["changeRequest"] as? [String: Any])?["id"] as? String)
        #expect((Self.object(held)["changeRequest"] as? [String: Any])?["applyAt"] is String)
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: bob).status == 200)
        #expect(Self.object(try await client.send("GET", "/v1/accounts/scheduled/tabs"))["layout"] as? String == "default")
        var state = ""
        let deadline = at.addingTimeInterval(3)
        while Date() < deadline, state != "applied" {
            try await Task.sleep(for: .milliseconds(200))
            state = Self.object(try await client.send("GET", "/v1/change-requests/\(id)", headers: bob))["state"] as? String ?? ""
        }
        #expect(state == "applied")
        #expect(Date() < at.addingTimeInterval(2.5))
        #expect(Self.object(try await client.send("GET", "/v1/accounts/scheduled/tabs"))["layout"] as? String == "scheduled")

        // An admin applies at once with bypassApproval (audited as such); a writer may not.
        let etag = try await client.send("GET", "/v1/accounts/scheduled/layout", headers: alice).header("ETag") ?? ""
        #expect(
            try await client.send(
                "PUT", "/v1/accounts/scheduled/layout?bypassApproval=true", headers: alice + Self.json + [("If-Match", etag)],
                body: document(["Two"])
            ).status == 403)
        let bypassed = try await client.send(
            "PUT", "/v1/accounts/scheduled/layout?bypassApproval=true", headers: ServiceHarness.admin(Self.json + [("If-Match", etag)]),
            body: document(["Two"]))
        #expect(bypassed.status == 200)
        let audit = String(
            decoding: try await client.send("GET", "/v1/audit?account=scheduled", headers: ServiceHarness.admin()).body, as: UTF8.self)
        #expect(audit.contains("bypassApproval"))
    }

    /// Approvals by different tokens at once all count; each is audited as an approval; once approved, `applyAt` is
    /// settled: a later approval cannot move it and an explicit apply before it is 409.
    @Test func concurrentApprovalsAllCountAndAnApprovedTimeIsFirm() async throws {
        let harness = try await ServiceHarness(approvals: ["production:3"])
        defer { harness.application.stop() }
        let client = harness.client()
        let alice = try await Self.token(client, "alice", ["write"])
        var approvers: [[(String, String)]] = []
        for name in ["bob", "carol", "erin", "frank"] { approvers.append(try await Self.token(client, name, ["approve"])) }
        let held = try await client.send(
            "PUT", "/v1/accounts/raced/layout", headers: alice + Self.json + [("If-None-Match", "*")], body: document(["Home"]))
        let id = try #require((Self.object(held)["changeRequest"] as? [String: Any])?["id"] as? String)
        let applyAt = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3_600))
        let body = Array(#"{"applyAt": "\#(applyAt)"}"#.utf8)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for approver in approvers.prefix(3) {
                group.addTask {
                    try await harness.client().send(
                        "POST", "/v1/change-requests/\(id)/approve", headers: approver + Self.json, body: body
                    ).status
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == [200, 200, 200], "\(statuses)")
        let request = Self.object(try await client.send("GET", "/v1/change-requests/\(id)", headers: alice))
        #expect(request["state"] as? String == "approved" && (request["approvals"] as? [Any])?.count == 3, "\(request)")
        let audit = String(
            decoding: try await client.send("GET", "/v1/audit?account=raced", headers: ServiceHarness.admin()).body, as: UTF8.self)
        #expect(audit.components(separatedBy: "change-request.approved").count - 1 == 3, "every approval is audited as one")

        let sooner = ISO8601DateFormatter().string(from: Date().addingTimeInterval(60))
        let moved = try await client.send(
            "POST", "/v1/change-requests/\(id)/approve", headers: approvers[3] + Self.json, body: Array(#"{"applyAt": "\#(sooner)"}"#.utf8))
        #expect(moved.status == 409, "\(String(decoding: moved.body, as: UTF8.self))")
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/apply", headers: alice).status == 409, "not before its time")
    }

    /// A build's declaration or retirement changes what its clients get in every environment: with one protected, a
    /// change that alters a live build's answers waits for review, and one that changes nothing they get does not.
    @Test func aBuildChangeThatAltersAnswersWaitsForReview() async throws {
        let harness = try await ServiceHarness(environments: ["staging", "production"], approvals: ["production"])
        defer { harness.application.stop() }
        let client = harness.client()
        let alice = try await Self.token(client, "alice", ["write", "deploy"])
        let bob = try await Self.token(client, "bob", ["approve"])
        let spec = Array(#"{"viewControllers": ["HomeViewController"]}"#.utf8)

        let held = try await client.send("PUT", "/v1/builds/iphone/2.0", headers: alice + Self.json, body: spec)
        #expect(held.status == 202, "\(String(decoding: held.body, as: UTF8.self))")
        let request = try #require(Self.object(held)["changeRequest"] as? [String: Any])
        #expect(request["action"] as? String == "build.declare" && request["build"] as? String == "iphone/2.0")
        #expect(request["environment"] as? String == "production" && request["account"] == nil)
        let id = try #require(request["id"] as? String)
        #expect(try await client.send("GET", "/v1/builds/iphone/2.0", headers: alice).status == 404, "not declared before it is applied")
        #expect(try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: bob).status == 200)
        let applied = try await client.send("POST", "/v1/change-requests/\(id)/apply", headers: alice)
        #expect(Self.object(applied)["state"] as? String == "applied", "\(String(decoding: applied.body, as: UTF8.self))")
        #expect(try await client.send("GET", "/v1/builds/iphone/2.0", headers: alice).status == 200)

        // The same view controllers with a note: nothing a client gets changes.
        let noted = try await client.send(
            "PUT", "/v1/builds/iphone/2.0", headers: alice + Self.json,
            body: Array(#"{"viewControllers": ["HomeViewController"], "note": "TestFlight"}"#.utf8))
        #expect(noted.status == 200, "\(String(decoding: noted.body, as: UTF8.self))")
        let retired = try await client.send("DELETE", "/v1/builds/iphone/2.0", headers: alice)
        #expect(retired.status == 202, "a live build's retirement waits too")
        #expect(Self.object(retired)["changeRequest"].flatMap { ($0 as? [String: Any])?["action"] as? String } == "build.retire")
        let bypassed = try await client.send("DELETE", "/v1/builds/iphone/2.0?bypassApproval=true", headers: ServiceHarness.admin())
        #expect(bypassed.status == 204)
    }

    /// Promotions, rollout starts and raises into a protected environment wait for review as layout writes do, and
    /// show the tab-level diff; a pause and a rollback never wait.
    @Test func promotionsAndRolloutsWaitTooButNeverAPauseOrARollback() async throws {
        let harness = try await ServiceHarness(environments: ["staging", "production"], approvals: ["production"])
        defer { harness.application.stop() }
        let client = harness.client()
        let alice = try await Self.token(client, "alice", ["write", "deploy"])
        let bob = try await Self.token(client, "bob", ["approve"])
        let staging = "/v1/accounts/promoted/layout?environment=staging"

        func approveAndApply(_ held: HTTPTestClient.Response) async throws -> HTTPTestClient.Response {
            #expect(held.status == 202, "\(String(decoding: held.body, as: UTF8.self))")
            let id = try #require((Self.object(held)["changeRequest"] as? [String: Any])?["id"] as? String)
            #expect(try await client.send("POST", "/v1/change-requests/\(id)/approve", headers: bob).status == 200)
            return try await client.send("POST", "/v1/change-requests/\(id)/apply", headers: alice)
        }

        let v1 = try await client.send("PUT", staging, headers: alice + Self.json + [("If-None-Match", "*")], body: document(["Home"]))
        #expect(v1.status == 201, "\(String(decoding: v1.body, as: UTF8.self))")
        let promotion = Array(#"{"from": "staging", "to": "production"}"#.utf8)
        let heldPromotion = try await client.send(
            "POST", "/v1/accounts/promoted/layout/promote", headers: alice + Self.json, body: promotion)
        let request = try #require(Self.object(heldPromotion)["changeRequest"] as? [String: Any])
        #expect(
            request["action"] as? String == "layout.promote" && request["version"] as? Int == 1
                && request["environment"] as? String == "production")
        let read = Self.object(try await client.send("GET", "/v1/change-requests/\(request["id"] as? String ?? "")", headers: bob))
        let changes = try #require((read["diff"] as? [String: Any])?["changes"] as? [[String: Any]], "\(read)")
        #expect(changes.contains { $0["op"] as? String == "added" }, "\(changes)")
        let production = [("Tabs-Environment", "production")]
        #expect(
            Self.object(try await client.send("GET", "/v1/accounts/promoted/tabs", headers: production))["layout"] as? String == "default")
        let promoted = try await approveAndApply(heldPromotion)
        #expect(
            promoted.status == 200 && Self.object(promoted)["state"] as? String == "applied",
            "\(String(decoding: promoted.body, as: UTF8.self))")
        let served = try await client.send("GET", "/v1/accounts/promoted/tabs", headers: production)
        #expect(Self.object(served)["layout"] as? String == "promoted")

        // A rollout of staging's next version into production: its start and its raise wait, a pause does not.
        let v2 = try await client.send(
            "PUT", staging, headers: alice + Self.json + [("If-Match", v1.header("ETag") ?? "")], body: document(["Home", "Search"]))
        #expect(v2.status == 200)
        let current = try await client.send("GET", "/v1/accounts/promoted/layout?environment=production", headers: alice)
        let start = try await client.send(
            "POST", "/v1/accounts/promoted/layout/rollout?environment=production",
            headers: alice + Self.json + [("If-Match", current.header("ETag") ?? "")], body: Array(#"{"version": 2, "percent": 10}"#.utf8))
        #expect((Self.object(start)["changeRequest"] as? [String: Any])?["action"] as? String == "rollout.start")
        let started = try await approveAndApply(start)
        #expect(started.status == 200, "\(String(decoding: started.body, as: UTF8.self))")
        let rollout = "/v1/accounts/promoted/layout/rollout?environment=production"
        #expect(Self.object(try await client.send("GET", rollout, headers: alice))["percent"] as? Double == 10)
        let raise = try await client.send("PATCH", rollout, headers: alice + Self.json, body: Array(#"{"percent": 50}"#.utf8))
        #expect((Self.object(raise)["changeRequest"] as? [String: Any])?["action"] as? String == "rollout.patch")
        let raised = try await approveAndApply(raise)
        #expect(raised.status == 200, "\(String(decoding: raised.body, as: UTF8.self))")
        #expect(Self.object(try await client.send("GET", rollout, headers: alice))["percent"] as? Double == 50)
        let paused = try await client.send("PATCH", rollout, headers: alice + Self.json, body: Array(#"{"paused": true}"#.utf8))
        #expect(paused.status == 200, "\(String(decoding: paused.body, as: UTF8.self))")
        let rolledBack = try await client.send(
            "POST", "/v1/accounts/promoted/layout/rollout/rollback?environment=production", headers: alice + Self.json,
            body: Array(#"{"reason": "pager"}"#.utf8))
        #expect(rolledBack.status == 200, "\(String(decoding: rolledBack.body, as: UTF8.self))")

        // A strings table of the protected environment waits too, named by its locale; a stale If-Match is 412 at once.
        let strings = "/v1/strings/nl?environment=production"
        let table = Array(#"{"home": "Accueil"}"#.utf8)
        let stale = try await client.send("PUT", strings, headers: alice + Self.json + [("If-Match", "\"nope\"")], body: table)
        #expect(stale.status == 412 || stale.status == 428, "\(String(decoding: stale.body, as: UTF8.self))")
        let heldStrings = try await client.send("PUT", strings, headers: alice + Self.json + [("If-None-Match", "*")], body: table)
        let stringsRequest = try #require(
            Self.object(heldStrings)["changeRequest"] as? [String: Any], "\(String(decoding: heldStrings.body, as: UTF8.self))")
        #expect(
            stringsRequest["locale"] as? String == "nl" && stringsRequest["account"] == nil
                && stringsRequest["action"] as? String == "strings.put")
        #expect(try await client.send("GET", strings, headers: alice).status == 404)
        let written = try await approveAndApply(heldStrings)
        #expect(
            written.status == 200 && Self.object(written)["state"] as? String == "applied",
            "\(String(decoding: written.body, as: UTF8.self))")
        #expect(try await client.send("GET", strings, headers: alice).status == 200)
        // A strings table promoted into production waits too, with its If-Match checked at once.
        #expect(
            try await client.send(
                "PUT", "/v1/strings/nl?environment=staging", headers: alice + Self.json + [("If-None-Match", "*")],
                body: Array(#"{"home": "Thuis"}"#.utf8)
            ).status == 201)
        let promoteStrings = Array(#"{"from": "staging", "to": "production"}"#.utf8)
        let unconditional = try await client.send("POST", "/v1/strings/nl/promote", headers: alice + Self.json, body: promoteStrings)
        #expect(unconditional.status == 428, "\(String(decoding: unconditional.body, as: UTF8.self))")
        let productionTable = try await client.send("GET", strings, headers: alice)
        let heldPromotionOfStrings = try await client.send(
            "POST", "/v1/strings/nl/promote", headers: alice + Self.json + [("If-Match", productionTable.header("ETag") ?? "")],
            body: promoteStrings)
        #expect((Self.object(heldPromotionOfStrings)["changeRequest"] as? [String: Any])?["action"] as? String == "strings.promote")
        #expect(try await approveAndApply(heldPromotionOfStrings).status == 200)
        #expect(String(decoding: try await client.send("GET", strings, headers: alice).body, as: UTF8.self).contains("Thuis"))

        // The list pages oldest first: `after` continues after the id a page ended with.
        let first =
            Self.object(try await client.send("GET", "/v1/change-requests?limit=2", headers: bob))["changeRequests"] as? [[String: Any]]
        let last = try #require(first?.last?["id"] as? String)
        let next =
            Self.object(try await client.send("GET", "/v1/change-requests?after=\(last)", headers: bob))["changeRequests"]
            as? [[String: Any]]
        #expect(
            first?.count == 2 && next?.count == 3 && next?.first?["action"] as? String == "rollout.patch", "\(String(describing: next))")
        #expect(try await client.send("GET", "/v1/change-requests?after=cr_nothing", headers: bob).status == 400)
    }

    /// `serve` reads the environments before the protected ones it must name (`--require-approval staging` with
    /// `--environments staging,production` was refused as "not one of the environments (production)").
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ServerProcess.binary)))
    func serveProtectsANamedEnvironmentOtherThanTheDefault() async throws {
        let directory = NSTemporaryDirectory()
        let server = try await ServerProcess.start(
            store: "memory:", directory: directory,
            environment: [
                "TABSERVER_ADMIN_TOKEN": ServiceHarness.token, "TABSERVER_ENVIRONMENTS": "staging,production",
                "TABSERVER_REQUIRE_APPROVAL": "staging",
            ])
        defer { server.kill9() }
        let client = HTTPTestClient(port: server.port)
        let held = try await client.send(
            "PUT", "/v1/accounts/staged/layout?environment=staging", headers: ServiceHarness.admin(Self.json + [("If-None-Match", "*")]),
            body: document(["Home"]))
        #expect(held.status == 202, "\(held.text)")
        let direct = try await client.send(
            "PUT", "/v1/accounts/staged/layout?environment=production", headers: ServiceHarness.admin(Self.json + [("If-None-Match", "*")]),
            body: document(["Home"]))
        #expect(direct.status == 201, "\(direct.text)")
    }
}
