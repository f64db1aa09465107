import Foundation
import TabAccess
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// The fourth security review (docs/security.md, "A narrowed admin" and after), over a real socket: no token reaches
/// past its grant through the alert route (the token, webhook and audit routes are proven in process, without a
/// service: `AccessRoutesTests`).
@Suite struct GrantReachLiveTests {
    static let json = [("Content-Type", "application/json")]

    /// Makes a token with the bootstrap admin; returns its id and secret.
    static func token(_ harness: ServiceHarness, _ body: String) async throws -> (id: String, secret: String) {
        let made = try await harness.client().send("POST", "/v1/tokens", headers: ServiceHarness.admin(json), body: Array(body.utf8))
        try #require(made.status == 201, "\(made.text)")
        return (try #require(made.json?["id"] as? String), try #require(made.json?["token"] as? String))
    }

    static func bearer(_ secret: String, _ extra: [(String, String)] = []) -> [(String, String)] {
        [("Authorization", "Bearer \(secret)")] + extra
    }

    @Test func anAlertRollsBackOnlyWhatTheTokenMayRollBack() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        for account in ["jaroll", "joroll"] {
            let etag = try await RolloutLiveTests.staged(harness, account: account)
            let started = try await RolloutLiveTests.startRollout(harness, #"{"version": 2, "percent": 50}"#, etag: etag, account: account)
            #expect(started.status == 201, "\(started.text)")
        }
        let alertmanager = try await Self.token(harness, #"{"name": "alertmanager", "scopes": ["rollback"], "accounts": ["ja*"]}"#)
        func alert(_ accounts: [String]) -> [UInt8] {
            let alerts = accounts.map {
                #"{"status": "firing", "labels": {"alertname": "CrashRate", "account": "\#($0)"}, "annotations": {}}"#
            }
            return Array(#"{"version": "4", "status": "firing", "alerts": [\#(alerts.joined(separator: ","))]}"#.utf8)
        }
        let onlyJohn = try await client.send(
            "POST", "/v1/alerts", headers: Self.bearer(alertmanager.secret, Self.json), body: alert(["joroll"]))
        #expect(onlyJohn.status == 403, "john is not the token's: \(onlyJohn.text)")
        #expect((onlyJohn.json?["refused"] as? [[String: Any]])?.first?["account"] as? String == "joroll", "\(onlyJohn.text)")
        let both = try await client.send(
            "POST", "/v1/alerts", headers: Self.bearer(alertmanager.secret, Self.json), body: alert(["jaroll", "joroll"]))
        #expect(both.status == 200, "\(both.text)")
        #expect((both.json?["rolledBack"] as? [[String: Any]])?.map { $0["account"] as? String } == ["jaroll"], "\(both.text)")
        #expect((both.json?["refused"] as? [[String: Any]])?.map { $0["account"] as? String } == ["joroll"], "\(both.text)")
        let john = try await client.send("GET", "/v1/accounts/joroll/layout/rollout", headers: ServiceHarness.admin())
        #expect(john.json?["state"] as? String == "running", "john's rollout goes on: \(john.text)")
        let reads = try await client.send("GET", "/v1/accounts", headers: Self.bearer(alertmanager.secret))
        #expect(reads.status == 403, "a rollback token reads nothing")
    }

    @Test func onlyADeployTokenOverEveryAccountAndEnvironmentChangesBuilds() async throws {
        let harness = try await ServiceHarness(environments: ["staging", "production"])
        let client = harness.client()
        let build = Array(#"{"viewControllers": ["T0ViewController"]}"#.utf8)
        let byAccounts = try await Self.token(harness, #"{"name": "ja-deployer", "scopes": ["deploy"], "accounts": ["ja*"]}"#)
        let byEnvironments = try await Self.token(
            harness, #"{"name": "staging-deployer", "scopes": ["deploy"], "environments": ["staging"]}"#)
        let whole = try await Self.token(harness, #"{"name": "deployer", "scopes": ["deploy"]}"#)
        for narrow in [byAccounts, byEnvironments] {
            let declared = try await client.send(
                "PUT", "/v1/builds/iphone/2.0", headers: Self.bearer(narrow.secret, Self.json), body: build)
            #expect(declared.status == 403, "\(declared.text)")
            #expect(declared.header("WWW-Authenticate")?.contains(#"error="insufficient_scope", scope="deploy""#) == true)
        }
        let declared = try await client.send("PUT", "/v1/builds/iphone/2.0", headers: Self.bearer(whole.secret, Self.json), body: build)
        #expect(declared.status == 201, "\(declared.text)")
        for narrow in [byAccounts, byEnvironments] {
            let replaced = try await client.send(
                "PUT", "/v1/builds/iphone/2.0", headers: Self.bearer(narrow.secret, Self.json), body: build)
            #expect(replaced.status == 403, "\(replaced.text)")
            let retired = try await client.send("DELETE", "/v1/builds/iphone/2.0", headers: Self.bearer(narrow.secret))
            #expect(retired.status == 403, "\(retired.text)")
            let read = try await client.send("GET", "/v1/builds/iphone/2.0", headers: Self.bearer(narrow.secret))
            #expect(read.status == 200, "reading builds stays open to a narrowed token: \(read.text)")
        }
        #expect(try await client.send("DELETE", "/v1/builds/iphone/2.0", headers: Self.bearer(whole.secret)).status == 204)
    }

    @Test func aPromotionNeedsDeployInItsToAndReadInItsFromWhateverTheQuerySays() async throws {
        let harness = try await ServiceHarness(environments: ["staging", "production"])
        let client = harness.client()
        let staged = try await client.send(
            "PUT", "/v1/accounts/promo/layout?environment=staging", headers: ServiceHarness.admin(Self.json + [("If-None-Match", "*")]),
            body: document(["Home"]))
        #expect(staged.status == 201, "\(staged.text)")
        let body = Array(#"{"from": "staging", "to": "production"}"#.utf8)
        let productionOnly = try await Self.token(
            harness, #"{"name": "prod-deployer", "scopes": ["deploy"], "environments": ["production"]}"#)
        let stagingOnly = try await Self.token(harness, #"{"name": "staging-deployer", "scopes": ["deploy"], "environments": ["staging"]}"#)
        let both = try await Self.token(harness, #"{"name": "deployer", "scopes": ["deploy"], "environments": ["staging", "production"]}"#)
        for path in ["/v1/accounts/promo/layout/promote", "/v1/accounts/promo/layout/promote?environment=production"] {
            let refused = try await client.send("POST", path, headers: Self.bearer(productionOnly.secret, Self.json), body: body)
            #expect(refused.status == 403, "it may not read staging: \(refused.text)")
            #expect(refused.text.contains("staging"), "\(refused.text)")
        }
        let notTo = try await client.send(
            "POST", "/v1/accounts/promo/layout/promote?environment=staging", headers: Self.bearer(stagingOnly.secret, Self.json), body: body
        )
        #expect(notTo.status == 403 && notTo.text.contains("production"), "\(notTo.text)")
        let promoted = try await client.send(
            "POST", "/v1/accounts/promo/layout/promote", headers: Self.bearer(both.secret, Self.json), body: body)
        #expect(promoted.status == 201 || promoted.status == 200, "\(promoted.text)")
    }
}
