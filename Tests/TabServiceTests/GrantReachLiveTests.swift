import Foundation
import TabAccess
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// The fourth security review (docs/security.md, "A narrowed admin" and after), over a real socket: no token reaches
/// past its grant through the token, webhook, alert and audit routes.
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

    @Test func aNarrowedAdminGets403OnEveryCallThatReachesPastIt() async throws {
        let harness = try await ServiceHarness(environments: ["staging", "production"])
        let client = harness.client()
        let global = try await Self.token(harness, #"{"name": "global", "scopes": ["admin"]}"#)
        let narrowed = try await Self.token(
            harness, #"{"name": "ja-admin", "scopes": ["admin"], "accounts": ["ja*"], "environments": ["staging"]}"#)
        let own = Self.bearer(narrowed.secret, Self.json)

        let unrestricted = try await client.send(
            "POST", "/v1/tokens", headers: own, body: Array(#"{"name": "escape", "scopes": ["admin"]}"#.utf8))
        #expect(unrestricted.status == 403, "an unrestricted admin token: \(unrestricted.text)")
        #expect(unrestricted.header("WWW-Authenticate")?.contains("insufficient_scope") == true)
        let production = try await client.send(
            "POST", "/v1/tokens", headers: own,
            body: Array(#"{"name": "escape", "scopes": ["write"], "accounts": ["jack"], "environments": ["production"]}"#.utf8))
        #expect(production.status == 403, "another environment: \(production.text)")
        let rotate = try await client.send(
            "POST", "/v1/tokens/\(global.id)/rotate", headers: own, body: Array(#"{"overlap": "P7D"}"#.utf8))
        #expect(rotate.status == 403 && rotate.json?["token"] == nil, "rotating the global admin: \(rotate.text)")
        let revoke = try await client.send("DELETE", "/v1/tokens/\(global.id)", headers: Self.bearer(narrowed.secret))
        #expect(revoke.status == 403, "revoking the global admin: \(revoke.text)")
        let webhook = try await client.send(
            "POST", "/v1/webhooks", headers: own, body: Array(#"{"url": "https://example.com/hook", "events": ["layout"]}"#.utf8))
        #expect(webhook.status == 403, "a webhook for every account: \(webhook.text)")

        let listed = try await client.send("GET", "/v1/tokens", headers: Self.bearer(narrowed.secret))
        let names = (listed.json?["tokens"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(listed.status == 200 && names == ["ja-admin"], "only tokens within its grant are listed: \(names)")

        let within = try await client.send(
            "POST", "/v1/tokens", headers: own,
            body: Array(#"{"name": "jack ci", "scopes": ["write"], "accounts": ["jack"], "environments": ["staging"]}"#.utf8))
        #expect(within.status == 201, "what it holds it may give: \(within.text)")
        let stillThere = try await client.send("GET", "/v1/accounts/jill/layout", headers: Self.bearer(global.secret))
        #expect(stillThere.status == 200 || stillThere.status == 404, "the global admin still works: \(stillThere.status)")
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

    @Test func aNarrowReadersPageExaminesABoundedPartOfTheLog() async throws {
        let store = MemoryStore()
        let harness = try await ServiceHarness(store: store)
        for index in 0..<(AuditQuery.maximumExamined + 1500) {
            try await store.appendAudit(
                AuditEntry(
                    at: Date(), actor: "ci", tokenID: nil, address: "192.0.2.1", method: "PUT", path: "/v1/accounts/jack/layout",
                    action: "layout.put", account: "acct\(index)", status: 200))
        }
        let reader = try await Self.token(harness, #"{"name": "narrow", "scopes": ["read"], "accounts": ["nothing-*"]}"#)
        var cursor: String? = nil
        var pages = 0
        repeat {
            let query = cursor.map { "&after=\($0)" } ?? ""
            let page = try await harness.client().send("GET", "/v1/audit?limit=1\(query)", headers: Self.bearer(reader.secret))
            #expect(page.status == 200 && (page.json?["entries"] as? [Any])?.isEmpty == true, "\(page.text.prefix(200))")
            cursor = page.json?["next"] as? String
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 2, "5,000 rows examined, then the rest: \(pages) pages")
    }
}
