import Foundation
import TabAccess
import Testing

@testable import TabStore

/// An entry of `action` (a refusal, 401, is coalesced per address and minute: ``AuditEntry/coalescingKey``).
private func entry(_ action: String, account: String? = nil, actor: String = "ci", at millis: Int64 = 1_000) -> AuditEntry {
    AuditEntry(
        at: Date(millis: millis), actor: actor, tokenID: nil, address: "192.0.2.1", method: "PUT", path: "/x", action: action,
        account: account, status: action == "refused" ? 401 : 200, requestID: "r1")
}

/// The audit part of the store contract, on every backend this machine has.
@Suite struct AuditStoreTests {
    @Test(arguments: Backend.available)
    func aChangesEntryIsWrittenInItsTransactionWithTheVersionOrNotAtAll(backend: Backend) async throws {
        let store = try backend.open()
        var first = write("jack", "{}", .ifNoneMatchAny)
        first.audit = entry("layout.put", account: "jack")
        let record = try await store.append(first)
        var refused = write("jack", "{ }", .ifMatch(["\"stale\""]))
        refused.audit = entry("layout.put", account: "jack")
        await #expect(throws: StoreError.self) { try await store.append(refused) }
        _ = try await store.delete(
            account: "jack", precondition: .ifMatch([record.etag]), author: "ci", audit: entry("layout.delete", account: "jack"))
        _ = try await store.appendStrings(
            locale: "fr", source: Array("{}".utf8), contentType: "application/json", precondition: .none, author: "ci",
            audit: entry("strings.put"))
        let log = try await store.audit(afterID: 0, limit: 10, account: nil, actor: nil)
        #expect(log.map(\.action) == ["layout.put", "layout.delete", "strings.put"], "the refused write left no entry")
        #expect(log.map(\.version) == [1, 2, 1])
        #expect(log.map(\.id) == log.map(\.id).sorted() && Set(log.map(\.id)).count == 3)
        #expect(log.first?.requestID == "r1" && log.first?.address == "192.0.2.1" && log.first?.count == 1)
    }

    @Test(arguments: Backend.available)
    func refusalsWithOneKeyAreOneEntryWhoseCountGrows(backend: Backend) async throws {
        let store = try backend.open()
        for second in 0..<5 { try await store.appendAudit(entry("refused", at: 7 * 60_000 + Int64(second) * 1_000)) }
        try await store.appendAudit(entry("refused", at: 8 * 60_000))
        let log = try await store.audit(afterID: 0, limit: 10, account: nil, actor: nil)
        #expect(log.map(\.count) == [5, 1] && log.map(\.coalescingKey) == ["192.0.2.1 401 7 name:ci - -", "192.0.2.1 401 8 name:ci - -"])
    }

    @Test(arguments: Backend.available)
    func pagesAndFiltersFollowTheIdOrder(backend: Backend) async throws {
        let store = try backend.open()
        for index in 0..<6 {
            try await store.appendAudit(entry("a\(index)", account: index % 2 == 0 ? "jack" : "jill", actor: index < 3 ? "ci" : "ops"))
        }
        let firstPage = try await store.audit(afterID: 0, limit: 2, account: nil, actor: nil)
        let secondPage = try await store.audit(afterID: try #require(firstPage.last).id, limit: 2, account: nil, actor: nil)
        #expect(firstPage.map(\.action) + secondPage.map(\.action) == ["a0", "a1", "a2", "a3"])
        #expect(try await store.audit(afterID: 0, limit: 10, account: "jack", actor: nil).map(\.action) == ["a0", "a2", "a4"])
        #expect(try await store.audit(afterID: 0, limit: 10, account: "jill", actor: "ops").map(\.action) == ["a3", "a5"])
    }

    @Test(arguments: Backend.available)
    func pruningRemovesOnlyOlderEntriesABatchAtATime(backend: Backend) async throws {
        let store = try backend.open()
        for index in 0..<5 { try await store.appendAudit(entry("old\(index)", at: 1_000)) }
        try await store.appendAudit(entry("new", at: 9_000))
        #expect(try await store.pruneAudit(beforeMillis: 5_000, keepingNewest: .max, limit: 3) == 3)
        #expect(try await store.pruneAudit(beforeMillis: 5_000, keepingNewest: .max, limit: 3) == 2)
        #expect(try await store.pruneAudit(beforeMillis: 5_000, keepingNewest: .max, limit: 3) == 0)
        #expect(try await store.audit(afterID: 0, limit: 10, account: nil, actor: nil).map(\.action) == ["new"])
    }

    @Test(arguments: Backend.available)
    func aRowBudgetKeepsTheNewestEntriesWhateverTheirAge(backend: Backend) async throws {
        let store = try backend.open()
        for index in 0..<10 { try await store.appendAudit(entry("e\(index)", at: 9_000 + Int64(index))) }
        #expect(try await store.pruneAudit(beforeMillis: 0, keepingNewest: 4, limit: 500) == 6)
        #expect(try await store.pruneAudit(beforeMillis: 0, keepingNewest: 4, limit: 500) == 0)
        #expect(try await store.audit(afterID: 0, limit: 20, account: nil, actor: nil).map(\.action) == ["e6", "e7", "e8", "e9"])
        try await store.appendAudit(entry("e10", at: 9_100))
        #expect(try await store.pruneAudit(beforeMillis: 0, keepingNewest: 4, limit: 500) == 1)
        #expect(try await store.audit(afterID: 0, limit: 20, account: nil, actor: nil).map(\.action) == ["e7", "e8", "e9", "e10"])
    }

    @Test(arguments: Backend.available)
    func aTokenChangeAndItsEntryAreOneTransaction(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createToken(storedToken("aaaaaaaaaaaaaaaa", hashes: [hashA]), audit: entry("token.create"))
        _ = try await store.editToken(id: "aaaaaaaaaaaaaaaa", audit: entry("token.revoke")) { _, _ in .refuse("no") }
        _ = try await store.editToken(id: "aaaaaaaaaaaaaaaa", audit: entry("token.rotate")) { token, _ in .replace(token) }
        #expect(try await store.audit(afterID: 0, limit: 10, account: nil, actor: nil).map(\.action) == ["token.create", "token.rotate"])
    }
}
