import Foundation
import Synchronization
import TabAccess
import TabStore

/// The store's API tokens as this replica last read them, for authentication without a store call on the request
/// path. Reloaded at start, after each of this replica's token writes, and when another replica announces one
/// (``TabService/refresh(after:)``, ``reload(from:)``); expiry needs no reload (it is checked against the clock on every request).
final class TokenDirectory: Sendable {
    private let tokens = Mutex<[TokenID: AccessToken]>([:])
    /// When each token's use was last written to the store (monotonic seconds).
    private let usesNoted = Mutex<[TokenID: Int64]>([:])
    /// A token's `lastUsedAt` is written at most this often per replica.
    static let useNotingInterval: Int64 = 60

    /// The token whose id is `id`, nil when the store has none.
    func token(id: TokenID) -> AccessToken? { tokens.withLock { $0[id] } }

    /// Replaces every token with `all`.
    func replace(all: [AccessToken]) {
        let byID = Dictionary(all.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        tokens.withLock { $0 = byID }
    }

    /// Puts one token in (after this replica wrote it).
    func update(_ token: AccessToken) { tokens.withLock { $0[token.id] = token } }

    /// Replaces every token with the store's.
    /// - Throws: ``StoreError`` when the store cannot be read (the directory is left as it was).
    func reload(from store: any AccessStore) async throws(StoreError) {
        replace(all: try await store.tokens().compactMap(AccessToken.init))
    }

    /// Whether the use of `id` at monotonic second `now` should be written to the store (the first in its interval).
    func shouldNoteUse(of id: TokenID, now: Int64) -> Bool {
        usesNoted.withLock { noted in
            if let last = noted[id], now - last < Self.useNotingInterval { return false }
            noted[id] = now
            return true
        }
    }
}

extension AccessToken {
    /// The store's record of a token; nil when a field is not one this build reads (an id, hash or glob written
    /// wrong by hand): such a token authenticates nobody.
    init?(_ stored: StoredToken) {
        guard let id = TokenID(stored.id) else { return nil }
        var scopes = Set<Scope>()
        for name in stored.scopes {
            guard let scope = Scope(rawValue: name) else { return nil }
            scopes.insert(scope)
        }
        var accounts: [AccountGlob] = []
        for text in stored.accounts {
            guard let glob = try? AccountGlob(text) else { return nil }
            accounts.append(glob)
        }
        var secrets: [StoredSecret] = []
        for secret in stored.secrets {
            guard let hash = SecretHash(hex: secret.hashHex) else { return nil }
            secrets.append(
                StoredSecret(
                    hash: hash, createdAt: Date(millis: secret.createdAtMillis), retiresAt: secret.retiresAtMillis.map(Date.init(millis:))))
        }
        self.init(
            id: id, name: stored.name, scopes: scopes, accounts: accounts, environments: stored.environments.map(Set.init),
            expiresAt: stored.expiresAtMillis.map(Date.init(millis:)), createdAt: Date(millis: stored.createdAtMillis),
            createdBy: stored.createdBy, revokedAt: stored.revokedAtMillis.map(Date.init(millis:)),
            lastUsedAt: stored.lastUsedAtMillis.map(Date.init(millis:)), secrets: secrets)
    }

    /// The record the store keeps.
    var stored: StoredToken {
        StoredToken(
            id: id.rawValue, name: name, scopes: scopes.sorted().map(\.rawValue), accounts: accounts.map(\.description),
            environments: environments?.sorted(), createdAtMillis: createdAt.millis, createdBy: createdBy,
            expiresAtMillis: expiresAt?.millis, revokedAtMillis: revokedAt?.millis, lastUsedAtMillis: lastUsedAt?.millis,
            secrets: secrets.map {
                StoredToken.Secret(hashHex: $0.hash.hex, createdAtMillis: $0.createdAt.millis, retiresAtMillis: $0.retiresAt?.millis)
            })
    }
}
