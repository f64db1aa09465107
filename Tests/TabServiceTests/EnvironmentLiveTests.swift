import Foundation
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// Two environments over a real socket: changes enter staging, apps get production unless they name staging
/// (`Vary: Tabs-Environment`), a promotion moves production's pointer with the write preconditions, and a gradual
/// promotion is a rollout in production.
@Suite struct EnvironmentLiveTests {
    static let json = [("Content-Type", "application/json")]

    func harness() async throws -> ServiceHarness {
        try await ServiceHarness(environments: ["staging", "production"])
    }

    func tag(_ client: HTTPTestClient, _ path: String) async throws -> String {
        try #require(try await client.send("GET", path, headers: ServiceHarness.admin()).header("ETag"))
    }

    @Test func changesEnterStagingAndReachProductionByPromotion() async throws {
        let harness = try await harness()
        let client = harness.client()
        // configs/ seeded both environments with one version each.
        let versions = try await client.send("GET", "/v1/accounts/jack/layout/versions", headers: ServiceHarness.admin())
        let listed = (versions.json?["versions"] as? [[String: Any]]) ?? []
        #expect(listed.count == 1 && listed.first?["environments"] as? [String] == ["staging", "production"], "\(versions.text)")

        let staging = try await tag(client, "/v1/accounts/jack/layout")
        let write = try await client.send(
            "PUT", "/v1/accounts/jack/layout", headers: ServiceHarness.admin(Self.json + [("If-Match", staging)]),
            body: document(["Staged"]))
        #expect(write.status == 200 && write.json?["version"] as? Int == 2)
        let app = try await client.send("GET", "/v1/accounts/jack/tabs")
        #expect(app.json?["version"] as? Int == 1, "apps get production")
        #expect(app.header("Vary")?.contains("Tabs-Environment") == true)
        let tester = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("Tabs-Environment", "staging")])
        #expect(tester.json?["version"] as? Int == 2 && tester.header("ETag") != app.header("ETag"))
        let byQuery = try await client.send("GET", "/v1/accounts/jack/tabs?environment=staging")
        #expect(byQuery.json?["version"] as? Int == 2)
        #expect(try await client.send("GET", "/v1/accounts/jack/tabs?environment=qa").status == 404)

        let promoteBody = Array(#"{"from": "staging"}"#.utf8)
        let unconditional = try await client.send(
            "POST", "/v1/accounts/jack/layout/promote", headers: ServiceHarness.admin(Self.json), body: promoteBody)
        #expect(unconditional.status == 428, "production has jack: If-Match needed")
        let stale = try await client.send(
            "POST", "/v1/accounts/jack/layout/promote", headers: ServiceHarness.admin(Self.json + [("If-Match", "\"v9-x\"")]),
            body: promoteBody)
        #expect(stale.status == 412)
        let production = try await tag(client, "/v1/accounts/jack/layout?environment=production")
        let promoted = try await client.send(
            "POST", "/v1/accounts/jack/layout/promote", headers: ServiceHarness.admin(Self.json + [("If-Match", production)]),
            body: promoteBody)
        #expect(promoted.status == 200 && promoted.json?["version"] as? Int == 2, "\(promoted.text)")
        #expect(try await client.send("GET", "/v1/accounts/jack/tabs").json?["version"] as? Int == 2)
        let again = try await client.send(
            "POST", "/v1/accounts/jack/layout/promote", headers: ServiceHarness.admin(Self.json + [("If-Match", "*")]), body: promoteBody)
        #expect(again.status == 200, "promoting what production has already changes nothing")

        let newAccount = try await client.send(
            "PUT", "/v1/accounts/fresh/layout", headers: ServiceHarness.admin(Self.json), body: document(["New"]))
        #expect(newAccount.status == 201)
        #expect(try await client.send("GET", "/v1/accounts/fresh/tabs").json?["layout"] as? String != "fresh", "not in production yet")
        let created = try await client.send(
            "POST", "/v1/accounts/fresh/layout/promote", headers: ServiceHarness.admin(Self.json + [("If-None-Match", "*")]),
            body: Array(#"{"from": "staging", "to": "production"}"#.utf8))
        #expect(created.status == 201, "\(created.text)")
        #expect(try await client.send("GET", "/v1/accounts/fresh/tabs").json?["layout"] as? String == "fresh")
        let feed = harness.service.publisher.feed.events(after: 0, current: harness.service.snapshot.sequence)
        if case .events(let events) = feed {
            #expect(events.filter { $0.kind == .promote }.count == 2)
        }
    }

    @Test func badPromotionsAreRefusedAtTheirPointer() async throws {
        let harness = try await harness()
        let client = harness.client()
        let cases: [(String, Int, String)] = [
            (#"{"from": "production"}"#, 422, "/from"),
            (#"{"from": "staging", "to": "staging"}"#, 422, "/to"),
            (#"{"from": "qa"}"#, 422, "/from"),
            (#"{}"#, 422, "from"),
            (#"{"from": "staging", "bogus": 1}"#, 422, "/bogus"),
        ]
        for (body, status, pointer) in cases {
            let answer = try await client.send(
                "POST", "/v1/accounts/jack/layout/promote", headers: ServiceHarness.admin(Self.json + [("If-Match", "*")]),
                body: Array(body.utf8))
            #expect(answer.status == status && answer.text.contains(pointer), "\(body): \(answer.status) \(answer.text)")
        }
        let missing = try await client.send(
            "POST", "/v1/accounts/nobody/layout/promote", headers: ServiceHarness.admin(Self.json),
            body: Array(#"{"from": "staging"}"#.utf8))
        #expect(missing.status == 404, "staging has no layout for the account")
    }

    @Test func aGradualPromotionIsARolloutInTheTargetEnvironment() async throws {
        let harness = try await harness()
        let client = harness.client()
        let staging = try await tag(client, "/v1/accounts/jack/layout")
        _ = try await client.send(
            "PUT", "/v1/accounts/jack/layout", headers: ServiceHarness.admin(Self.json + [("If-Match", staging)]), body: document(["Next"]))
        let production = try await tag(client, "/v1/accounts/jack/layout?environment=production")
        let gradual = try await client.send(
            "POST", "/v1/accounts/jack/layout/promote", headers: ServiceHarness.admin(Self.json + [("If-Match", production)]),
            body: Array(#"{"from": "staging", "rollout": {"percent": 100, "seed": "s"}}"#.utf8))
        #expect(gradual.status == 201 && gradual.json?["environment"] as? String == "production", "\(gradual.text)")
        let member = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("X-Install-Id", "anyone")])
        #expect(member.json?["version"] as? Int == 2 && member.header("Vary")?.contains("X-Install-Id") == true)
        #expect(member.header("Vary")?.contains("Tabs-Environment") == true)
        let anonymous = try await client.send("GET", "/v1/accounts/jack/tabs")
        #expect(anonymous.json?["version"] as? Int == 1, "without an install id: the stable version")
        let read = try await client.send("GET", "/v1/accounts/jack/layout/rollout?environment=production", headers: ServiceHarness.admin())
        #expect(read.json?["state"] as? String == "running")
        let inStaging = try await client.send("GET", "/v1/accounts/jack/layout/rollout", headers: ServiceHarness.admin())
        #expect(inStaging.status == 404, "the rollout is production's; management defaults to staging")
    }

    @Test func aTokenForStagingWritesStagingAndCannotPromoteToProduction() async throws {
        let harness = try await harness()
        let client = harness.client()
        let made = try await client.send(
            "POST", "/v1/tokens", headers: ServiceHarness.admin(Self.json),
            body: Array(#"{"name": "stager", "scopes": ["write", "deploy"], "environments": ["staging"]}"#.utf8))
        #expect(made.status == 201, "\(made.text)")
        let token = try #require(made.json?["token"] as? String)
        let bearer = [("Authorization", "Bearer \(token)")]
        let staging = try await tag(client, "/v1/accounts/jack/layout")
        let write = try await client.send(
            "PUT", "/v1/accounts/jack/layout", headers: bearer + Self.json + [("If-Match", staging)], body: document(["Mine"]))
        #expect(write.status == 200, "staging is the token's: \(write.text)")
        let production = try await tag(client, "/v1/accounts/jack/layout?environment=production")
        let direct = try await client.send(
            "PUT", "/v1/accounts/jack/layout?environment=production", headers: bearer + Self.json + [("If-Match", production)],
            body: document(["Direct"]))
        #expect(direct.status == 403 && direct.header("WWW-Authenticate")?.contains("insufficient_scope") == true)
        let promote = try await client.send(
            "POST", "/v1/accounts/jack/layout/promote", headers: bearer + Self.json + [("If-Match", production)],
            body: Array(#"{"from": "staging"}"#.utf8))
        #expect(promote.status == 403, "the promotion changes production: \(promote.text)")
        #expect(try await client.send("GET", "/v1/accounts/jack/tabs").json?["version"] as? Int == 1, "production unchanged")
    }

    @Test func stringsTablesArePerEnvironmentAndPromoted() async throws {
        let harness = try await harness()
        let client = harness.client()
        let put = try await client.send(
            "PUT", "/v1/strings/de-AT", headers: ServiceHarness.admin([("Content-Type", "text/plain")]),
            body: Array(#""HOME_TAB" = "Daheim";"#.utf8))
        #expect(put.status == 201, "\(put.text)")
        #expect(try await client.send("GET", "/v1/strings/de-AT", headers: ServiceHarness.admin()).status == 200, "staging has it")
        let inProduction = try await client.send("GET", "/v1/strings/de-AT?environment=production", headers: ServiceHarness.admin())
        #expect(inProduction.status == 404, "production does not yet")
        let promoted = try await client.send(
            "POST", "/v1/strings/de-AT/promote", headers: ServiceHarness.admin(Self.json), body: Array(#"{"from": "staging"}"#.utf8))
        #expect(promoted.status == 200 && promoted.json?["version"] as? Int == 1, "\(promoted.text)")
        let now = try await client.send("GET", "/v1/strings/de-AT?environment=production", headers: ServiceHarness.admin())
        #expect(now.status == 200 && now.text.contains("Daheim"))
        let again = try await client.send(
            "POST", "/v1/strings/de-AT/promote", headers: ServiceHarness.admin(Self.json), body: Array(#"{"from": "staging"}"#.utf8))
        #expect(again.status == 428, "production has the table now: If-Match needed (\(again.status))")
        let gradual = try await client.send(
            "POST", "/v1/strings/de-AT/promote", headers: ServiceHarness.admin(Self.json + [("If-Match", "*")]),
            body: Array(#"{"from": "staging", "rollout": {"percent": 5}}"#.utf8))
        #expect(gradual.status == 422 && gradual.text.contains("/rollout"), "strings are promoted at once")
    }
}
