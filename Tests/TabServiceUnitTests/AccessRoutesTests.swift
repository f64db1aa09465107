import Foundation
import Synchronization
import TabAccess
import TabServiceTestSupport
import TabStore
import TabTime
import Testing

@testable import TabService

private let admin = CollectionHarness.admin
private let json = [("Content-Type", "application/json")]
private func bearer(_ token: String) -> [(String, String)] { CollectionHarness.bearer(token) }
private func object(_ response: TestResponse) -> [String: Any] { CollectionHarness.object(response) }

/// Tokens and the audit log through the access collection's own router, in process and without a service
/// (docs/security.md, "Scoped API tokens", "The audit log"; over a socket: `TokenLiveTests`).
@Suite struct AccessRoutesTests {
    @Test func aTokenIsShownOnceAndListedWithoutItsSecret() async throws {
        let harness = CollectionHarness()
        let made = await harness.respond(
            to: TestRequest(
                .post, "/v1/tokens", headers: admin,
                body: Array(
                    #"{"name": "ios ci", "scopes": ["write"], "accounts": ["jack", "shop-*"], "environments": ["production"]}"#.utf8)))
        #expect(made.status == 201)
        let json = object(made)
        let id = try #require(json["id"] as? String)
        let secret = try #require(json["token"] as? String)
        #expect(secret.hasPrefix("tsk_\(id)_") && secret.count == 64)
        #expect(made.header("Location") == "/v1/tokens/\(id)")
        #expect(json["createdBy"] as? String == "tester" && json["scopes"] as? [String] == ["write"])
        #expect(json["accounts"] as? [String] == ["jack", "shop-*"] && json["environments"] as? [String] == ["production"])

        let stored = try #require(try await harness.store.tokens().first)
        #expect(stored.secrets.map(\.hashHex) == [SecretHash(of: secret).hex], "the store keeps the SHA-256 only")
        #expect(!String(describing: stored).contains(secret))

        #expect(await harness.respond(to: TestRequest(.get, "/v1/audit", headers: bearer(secret))).status == 200)
        var listed = await harness.respond(to: TestRequest(.get, "/v1/tokens", headers: admin))
        for _ in 0..<100 where !listed.text.contains("\"lastUsedAt\":\"") {  // lastUsedAt is written off the request path
            try await Task.sleep(for: .milliseconds(20))
            listed = await harness.respond(to: TestRequest(.get, "/v1/tokens", headers: admin))
        }
        #expect(listed.status == 200 && !listed.text.contains(secret) && !listed.text.contains("\"token\""))
        let entry = try #require((object(listed)["tokens"] as? [[String: Any]])?.first)
        #expect(entry["id"] as? String == id && entry["lastUsedAt"] is String && entry["revokedAt"] is NSNull)
    }

    @Test func tokensSelfSaysWhatTheAskingTokenMayDoAndNeverItsSecret() async throws {
        let harness = CollectionHarness(environments: ["staging", "production"])
        let bootstrap = await harness.respond(to: TestRequest(.get, "/v1/tokens/self", headers: admin))
        #expect(bootstrap.status == 200, "\(bootstrap.text)")
        let adminJSON = object(bootstrap)
        #expect(adminJSON["name"] as? String == "tester" && adminJSON["id"] is NSNull && adminJSON["environments"] is NSNull)
        #expect(adminJSON["scopes"] as? [String] == ["admin"] && adminJSON["accounts"] as? [String] == ["*"])
        #expect(adminJSON["implied"] as? [String] == ["read", "write", "deploy", "rollback", "approve", "admin"])
        #expect(!bootstrap.text.contains(ServiceHarness.token))

        let spec = #"{"name": "reviewer", "scopes": ["approve", "write"], "accounts": ["jack", "shop-*"], "environments": ["production"]}"#
        let reviewer = try await harness.makeToken(spec)
        let mine = await harness.respond(to: TestRequest(.get, "/v1/tokens/self", headers: bearer(reviewer.secret)))
        #expect(mine.status == 200, "\(mine.text)")
        let json = object(mine)
        #expect(json["name"] as? String == "reviewer" && json["id"] as? String == reviewer.id)
        #expect(json["scopes"] as? [String] == ["write", "approve"] && json["implied"] as? [String] == ["read", "write", "approve"])
        #expect(json["accounts"] as? [String] == ["jack", "shop-*"] && json["environments"] as? [String] == ["production"])
        #expect(!mine.text.contains(reviewer.secret) && !mine.text.contains("token\""))

        // The route is `read`: a token that may only roll back (Alertmanager's) is refused like any other read;
        // `self` is no token id, and DELETE on it is no revocation.
        let alerts = try await harness.makeToken(#"{"name": "alertmanager", "scopes": ["rollback"]}"#)
        #expect(await harness.respond(to: TestRequest(.get, "/v1/tokens/self", headers: bearer(alerts.secret))).status == 403)
        #expect(await harness.respond(to: TestRequest(.delete, "/v1/tokens/self", headers: admin)).status == 405)
        #expect(await harness.respond(to: TestRequest(.get, "/v1/tokens/self")).status == 401)
    }

    @Test func unknownMalformedWrongRevokedAndExpiredTokensAre401InvalidToken() async throws {
        // The harness's clock runs `skew` milliseconds ahead of the machine's: expiry is tested by moving it, not by
        // sleeping past a moment (a busy machine running the suites in parallel can take longer than that moment).
        let skew = Mutex<Int64>(0)
        let clock = TimeSource(
            wall: { Timestamp(unixMillis: TimeSource.system.unixMillis + skew.withLock { $0 }) }, monotonic: TimeSource.system.monotonic)
        let harness = CollectionHarness(clock: clock)
        let made = try await harness.makeToken(#"{"name": "short lived", "scopes": ["read"]}"#)
        let wrongSecret = String(made.secret.dropLast()) + (made.secret.hasSuffix("A") ? "B" : "A")
        let unknown = "tsk_" + String(repeating: "a", count: 16) + String(made.secret.dropFirst(20))
        for token in [wrongSecret, unknown, "tsk_garbled", "not-a-bootstrap-token"] {
            let answer = await harness.respond(
                to: TestRequest(.get, "/v1/audit", headers: bearer(token), clientAddress: "192.0.2.\(token.count % 200)"))
            #expect(answer.status == 401, "\(token)")
            #expect(
                answer.header("WWW-Authenticate")
                    == #"Bearer realm="tabserver", error="invalid_token", error_description="the token is not valid""#)
        }
        let none = await harness.respond(to: TestRequest(.get, "/v1/audit"))
        #expect(none.status == 401 && none.header("WWW-Authenticate") == #"Bearer realm="tabserver""#)

        #expect(await harness.respond(to: TestRequest(.delete, "/v1/tokens/\(made.id)", headers: admin)).status == 204)
        let revoked = await harness.respond(to: TestRequest(.get, "/v1/audit", headers: bearer(made.secret)))
        #expect(revoked.status == 401 && revoked.header("WWW-Authenticate")?.contains("the token was revoked") == true)
        #expect(await harness.respond(to: TestRequest(.delete, "/v1/tokens/\(made.id)", headers: admin)).status == 204)
        #expect(await harness.respond(to: TestRequest(.delete, "/v1/tokens/aaaaaaaaaaaaaaaa", headers: admin)).status == 404)

        // Expiry holds against the clock, with no store change: a token stored with an expiry a minute ahead, then
        // the clock moved past it.
        let secret = IssuedSecret(for: TokenID.generate())
        let now = clock.date
        let expiring = AccessToken(
            id: secret.id, name: "expiring", scopes: [.read], accounts: [.all], environments: nil, expiresAt: now.addingTimeInterval(60),
            createdAt: now, createdBy: "test", revokedAt: nil, lastUsedAt: nil, secrets: [.init(hash: secret.hash, createdAt: now)])
        try await harness.store.createToken(expiring.stored)
        try await harness.directory.reload(from: harness.store)
        #expect(await harness.respond(to: TestRequest(.get, "/v1/audit", headers: bearer(secret.token))).status == 200)
        skew.withLock { $0 = 61_000 }
        let expired = await harness.respond(to: TestRequest(.get, "/v1/audit", headers: bearer(secret.token)))
        #expect(expired.status == 401 && expired.header("WWW-Authenticate")?.contains("the token has expired") == true)
    }

    @Test func rotationGivesANewSecretAndKeepsTheOldOneOnlyForTheOverlap() async throws {
        let harness = CollectionHarness()
        let made = try await harness.makeToken(#"{"name": "deployer", "scopes": ["deploy"]}"#)
        let rotated = await harness.respond(
            to: TestRequest(.post, "/v1/tokens/\(made.id)/rotate", headers: admin, body: Array(#"{"overlap": "PT1H"}"#.utf8)))
        #expect(rotated.status == 200)
        let second = try #require(object(rotated)["token"] as? String)
        #expect(second != made.secret && object(rotated)["id"] as? String == made.id)
        for secret in [made.secret, second] {
            #expect(await harness.respond(to: TestRequest(.get, "/v1/audit", headers: bearer(secret))).status == 200)
        }
        let atOnce = await harness.respond(to: TestRequest(.post, "/v1/tokens/\(made.id)/rotate", headers: admin))
        let third = try #require(object(atOnce)["token"] as? String)
        for old in [made.secret, second] {
            #expect(await harness.respond(to: TestRequest(.get, "/v1/audit", headers: bearer(old))).status == 401)
        }
        #expect(await harness.respond(to: TestRequest(.get, "/v1/audit", headers: bearer(third))).status == 200)
        let tooLong = await harness.respond(
            to: TestRequest(.post, "/v1/tokens/\(made.id)/rotate", headers: admin, body: Array(#"{"overlap": "P8D"}"#.utf8)))
        #expect(tooLong.status == 422 && tooLong.text.contains(#""pointer":"/overlap""#))
        #expect(await harness.respond(to: TestRequest(.get, "/v1/audit", headers: bearer(third))).status == 200, "nothing changed")
    }

    @Test(arguments: [
        (#"{"name": "x", "scopes": ["owner"]}"#, "/scopes/0"), (#"{"name": "x", "scopes": []}"#, "/scopes"),
        (#"{"name": "x", "scopes": ["read"], "accounts": ["shop-[a]"]}"#, "/accounts/0"),
        (#"{"name": "x", "scopes": ["read"], "expiresAt": "2001-01-01T00:00:00Z"}"#, "/expiresAt"),
        (#"{"name": "x", "scopes": ["read"], "expiresAt": "tomorrow"}"#, "/expiresAt"),
        (#"{"name": "x", "scopes": ["read"], "environments": ["moon"]}"#, "/environments/0"),
        ("{\"name\": \"\(String(repeating: "n", count: 129))\", \"scopes\": [\"read\"]}", "/name"),
    ])
    func badTokenBodiesAre422AtTheirPointerAndMakeNothing(body: String, pointer: String) async throws {
        let harness = CollectionHarness()
        let answer = await harness.respond(to: TestRequest(.post, "/v1/tokens", headers: admin, body: Array(body.utf8)))
        #expect(answer.status == 422 && answer.header("Content-Type") == "application/problem+json")
        let errors = object(answer)["errors"] as? [[String: Any]] ?? []
        #expect(errors.contains { $0["pointer"] as? String == pointer }, "\(answer.text)")
        #expect(try await harness.store.tokens().isEmpty)
    }

    @Test func theLastAdminTokenCannotBeRevokedWithoutABootstrapToken() async throws {
        let harness = CollectionHarness(bootstrap: nil)
        let first = IssuedSecret(for: TokenID.generate())
        let now = Date()
        let admin = AccessToken(
            id: first.id, name: "first admin", scopes: [.admin], accounts: [.all], environments: nil, expiresAt: nil, createdAt: now,
            createdBy: "operator", revokedAt: nil, lastUsedAt: nil, secrets: [.init(hash: first.hash, createdAt: now)])
        try await harness.store.createToken(admin.stored)
        try await harness.directory.reload(from: harness.store)
        let refused = await harness.respond(to: TestRequest(.delete, "/v1/tokens/\(first.id)", headers: bearer(first.token)))
        #expect(refused.status == 409 && refused.header("Content-Type") == "application/problem+json")
        #expect(await harness.respond(to: TestRequest(.get, "/v1/tokens", headers: bearer(first.token))).status == 200, "still valid")

        let made = await harness.respond(
            to: TestRequest(
                .post, "/v1/tokens", headers: bearer(first.token), body: Array(#"{"name": "second", "scopes": ["admin"]}"#.utf8)))
        let second = try #require(object(made)["token"] as? String)
        #expect(await harness.respond(to: TestRequest(.delete, "/v1/tokens/\(first.id)", headers: bearer(second))).status == 204)
        #expect(object(made)["createdBy"] as? String == "first admin")
    }

    /// The fourth security review (docs/security.md, "A narrowed admin"): no token reaches past its grant through the
    /// token and webhook routes.
    @Test func aNarrowedAdminGets403OnEveryCallThatReachesPastIt() async throws {
        let harness = CollectionHarness(environments: ["staging", "production"])
        let global = try await harness.makeToken(#"{"name": "global", "scopes": ["admin"]}"#)
        let narrowed = try await harness.makeToken(
            #"{"name": "ja-admin", "scopes": ["admin"], "accounts": ["ja*"], "environments": ["staging"]}"#)
        let own = bearer(narrowed.secret) + json

        let unrestricted = await harness.respond(
            to: TestRequest(.post, "/v1/tokens", headers: own, body: Array(#"{"name": "escape", "scopes": ["admin"]}"#.utf8)))
        #expect(unrestricted.status == 403, "an unrestricted admin token: \(unrestricted.text)")
        #expect(unrestricted.header("WWW-Authenticate")?.contains("insufficient_scope") == true)
        let production = await harness.respond(
            to: TestRequest(
                .post, "/v1/tokens", headers: own,
                body: Array(#"{"name": "escape", "scopes": ["write"], "accounts": ["jack"], "environments": ["production"]}"#.utf8)))
        #expect(production.status == 403, "another environment: \(production.text)")
        let rotate = await harness.respond(
            to: TestRequest(.post, "/v1/tokens/\(global.id)/rotate", headers: own, body: Array(#"{"overlap": "P7D"}"#.utf8)))
        #expect(rotate.status == 403 && object(rotate)["token"] == nil, "rotating the global admin: \(rotate.text)")
        let revoke = await harness.respond(to: TestRequest(.delete, "/v1/tokens/\(global.id)", headers: bearer(narrowed.secret)))
        #expect(revoke.status == 403, "revoking the global admin: \(revoke.text)")
        let webhook = await harness.respond(
            to: TestRequest(
                .post, "/v1/webhooks", headers: own, body: Array(#"{"url": "https://example.com/hook", "events": ["layout"]}"#.utf8)))
        #expect(webhook.status == 403, "a webhook for every account: \(webhook.text)")

        let listed = await harness.respond(to: TestRequest(.get, "/v1/tokens", headers: bearer(narrowed.secret)))
        let names = (object(listed)["tokens"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(listed.status == 200 && names == ["ja-admin"], "only tokens within its grant are listed: \(names)")

        let within = await harness.respond(
            to: TestRequest(
                .post, "/v1/tokens", headers: own,
                body: Array(#"{"name": "jack ci", "scopes": ["write"], "accounts": ["jack"], "environments": ["staging"]}"#.utf8)))
        #expect(within.status == 201, "what it holds it may give: \(within.text)")
        let stillThere = await harness.respond(to: TestRequest(.get, "/v1/tokens", headers: bearer(global.secret)))
        #expect(stillThere.status == 200, "the global admin still works: \(stillThere.status)")
    }

    @Test func aNarrowReadersPageExaminesABoundedPartOfTheLog() async throws {
        let harness = CollectionHarness()
        for index in 0..<(AuditQuery.maximumExamined + 1500) {
            try await harness.store.appendAudit(
                AuditEntry(
                    at: Date(), actor: "ci", tokenID: nil, address: "192.0.2.1", method: "PUT", path: "/v1/accounts/jack/layout",
                    action: "layout.put", account: "acct\(index)", status: 200))
        }
        let reader = try await harness.makeToken(#"{"name": "narrow", "scopes": ["read"], "accounts": ["nothing-*"]}"#)
        var cursor: String? = nil
        var pages = 0
        repeat {
            let query = [("limit", "1")] + (cursor.map { [("after", $0)] } ?? [])
            let page = await harness.respond(to: TestRequest(.get, "/v1/audit", query: query, headers: bearer(reader.secret)))
            #expect(page.status == 200 && (object(page)["entries"] as? [Any])?.isEmpty == true, "\(page.text.prefix(200))")
            cursor = object(page)["next"] as? String
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 2, "5,000 rows examined, then the rest: \(pages) pages")
    }

    /// Webhook changes are entries too, written with the change: create, rotate-secret, delete.
    @Test func webhookChangesAreEntries() async throws {
        let harness = CollectionHarness(webhookPolicy: .allowEverything)
        let made = await harness.respond(
            to: TestRequest(
                .post, "/v1/webhooks", headers: admin + json, body: Array(#"{"url": "http://127.0.0.1:9/hook", "events": ["layout"]}"#.utf8)
            ))
        #expect(made.status == 201, "\(made.text)")
        let id = try #require(object(made)["id"] as? String)
        #expect(await harness.respond(to: TestRequest(.post, "/v1/webhooks/\(id)/rotate-secret", headers: admin)).status == 200)
        #expect(await harness.respond(to: TestRequest(.delete, "/v1/webhooks/\(id)", headers: admin)).status == 204)
        let log = try await harness.auditEntries()
        #expect(log.map { $0["action"] as? String } == ["webhook.create", "webhook.rotate-secret", "webhook.delete"])
        #expect(log.allSatisfy { $0["actor"] as? String == "tester" && ($0["path"] as? String ?? "").hasPrefix("/v1/webhooks") })
    }

    /// A refused token route is an entry (buffered, written within a second).
    @Test func refusalsOfTheAccessRoutesAreEntries() async throws {
        let harness = CollectionHarness()
        let reader = try await harness.makeToken(#"{"name": "dashboard", "scopes": ["read"]}"#)
        let refused = await harness.respond(
            to: TestRequest(.get, "/v1/tokens", headers: bearer(reader.secret), clientAddress: "203.0.113.9"))
        #expect(refused.status == 403 && refused.header("WWW-Authenticate")?.contains(#"scope="admin""#) == true)
        await harness.audit.writeRefusals()
        let entry = try #require(try await harness.auditEntries().first { $0["action"] as? String == "refused" })
        #expect(entry["actor"] as? String == "dashboard" && entry["tokenId"] as? String == reader.id && entry["status"] as? Int == 403)
        #expect(entry["address"] as? String == "203.0.113.9" && entry["path"] as? String == "/v1/tokens")
    }
}
