import Foundation
import Testing

@testable import TabStore

/// The revocations part of the store contract, on every backend this machine has.
@Suite struct RevocationStoreTests {
    @Test(arguments: Backend.available)
    func aVersionNobodyServesIsRevokedReadBackAndUnrevokedKeepingItsTime(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(
            LayoutWrite(account: "a", source: Array("{}".utf8), contentType: "application/json", precondition: .none))
        _ = try await store.append(
            LayoutWrite(account: "a", source: Array("{ }".utf8), contentType: "application/json", precondition: .ifMatch([first.etag])))
        let data: @Sendable (StoredRevocation) -> [UInt8] = { _ in Array("{}".utf8) }
        #expect(
            try await store.revoke(account: "a", version: 2, reason: "r", author: "ci", audit: nil, event: data)
                == .served(pointedBy: ["production"], rolloutsIn: []))
        #expect(try await store.revoke(account: "a", version: 9, reason: "r", author: "ci", audit: nil, event: data) == .unknownVersion)
        #expect(try await store.unrevoke(account: "a", version: 1, author: "ci", audit: nil, event: data) == .notRevoked)
        guard
            case .recorded(let made, changed: true) = try await store.revoke(
                account: "a", version: 1, reason: "cassé ü", author: "ci", audit: nil, event: data)
        else { Issue.record("not recorded"); return }
        #expect(made.isRevoked && made.reason == "cassé ü" && made.unrevokedBy == nil)
        #expect(try await store.revocations(account: "a") == [made])
        #expect(try await store.revocations(account: nil) == [made])
        #expect(try await store.revocations(account: "b").isEmpty)
        #expect(
            try await store.revoke(account: "a", version: 1, reason: "other", author: "x", audit: nil, event: data)
                == .recorded(made, changed: false), "idempotent: the first reason kept")
        guard
            case .recorded(let back, changed: true) = try await store.unrevoke(
                account: "a", version: 1, author: "op", audit: nil, event: data)
        else { Issue.record("not un-revoked"); return }
        #expect(!back.isRevoked && back.unrevokedBy == "op" && back.changedAtMillis >= made.revokedAtMillis)
        #expect(try await store.revocations(account: "a") == [back], "the row stays, with the un-revoke's time")
    }
}
