import Foundation
import TabAccess
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

}
