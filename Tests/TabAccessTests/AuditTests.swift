import Foundation
import TabAccess
import Testing

@Suite struct AuditTests {
    static let at = Date(timeIntervalSince1970: 1_795_622_400)  // 2026-11-25T16:00:00Z

    func json(_ value: some Encodable) throws -> [String: Any] {
        let data = try JSONEncoder().encode(value)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func anEntryHasAPIMdsFields() throws {
        let id = TokenID.generate()
        let entry = AuditEntry(
            id: 42, at: Self.at, actor: "ios-ci", tokenID: id, address: "192.0.2.7", method: "PUT", path: "/v1/accounts/jack/layout",
            action: "layout.write", account: "jack", environment: "staging", version: 3, status: 200, requestID: "r-1")
        let object = try json(entry)
        #expect(object["id"] as? Int == 42)
        #expect(object["at"] as? String == "2026-11-25T16:00:00Z")
        #expect(object["actor"] as? String == "ios-ci")
        #expect(object["tokenId"] as? String == id.rawValue)
        #expect(object["address"] as? String == "192.0.2.7")
        #expect(object["method"] as? String == "PUT")
        #expect(object["path"] as? String == "/v1/accounts/jack/layout")
        #expect(object["action"] as? String == "layout.write")
        #expect(object["account"] as? String == "jack")
        #expect(object["environment"] as? String == "staging")
        #expect(object["version"] as? Int == 3)
        #expect(object["status"] as? Int == 200)
        #expect(object["requestId"] as? String == "r-1")
        #expect(object["count"] as? Int == 1)
        #expect(try JSONDecoder().decode(AuditEntry.self, from: JSONEncoder().encode(entry)) == entry)
    }

    @Test func aRefusalWithoutATokenIsAnonymousWithANullTokenIdAndNoAccount() throws {
        let entry = AuditEntry.refusal(
            .missingToken, grant: nil, at: Self.at, address: "198.51.100.1", method: "DELETE", path: "/v1/tokens/x")
        let object = try json(entry)
        #expect(object["actor"] as? String == "anonymous")
        #expect(object["tokenId"] is NSNull)
        #expect(object["status"] as? Int == 401)
        #expect(object["action"] as? String == "refused")
        #expect(object["account"] == nil)
        #expect(object["version"] == nil)
        #expect(try JSONDecoder().decode(AuditEntry.self, from: JSONEncoder().encode(entry)) == entry)
    }

    @Test func anonymousRefusalsCoalescePerMinuteWhateverTheirAddress() throws {
        func refusal(_ seconds: TimeInterval, _ address: String, _ refusal: AccessRefusal = .invalidToken(.unknown)) -> AuditEntry {
            .refusal(refusal, grant: nil, at: Self.at.addingTimeInterval(seconds), address: address, method: "GET", path: "/v1/accounts")
        }
        #expect(refusal(0, "a").coalescingKey == refusal(59, "a").coalescingKey)
        #expect(refusal(0, "a").coalescingKey != refusal(60, "a").coalescingKey)
        #expect(refusal(0, "a").coalescingKey == refusal(0, "b").coalescingKey, "20,000 addresses are one entry a minute")
        #expect(refusal(0, "a").coalescingKey != refusal(0, "a", .insufficientScope(.write, .scope)).coalescingKey)
        let change = AuditEntry(
            at: Self.at, actor: "x", tokenID: nil, address: "a", method: "PUT", path: "/", action: "layout.write", status: 200)
        #expect(change.coalescingKey == nil)
    }

    @Test func refusalsOfValidTokensAreKeyedByTokenAndTarget() throws {
        let a = Grant(name: "a", tokenID: TokenID("aaaaaaaaaaaaaaaa"), scopes: [.read])
        let b = Grant(name: "b", tokenID: TokenID("bbbbbbbbbbbbbbbb"), scopes: [.read])
        func refusal(_ grant: Grant, _ account: String, address: String = "a") -> AuditEntry {
            .refusal(
                .insufficientScope(.write, .scope), grant: grant, at: Self.at, address: address, method: "PUT",
                path: "/v1/accounts/\(account)/layout", account: account)
        }
        #expect(refusal(a, "x").coalescingKey == refusal(a, "x").coalescingKey)
        #expect(refusal(a, "x").coalescingKey != refusal(b, "x").coalescingKey, "token B's 403 is not counted under A's")
        #expect(refusal(a, "x").coalescingKey != refusal(a, "y").coalescingKey, "nor another account's")
        #expect(refusal(a, "x").coalescingKey != refusal(a, "x", address: "b").coalescingKey)
    }

    @Test func aRefusedPathIsKeptToAtMost256Bytes() throws {
        let long = "/v1/accounts/" + String(repeating: "é", count: 4000)
        let entry = AuditEntry.refusal(.missingToken, grant: nil, at: Self.at, address: "a", method: "GET", path: long)
        #expect(entry.path.utf8.count <= AuditEntry.maximumRefusedPathBytes)
        #expect(entry.path.hasPrefix("/v1/accounts/é") && entry.path.hasSuffix("…"))
        let short = AuditEntry.refusal(.missingToken, grant: nil, at: Self.at, address: "a", method: "GET", path: "/v1/tokens")
        #expect(short.path == "/v1/tokens")
    }

    @Test func aCursorRoundTripsAndIsURLSafe() throws {
        for id: Int64 in [0, 1, 255, 1 << 40, .max] {
            let cursor = AuditCursor(after: id)
            #expect(AuditCursor(cursor.description) == cursor)
            #expect(cursor.description.allSatisfy { $0.isLetter || $0.isNumber || "-_.".contains($0) })
        }
        for bad in ["", "a1.", "a2.AAAAAAAAAAE", "a1.AAAAAAAAAA", "a1.gAAAAAAAAAA", "42", "a1.AAAAAAAAAAE="] {
            #expect(AuditCursor(bad) == nil, "\(bad)")
        }
    }

    @Test func aPageSaysWhereTheNextBegins() throws {
        let entries = (1...4).map {
            AuditEntry(
                id: Int64($0), at: Self.at, actor: "a", tokenID: nil, address: "x", method: "PUT", path: "/", action: "a", status: 200)
        }
        let first = AuditPage(fetched: entries, limit: 3)
        #expect(first.entries.map(\.id) == [1, 2, 3])
        #expect(first.next == AuditCursor(after: 3))
        let last = AuditPage(fetched: Array(entries.suffix(1)), limit: 3)
        #expect(last.next == nil)
        let object = try json(last)
        #expect(object["next"] is NSNull)
        #expect((object["entries"] as? [Any])?.count == 1)
        #expect(try json(first)["next"] as? String == AuditCursor(after: 3).description)
    }

    @Test func filtersAndVisibilityKeepTheRightEntries() throws {
        func entry(_ id: Int64, _ actor: String, _ account: String?, _ environment: String? = nil) -> AuditEntry {
            AuditEntry(
                id: id, at: Self.at, actor: actor, tokenID: nil, address: "x", method: "PUT", path: "/", action: "a", account: account,
                environment: environment, status: 200)
        }
        let log = [
            entry(1, "ci", "jack"), entry(2, "ops", "jill"), entry(3, "ci", nil), entry(4, "ci", "shop-1", "staging"),
            entry(5, "ops", "jack", "production"),
        ]
        #expect(log.filter(AuditQuery(account: "jack").matches).map(\.id) == [1, 5])
        #expect(log.filter(AuditQuery(actor: "ci").matches).map(\.id) == [1, 3, 4])
        #expect(log.filter(AuditQuery(after: AuditCursor(after: 2), actor: "ops").matches).map(\.id) == [5])
        let reader = Grant(
            name: "dash", tokenID: nil, scopes: [.read], accounts: [try AccountGlob("shop-*"), try AccountGlob("jack")],
            environments: ["staging"])
        #expect(log.filter(reader.mayRead).map(\.id) == [1, 4])
        #expect(log.filter(Grant.bootstrap(name: "root").mayRead).map(\.id) == [1, 2, 3, 4, 5])
    }

    @Test func aTokenIsListedWithoutItsSecretAndIssuedWithIt() throws {
        let spec = try TokenSpec(
            json: Array(#"{"name": "ci", "scopes": ["write", "read"], "accounts": ["shop-*"]}"#.utf8), environments: ["production"],
            now: Self.at)
        let (token, secret) = AccessToken.issue(spec, createdBy: "root", at: Self.at)
        let listed = try json(token.listed)
        #expect(listed["token"] == nil)
        #expect(listed["id"] as? String == token.id.rawValue)
        #expect(listed["scopes"] as? [String] == ["read", "write"])
        #expect(listed["accounts"] as? [String] == ["shop-*"])
        #expect(listed["environments"] is NSNull)
        #expect(listed["expiresAt"] is NSNull)
        #expect(listed["lastUsedAt"] is NSNull)
        #expect(listed["createdAt"] as? String == "2026-11-25T16:00:00Z")
        #expect(listed["createdBy"] as? String == "root")
        let text = String(decoding: try JSONEncoder().encode(token.listed), as: UTF8.self)
        #expect(!text.contains(secret.hash.hex))
        #expect(try json(token.issued(with: secret))["token"] as? String == secret.token)
    }
}
