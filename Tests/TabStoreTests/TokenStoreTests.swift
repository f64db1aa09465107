import Foundation
import Synchronization
import TabStorePostgres
import Testing

@testable import TabStore

func storedToken(_ id: String, scopes: [String] = ["admin"], environments: [String]? = nil, hashes: [String]) -> StoredToken {
    StoredToken(
        id: id, name: "ci \(id)", scopes: scopes, accounts: ["jack", "shop-*"], environments: environments, createdAtMillis: 1_000,
        createdBy: "bootstrap", expiresAtMillis: 9_000_000_000_000, revokedAtMillis: nil, lastUsedAtMillis: nil,
        secrets: hashes.enumerated().map { StoredToken.Secret(hashHex: $0.element, createdAtMillis: 1_000 - Int64($0.offset)) })
}

let hashA = String(repeating: "a", count: 64)
let hashB = String(repeating: "b", count: 64)

/// The token part of the store contract, on every backend this machine has.
@Suite struct TokenStoreTests {
    @Test(arguments: Backend.available)
    func aCreatedTokenReadsBackFieldForFieldAndItsIdIsTakenOnce(backend: Backend) async throws {
        let store = try backend.open()
        let token = storedToken("aaaaaaaaaaaaaaaa", scopes: ["read", "write"], environments: ["staging"], hashes: [hashA])
        try await store.createToken(token)
        #expect(try await store.tokens() == [token])
        await #expect(throws: StoreError.conflict) { try await store.createToken(token) }
        let all = storedToken("bbbbbbbbbbbbbbbb", hashes: [hashB])
        try await store.createToken(all)
        #expect(try await store.tokens().map(\.id) == ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"])
        #expect(try await store.tokens().last?.environments == nil)
    }

    @Test(arguments: Backend.available)
    func anEditReplacesTheRecordAndItsSecretsOrChangesNothing(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createToken(storedToken("aaaaaaaaaaaaaaaa", hashes: [hashA]))
        let rotated = try await store.editToken(id: "aaaaaaaaaaaaaaaa") { token, all in
            var token = token
            token.secrets =
                [StoredToken.Secret(hashHex: hashB, createdAtMillis: 5_000)]
                + token.secrets.map { StoredToken.Secret(hashHex: $0.hashHex, createdAtMillis: $0.createdAtMillis, retiresAtMillis: 8_000) }
            return all.count == 1 ? .replace(token) : .refuse("more than one")
        }
        guard case .replace(let expected) = rotated else { Issue.record("refused: \(rotated)"); return }
        #expect(try await store.tokens() == [expected])
        #expect(try await store.tokens().first?.secrets.map(\.hashHex) == [hashB, hashA])
        #expect(try await store.tokens().first?.secrets.last?.retiresAtMillis == 8_000)

        let refused = try await store.editToken(id: "aaaaaaaaaaaaaaaa") { _, _ in .refuse("the last admin token") }
        #expect(refused == .refuse("the last admin token"))
        #expect(try await store.tokens() == [expected], "a refused edit changes nothing")
        await #expect(throws: StoreError.notFound) { try await store.editToken(id: "cccccccccccccccc") { token, _ in .replace(token) } }
    }

    @Test(arguments: Backend.available)
    func lastUsedOnlyMovesForward(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createToken(storedToken("aaaaaaaaaaaaaaaa", hashes: [hashA]))
        try await store.noteTokenUsed(id: "aaaaaaaaaaaaaaaa", atMillis: 7_000)
        try await store.noteTokenUsed(id: "aaaaaaaaaaaaaaaa", atMillis: 6_000)
        try await store.noteTokenUsed(id: "zzzzzzzzzzzzzzzz", atMillis: 6_000)
        #expect(try await store.tokens().map(\.lastUsedAtMillis) == [7_000])
        #expect(try await store.tokens().first?.secrets.map(\.hashHex) == [hashA], "secrets are kept by a use")
    }

    @Test func sqliteKeepsTokensAcrossReopen() async throws {
        let path = temporaryPath("tokens") + "/tabs.sqlite"
        let token = storedToken("aaaaaaaaaaaaaaaa", hashes: [hashA, hashB])
        try await SQLiteStore(path: path).createToken(token)
        #expect(try await SQLiteStore(path: path).tokens() == [token])
    }

    @Test(.enabled(if: PostgresTestDatabase.serverURL != nil))
    func postgresAnnouncesTokenChangesToOtherStoresButNotUses() async throws {
        let url = try PostgresTestDatabase.create()
        let one = try PostgresStore(url: url)
        let two = try PostgresStore(url: url)
        let seen = Mutex<[StoreChange]>([])
        two.watch { change in seen.withLock { $0.append(change) } }
        defer { two.stopWatching() }
        try await Task.sleep(for: .milliseconds(300))
        try await one.createToken(storedToken("aaaaaaaaaaaaaaaa", hashes: [hashA]))
        try await one.noteTokenUsed(id: "aaaaaaaaaaaaaaaa", atMillis: 5_000)
        _ = try await one.editToken(id: "aaaaaaaaaaaaaaaa") { token, _ in
            var token = token
            token.revokedAtMillis = 6_000
            return .replace(token)
        }
        for _ in 0..<50 where seen.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(200))
        let ids = seen.withLock { $0.compactMap { if case .token(let id, _) = $0 { id } else { nil } } }
        #expect(ids == ["aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa"], "the creation and the revocation, not the use")
        #expect(try await two.tokens().first?.revokedAtMillis == 6_000)
    }
}
