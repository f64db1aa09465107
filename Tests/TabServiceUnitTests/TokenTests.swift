import Foundation
import Logging
import TabAccess
import TabConfigs
import TabServiceTestSupport
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

/// Scoped API tokens through the whole service's route table, in process (docs/security.md, "Scoped API tokens"): what a
/// token reaches of the other capabilities' routes. The token routes themselves: `AccessRoutesTests`.
@Suite struct TokenTests {
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

    @Test func everyManagementRouteDeclaresAScopeAndOpenAPIListsIt403() {
        let open: Set<String> = [
            "/healthz", "/readyz", "/metrics", "/openapi.yaml", "/console", "/console/", "/console/{file}",
        ]
        // The client plane: what apps read, and the reports they send.
        let clientPlane = ClientPlaneRoutes.endpoints + ReportRoutes.endpoints.filter(\.access.isOpen)
        for route in TabService.routeTable.routes {
            if route.template.hasPrefix("/v1/") && !clientPlane.contains(where: { $0.template == route.template }) {
                #expect(route.access.scope != nil, "\(route.method.token) \(route.template) declares no scope")
            } else if route.access.isOpen {
                #expect(open.contains(route.template) || clientPlane.contains { $0.template == route.template })
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
