import Foundation
import Logging
import TabAccess
import TabConfigs
import TabStore
import Testing

@testable import TabService

/// A service over a memory store holding the repository's configs; `bootstrap` nil configures no bootstrap token.
private func tokenService(bootstrap: String? = ServiceHarness.token, environments: [String] = ["production"]) async throws -> (
    TabService, MemoryStore
) {
    let store = MemoryStore()
    _ = try await ConfigsDirectory.load(ServiceHarness.repository.appendingPathComponent("configs").path).importInto(store, force: false)
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    let tokens = bootstrap.map { [("tester", $0)] } ?? []
    var configuration = ServiceConfiguration(adminTokens: tokens)
    configuration.environments = environments
    let service = try await TabService(store: store, configuration: configuration, logger: logger)
    return (service, store)
}

private let bootstrap = [("Authorization", "Bearer \(ServiceHarness.token)")]

private func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

private func object(_ response: TestResponse) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
}

/// Makes a token through the API with the bootstrap token; returns its id and secret.
private func makeToken(_ service: TabService, _ body: String) async throws -> (id: String, secret: String) {
    let answer = await service.respond(
        to: TestRequest(.post, "/v1/tokens", headers: bootstrap + [("Content-Type", "application/json")], body: Array(body.utf8)))
    try #require(answer.status == 201, "\(answer.text)")
    let json = object(answer)
    return (try #require(json["id"] as? String), try #require(json["token"] as? String))
}

private func putLayout(_ service: TabService, _ account: String, _ headers: [(String, String)]) async -> TestResponse {
    await service.respond(
        to: TestRequest(
            .put, "/v1/accounts/\(account)/layout", headers: headers + [("Content-Type", "application/json"), ("If-Match", "*")],
            body: document(["one", "two"])))
}

/// Scoped API tokens through the route table, in process (docs/security.md, "Scoped API tokens").
@Suite struct TokenTests {
    @Test func aTokenIsShownOnceAndListedWithoutItsSecret() async throws {
        let (service, store) = try await tokenService()
        let made = await service.respond(
            to: TestRequest(
                .post, "/v1/tokens", headers: bootstrap,
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

        let stored = try #require(try await store.tokens().first)
        #expect(stored.secrets.map(\.hashHex) == [SecretHash(of: secret).hex], "the store keeps the SHA-256 only")
        #expect(!String(describing: stored).contains(secret))

        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/jack/layout", headers: bearer(secret))).status == 200)
        try await Task.sleep(for: .milliseconds(100))  // lastUsedAt is written off the request path
        let listed = await service.respond(to: TestRequest(.get, "/v1/tokens", headers: bootstrap))
        #expect(listed.status == 200 && !listed.text.contains(secret) && !listed.text.contains("\"token\""))
        let entry = try #require((object(listed)["tokens"] as? [[String: Any]])?.first)
        #expect(entry["id"] as? String == id && entry["lastUsedAt"] is String && entry["revokedAt"] is NSNull)
    }

    @Test func tokensSelfSaysWhatTheAskingTokenMayDoAndNeverItsSecret() async throws {
        let (service, _) = try await tokenService(environments: ["staging", "production"])
        let admin = await service.respond(to: TestRequest(.get, "/v1/tokens/self", headers: bootstrap))
        #expect(admin.status == 200, "\(admin.text)")
        let adminJSON = object(admin)
        #expect(adminJSON["name"] as? String == "tester" && adminJSON["id"] is NSNull && adminJSON["environments"] is NSNull)
        #expect(adminJSON["scopes"] as? [String] == ["admin"] && adminJSON["accounts"] as? [String] == ["*"])
        #expect(adminJSON["implied"] as? [String] == ["read", "write", "deploy", "rollback", "approve", "admin"])
        #expect(!admin.text.contains(ServiceHarness.token))

        let spec = #"{"name": "reviewer", "scopes": ["approve", "write"], "accounts": ["jack", "shop-*"], "environments": ["production"]}"#
        let reviewer = try await makeToken(service, spec)
        let mine = await service.respond(to: TestRequest(.get, "/v1/tokens/self", headers: bearer(reviewer.secret)))
        #expect(mine.status == 200, "\(mine.text)")
        let json = object(mine)
        #expect(json["name"] as? String == "reviewer" && json["id"] as? String == reviewer.id)
        #expect(json["scopes"] as? [String] == ["write", "approve"] && json["implied"] as? [String] == ["read", "write", "approve"])
        #expect(json["accounts"] as? [String] == ["jack", "shop-*"] && json["environments"] as? [String] == ["production"])
        #expect(!mine.text.contains(reviewer.secret) && !mine.text.contains("token\""))

        // The route is `read`: a token that may only roll back (Alertmanager's) is refused like any other read;
        // `self` is no token id, and DELETE on it is no revocation.
        let alerts = try await makeToken(service, #"{"name": "alertmanager", "scopes": ["rollback"]}"#)
        #expect(await service.respond(to: TestRequest(.get, "/v1/tokens/self", headers: bearer(alerts.secret))).status == 403)
        #expect(await service.respond(to: TestRequest(.delete, "/v1/tokens/self", headers: bootstrap)).status == 405)
        #expect(await service.respond(to: TestRequest(.get, "/v1/tokens/self")).status == 401)
    }

    @Test func aTokenReachesOnlyItsScopesAndAccountsWith403AndTheScopeNeeded() async throws {
        let (service, _) = try await tokenService()
        let writer = try await makeToken(service, #"{"name": "jack ci", "scopes": ["write"], "accounts": ["jack"]}"#)
        #expect(await putLayout(service, "jack", bearer(writer.secret)).status == 200)
        let elsewhere = await putLayout(service, "jill", bearer(writer.secret))
        #expect(elsewhere.status == 403)
        #expect(elsewhere.header("WWW-Authenticate") == #"Bearer realm="tabserver", error="insufficient_scope", scope="write""#)
        #expect(object(elsewhere)["detail"] as? String == "the token's accounts do not include 'jill'")
        let strings = await service.respond(
            to: TestRequest(
                .put, "/v1/strings/fr", headers: bearer(writer.secret) + [("Content-Type", "text/plain")], body: Array("x".utf8)))
        #expect(strings.status == 403, "global strings tables need accounts '*'")
        let tokens = await service.respond(to: TestRequest(.get, "/v1/tokens", headers: bearer(writer.secret)))
        #expect(tokens.status == 403 && tokens.header("WWW-Authenticate")?.contains(#"scope="admin""#) == true)

        let reader = try await makeToken(service, #"{"name": "dashboard", "scopes": ["read"]}"#)
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/jill/layout", headers: bearer(reader.secret))).status == 200)
        let write = await putLayout(service, "jack", bearer(reader.secret))
        #expect(write.status == 403 && write.header("WWW-Authenticate")?.contains(#"scope="write""#) == true)
        let validate = await service.respond(
            to: TestRequest(
                .post, "/v1/validate", headers: bearer(reader.secret) + [("Content-Type", "application/json")], body: document(["a"])))
        #expect(validate.status == 403)
    }

    @Test func listsAndEventsShowOnlyWhatTheTokenMayRead() async throws {
        let (service, _) = try await tokenService()
        let jackOnly = try await makeToken(service, #"{"name": "jack reader", "scopes": ["read"], "accounts": ["ja*"]}"#)
        let all = object(await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bootstrap)))["accounts"] as? [[String: Any]]
        let mine =
            object(await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bearer(jackOnly.secret))))["accounts"]
            as? [[String: Any]]
        let allNames = (all ?? []).compactMap { $0["account"] as? String }
        let myNames = (mine ?? []).compactMap { $0["account"] as? String }
        #expect(allNames.count > 1 && allNames.contains("jack"))
        #expect(myNames == allNames.filter { $0.hasPrefix("ja") })

        let start = service.snapshot.sequence
        #expect(await putLayout(service, "jill", bootstrap).status == 200)
        #expect(await putLayout(service, "jack", bootstrap).status == 200)
        let events = await service.respond(
            to: TestRequest(.get, "/v1/events", headers: bearer(jackOnly.secret) + [("Last-Event-ID", String(start))]))
        #expect(events.status == 200 && events.text.contains(#""account":"jack""#) && !events.text.contains("jill"))
    }

    @Test func theChangeFeedNamesTheEnvironmentAndKeepsItToTheTokensEnvironments() async throws {
        let (service, _) = try await tokenService(environments: ["staging", "production"])
        let stagingOnly = try await makeToken(service, #"{"name": "staging reader", "scopes": ["read"], "environments": ["staging"]}"#)
        let start = service.snapshot.sequence
        for environment in ["production", "staging"] {
            let put = await service.respond(
                to: TestRequest(
                    .put, "/v1/accounts/feed-\(environment)/layout", query: [("environment", environment)],
                    headers: bootstrap + [("Content-Type", "application/json")], body: document(["Home"])))
            #expect(put.status == 201, "\(put.text)")
        }
        let all = await service.respond(to: TestRequest(.get, "/v1/events", headers: bootstrap + [("Last-Event-ID", String(start))]))
        #expect(all.text.contains(#""account":"feed-production""#))
        #expect(all.text.contains(#""environment":"production""#) && all.text.contains(#""environment":"staging""#), "\(all.text)")
        let mine = await service.respond(
            to: TestRequest(.get, "/v1/events", headers: bearer(stagingOnly.secret) + [("Last-Event-ID", String(start))]))
        #expect(mine.status == 200 && mine.text.contains("feed-staging") && !mine.text.contains("feed-production"), "\(mine.text)")
    }

    @Test func unknownMalformedWrongRevokedAndExpiredTokensAre401InvalidToken() async throws {
        let (service, store) = try await tokenService()
        let made = try await makeToken(service, #"{"name": "short lived", "scopes": ["read"]}"#)
        let wrongSecret = String(made.secret.dropLast()) + (made.secret.hasSuffix("A") ? "B" : "A")
        let unknown = "tsk_" + String(repeating: "a", count: 16) + String(made.secret.dropFirst(20))
        for token in [wrongSecret, unknown, "tsk_garbled", "not-a-bootstrap-token"] {
            let answer = await service.respond(
                to: TestRequest(.get, "/v1/accounts", headers: bearer(token), clientAddress: "192.0.2.\(token.count % 200)"))
            #expect(answer.status == 401, "\(token)")
            #expect(
                answer.header("WWW-Authenticate")
                    == #"Bearer realm="tabserver", error="invalid_token", error_description="the token is not valid""#)
        }
        let none = await service.respond(to: TestRequest(.get, "/v1/accounts"))
        #expect(none.status == 401 && none.header("WWW-Authenticate") == #"Bearer realm="tabserver""#)

        #expect(await service.respond(to: TestRequest(.delete, "/v1/tokens/\(made.id)", headers: bootstrap)).status == 204)
        let revoked = await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bearer(made.secret)))
        #expect(revoked.status == 401 && revoked.header("WWW-Authenticate")?.contains("the token was revoked") == true)
        #expect(await service.respond(to: TestRequest(.delete, "/v1/tokens/\(made.id)", headers: bootstrap)).status == 204)
        #expect(await service.respond(to: TestRequest(.delete, "/v1/tokens/aaaaaaaaaaaaaaaa", headers: bootstrap)).status == 404)

        // Expiry holds against the clock, with no store change: a token stored with an expiry a moment ahead.
        let secret = IssuedSecret(for: TokenID.generate())
        let now = Date()
        let expiring = AccessToken(
            id: secret.id, name: "expiring", scopes: [.read], accounts: [.all], environments: nil, expiresAt: now.addingTimeInterval(1.5),
            createdAt: now, createdBy: "test", revokedAt: nil, lastUsedAt: nil, secrets: [.init(hash: secret.hash, createdAt: now)])
        try await store.createToken(expiring.stored)
        try await service.reloadTokens()
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bearer(secret.token))).status == 200)
        try await Task.sleep(for: .milliseconds(1600))
        let expired = await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bearer(secret.token)))
        #expect(expired.status == 401 && expired.header("WWW-Authenticate")?.contains("the token has expired") == true)
    }

    @Test func rotationGivesANewSecretAndKeepsTheOldOneOnlyForTheOverlap() async throws {
        let (service, _) = try await tokenService()
        let made = try await makeToken(service, #"{"name": "deployer", "scopes": ["deploy"]}"#)
        let rotated = await service.respond(
            to: TestRequest(.post, "/v1/tokens/\(made.id)/rotate", headers: bootstrap, body: Array(#"{"overlap": "PT1H"}"#.utf8)))
        #expect(rotated.status == 200)
        let second = try #require(object(rotated)["token"] as? String)
        #expect(second != made.secret && object(rotated)["id"] as? String == made.id)
        for secret in [made.secret, second] {
            #expect(await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bearer(secret))).status == 200)
        }
        let atOnce = await service.respond(to: TestRequest(.post, "/v1/tokens/\(made.id)/rotate", headers: bootstrap))
        let third = try #require(object(atOnce)["token"] as? String)
        for old in [made.secret, second] {
            #expect(await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bearer(old))).status == 401)
        }
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bearer(third))).status == 200)
        let tooLong = await service.respond(
            to: TestRequest(.post, "/v1/tokens/\(made.id)/rotate", headers: bootstrap, body: Array(#"{"overlap": "P8D"}"#.utf8)))
        #expect(tooLong.status == 422 && tooLong.text.contains(#""pointer":"/overlap""#))
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts", headers: bearer(third))).status == 200, "nothing changed")
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
        let (service, store) = try await tokenService()
        let answer = await service.respond(to: TestRequest(.post, "/v1/tokens", headers: bootstrap, body: Array(body.utf8)))
        #expect(answer.status == 422 && answer.header("Content-Type") == "application/problem+json")
        let errors = object(answer)["errors"] as? [[String: Any]] ?? []
        #expect(errors.contains { $0["pointer"] as? String == pointer }, "\(answer.text)")
        #expect(try await store.tokens().isEmpty)
    }

    @Test func theLastAdminTokenCannotBeRevokedWithoutABootstrapToken() async throws {
        let (service, store) = try await tokenService(bootstrap: nil)
        let first = IssuedSecret(for: TokenID.generate())
        let now = Date()
        let admin = AccessToken(
            id: first.id, name: "first admin", scopes: [.admin], accounts: [.all], environments: nil, expiresAt: nil, createdAt: now,
            createdBy: "operator", revokedAt: nil, lastUsedAt: nil, secrets: [.init(hash: first.hash, createdAt: now)])
        try await store.createToken(admin.stored)
        try await service.reloadTokens()
        let refused = await service.respond(to: TestRequest(.delete, "/v1/tokens/\(first.id)", headers: bearer(first.token)))
        #expect(refused.status == 409 && refused.header("Content-Type") == "application/problem+json")
        #expect(await service.respond(to: TestRequest(.get, "/v1/tokens", headers: bearer(first.token))).status == 200, "still valid")

        let made = await service.respond(
            to: TestRequest(
                .post, "/v1/tokens", headers: bearer(first.token), body: Array(#"{"name": "second", "scopes": ["admin"]}"#.utf8)))
        let second = try #require(object(made)["token"] as? String)
        #expect(await service.respond(to: TestRequest(.delete, "/v1/tokens/\(first.id)", headers: bearer(second))).status == 204)
        #expect(object(made)["createdBy"] as? String == "first admin")
    }

    @Test func everyManagementRouteDeclaresAScopeAndOpenAPIListsIt403() {
        let open: Set<String> = [
            "/healthz", "/readyz", "/metrics", "/openapi.yaml", "/console", "/console/", "/console/{file}",
        ]
        for route in TabService.routeTable.routes {
            if route.template.hasPrefix("/v1/") && !TabService.clientPlaneRoutes.contains(where: { $0.endpoint.template == route.template })
            {
                #expect(route.access.scope != nil, "\(route.method.token) \(route.template) declares no scope")
            } else if route.access.isOpen {
                #expect(open.contains(route.template) || TabService.clientPlaneRoutes.contains { $0.endpoint.template == route.template })
            }
        }
        // Making, listing, rotating and revoking tokens is `admin`; asking what one's own token may do is `read`.
        let tokens = TabService.routeTable.routes.filter { $0.template.hasPrefix("/v1/tokens") && $0.template != "/v1/tokens/self" }
        #expect(tokens.count == 4 && tokens.allSatisfy { $0.access == .scoped(.admin, .service) })
        #expect(TabService.routeTable.routes.filter { $0.template == "/v1/tokens/self" }.map(\.access) == [.scoped(.read, .service)])
        let yaml = OpenAPIDocument.yaml
        #expect(yaml.contains("security: [{bearer: [write]}]") && yaml.contains("security: [{bearer: [admin]}]"))
        let scoped = TabService.routeTable.routes.filter { $0.access.scope != nil }.count
        #expect(yaml.components(separatedBy: "'403':").count - 1 >= scoped)
    }

    @Test func securityMdHasTheScopeOfEveryRoute() throws {
        let text = try String(contentsOf: ServiceHarness.repository.appendingPathComponent("docs/security.md"), encoding: .utf8)
        let missing = TabService.scopeTable().filter { !text.contains($0) }
        #expect(missing.isEmpty, "docs/security.md lacks:\n\(missing.joined(separator: "\n"))")
    }
}
