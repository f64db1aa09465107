import Foundation
import Logging
import TabConfigs
import TabServiceTestSupport
import TabStore
import Testing

@testable import TabService

/// The audit log through the route table, in process (docs/security.md, "The audit log").
@Suite struct AuditTests {
    let bootstrap = [("Authorization", "Bearer \(ServiceHarness.token)")]

    func service() async throws -> TabService { try await ServiceHarness.inProcess() }

    func entries(_ service: TabService, _ query: [(String, String)] = [], token: [(String, String)]? = nil) async throws -> [[String: Any]]
    {
        let answer = await service.respond(to: TestRequest(.get, "/v1/audit", query: query, headers: token ?? bootstrap))
        try #require(answer.status == 200, "\(answer.text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        return object["entries"] as? [[String: Any]] ?? []
    }

    func makeToken(_ service: TabService, _ body: String) async throws -> (id: String, headers: [(String, String)]) {
        let made = await service.respond(to: TestRequest(.post, "/v1/tokens", headers: bootstrap, body: Array(body.utf8)))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(made.body)) as? [String: Any])
        return (try #require(object["id"] as? String), [("Authorization", "Bearer \(try #require(object["token"] as? String))")])
    }

    @Test func aWriteIsAnEntryWithItsActorTokenAddressAndVersion() async throws {
        let service = try await service()
        let ci = try await makeToken(service, #"{"name": "ios ci", "scopes": ["write"], "accounts": ["jack"]}"#)
        let put = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/jack/layout", headers: ci.headers + [("Content-Type", "application/json"), ("If-Match", "*")],
                body: document(["a"]), clientAddress: "198.51.100.7"))
        #expect(put.status == 200)
        let log = try await entries(service)
        #expect(log.map { $0["action"] as? String } == ["token.create", "layout.put"])
        let write = try #require(log.last)
        #expect(write["actor"] as? String == "ios ci" && write["tokenId"] as? String == ci.id)
        #expect(write["address"] as? String == "198.51.100.7" && write["method"] as? String == "PUT")
        #expect(write["path"] as? String == "/v1/accounts/jack/layout" && write["account"] as? String == "jack")
        #expect(write["version"] as? Int == Int(put.header("Layout-Version") ?? "") && write["status"] as? Int == 200)
        #expect(write["requestId"] as? String == put.header("Request-Id"))
        #expect(log.first?["actor"] as? String == "tester" && log.first?["tokenId"] is NSNull)
    }

    @Test func refusalsAreEntriesAndAFloodIsOneEntryWithACount() async throws {
        let service = try await service()
        let reader = try await makeToken(service, #"{"name": "dashboard", "scopes": ["read"]}"#)
        let put = TestRequest(
            .put, "/v1/accounts/jack/layout", headers: reader.headers + [("Content-Type", "application/json")], body: document(["a"]),
            clientAddress: "203.0.113.9")
        #expect(await service.respond(to: put).status == 403)
        for _ in 0..<50 {
            let wrong = TestRequest(.get, "/v1/accounts", headers: [("Authorization", "Bearer tsk_nope")], clientAddress: "203.0.113.10")
            #expect([401, 429].contains(await service.respond(to: wrong).status))
        }
        await service.audit.writeRefusals()
        let refused = try await entries(service).filter { $0["action"] as? String == "refused" }
        #expect(refused.count == 2, "one entry for the 403, one for the flood of 401s")
        let forbidden = try #require(refused.first { $0["status"] as? Int == 403 })
        #expect(forbidden["actor"] as? String == "dashboard" && forbidden["tokenId"] as? String == reader.id)
        #expect(forbidden["account"] as? String == "jack" && forbidden["address"] as? String == "203.0.113.9")
        let flood = try #require(refused.first { $0["status"] as? Int == 401 })
        #expect(flood["actor"] as? String == "anonymous" && (flood["count"] as? Int ?? 0) >= 10, "\(flood)")
    }

    @Test func theLogPagesFiltersAndShowsOnlyWhatTheTokenMayRead() async throws {
        let service = try await service()
        for account in ["jack", "jill", "jack"] {
            let put = await service.respond(
                to: TestRequest(
                    .put, "/v1/accounts/\(account)/layout", headers: bootstrap + [("Content-Type", "application/json"), ("If-Match", "*")],
                    body: document([account])))
            #expect(put.status == 200)
        }
        let first = await service.respond(to: TestRequest(.get, "/v1/audit", query: [("limit", "2")], headers: bootstrap))
        let page = try #require(try JSONSerialization.jsonObject(with: Data(first.body)) as? [String: Any])
        let next = try #require(page["next"] as? String)
        let rest = try await entries(service, [("after", next)])
        #expect((page["entries"] as? [Any])?.count == 2 && rest.count == 1)
        #expect(try await entries(service, [("account", "jill")]).count == 1)

        let jackReader = try await makeToken(service, #"{"name": "jack reader", "scopes": ["read"], "accounts": ["jack"]}"#)
        let seen = try await entries(service, token: jackReader.headers)
        #expect(seen.count == 2 && seen.allSatisfy { $0["account"] as? String == "jack" }, "no jill, no token.create")
        let bad = await service.respond(to: TestRequest(.get, "/v1/audit", query: [("after", "nonsense")], headers: bootstrap))
        #expect(bad.status == 400 && bad.text.contains("/after"))
    }
}
