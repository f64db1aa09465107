import Foundation

/// A token as the store keeps it: who it is, what it may do, and the hashes of its secrets (never a secret).
public struct AccessToken: Sendable, Equatable {
    /// One secret's hash and how long it is good for.
    public struct StoredSecret: Sendable, Equatable {
        /// The SHA-256 of the token text.
        public let hash: SecretHash
        /// When it was made.
        public let createdAt: Date
        /// When a rotation's overlap ends for it; nil for the current secret.
        public var retiresAt: Date?

        /// A stored secret.
        public init(hash: SecretHash, createdAt: Date, retiresAt: Date? = nil) {
            self.hash = hash
            self.createdAt = createdAt
            self.retiresAt = retiresAt
        }
    }

    /// The public id.
    public let id: TokenID
    /// Its name (1 to 128 characters).
    public var name: String
    /// Its scopes (at least one).
    public var scopes: Set<Scope>
    /// The accounts it may touch.
    public var accounts: [AccountGlob]
    /// The environments it may touch; nil is all.
    public var environments: Set<String>?
    /// After this it is invalid; nil never expires.
    public var expiresAt: Date?
    /// When it was made.
    public let createdAt: Date
    /// The name of the token that made it.
    public let createdBy: String
    /// When it was revoked; nil while it is not.
    public var revokedAt: Date?
    /// The last time it was used successfully.
    public var lastUsedAt: Date?
    /// Its secrets' hashes: the current one and those still in a rotation's overlap.
    public var secrets: [StoredSecret]

    /// A token made from `spec` at `now` by `createdBy`, and its secret (to show once).
    public static func issue(_ spec: TokenSpec, createdBy: String, at now: Date) -> (token: AccessToken, secret: IssuedSecret) {
        let id = TokenID.generate()
        let secret = IssuedSecret(for: id)
        let token = AccessToken(
            id: id, name: spec.name, scopes: spec.scopes, accounts: spec.accounts, environments: spec.environments,
            expiresAt: spec.expiresAt, createdAt: now, createdBy: createdBy, revokedAt: nil, lastUsedAt: nil,
            secrets: [StoredSecret(hash: secret.hash, createdAt: now)])
        return (token, secret)
    }

    /// A token as read back from the store.
    public init(
        id: TokenID, name: String, scopes: Set<Scope>, accounts: [AccountGlob], environments: Set<String>?, expiresAt: Date?,
        createdAt: Date, createdBy: String, revokedAt: Date?, lastUsedAt: Date?, secrets: [StoredSecret]
    ) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.accounts = accounts
        self.environments = environments
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.revokedAt = revokedAt
        self.lastUsedAt = lastUsedAt
        self.secrets = secrets
    }

    /// What the token may do.
    public var grant: Grant {
        Grant(name: name, tokenID: id, scopes: scopes, accounts: accounts, environments: environments)
    }

    /// A new secret at `now`; the secrets current until now stay valid for `overlap` more (zero retires them at
    /// once), never past the token's expiry. Secrets whose overlap has already ended are dropped.
    public mutating func rotate(at now: Date, overlap: TimeInterval) -> IssuedSecret {
        let secret = IssuedSecret(for: id)
        rotate(to: secret, at: now, overlap: overlap)
        return secret
    }

    /// The rotation of ``rotate(at:overlap:)`` to a secret made beforehand (by a caller that edits the record
    /// inside a store transaction and hands the secret out afterwards).
    public mutating func rotate(to secret: IssuedSecret, at now: Date, overlap: TimeInterval) {
        let retires = now.addingTimeInterval(max(0, overlap))
        secrets = secrets.compactMap { old in
            var old = old
            old.retiresAt = min(old.retiresAt ?? retires, retires)
            return old.retiresAt! > now ? old : nil  // Just set above.
        }
        secrets.insert(StoredSecret(hash: secret.hash, createdAt: now), at: 0)
    }

    /// Checks the presented token against this record at `now`: its secrets compared in constant time (all of
    /// them, whatever matches first), then revocation, expiry and the matching secret's overlap.
    public func authenticate(_ presented: PresentedToken, at now: Date) -> Result<Grant, AccessRefusal> {
        guard presented.id == id else { return .failure(.invalidToken(.unknown)) }
        var matched: StoredSecret?
        for secret in secrets where secret.hash.matches(presented.hash) && matched == nil { matched = secret }
        guard let matched else { return .failure(.invalidToken(.wrongSecret)) }
        if let revokedAt, revokedAt <= now { return .failure(.invalidToken(.revoked)) }
        if let expiresAt, expiresAt <= now { return .failure(.invalidToken(.expired)) }
        if let retiresAt = matched.retiresAt, retiresAt <= now { return .failure(.invalidToken(.retired)) }
        return .success(grant)
    }
}

/// The bootstrap tokens from `TABSERVER_ADMIN_TOKEN` / `TABSERVER_ADMIN_TOKENS_FILE`: kept as hashes, every one
/// compared in constant time on each check, each `admin` over everything.
public struct BootstrapTokens: Sendable {
    private let entries: [(name: String, hash: SecretHash)]

    /// The tokens `name:token` lines give.
    public init(_ tokens: [(name: String, token: String)]) {
        entries = tokens.map { ($0.name, SecretHash(of: $0.token)) }
    }

    /// Whether there is any (the last admin API token may not be deleted when there is none).
    public var isEmpty: Bool { entries.isEmpty }

    /// The grant of the bootstrap token whose hash is `hash`, or nil.
    public func grant(for hash: SecretHash) -> Grant? {
        var found: String?
        for entry in entries where entry.hash.matches(hash) && found == nil { found = entry.name }
        return found.map(Grant.bootstrap)
    }
}

/// Authentication from the `Authorization` field to a grant: one function for every route.
public enum Authentication {
    /// The grant behind `credential` at `now`. `lookUp` finds the stored token by id (nil when there is none); it
    /// is called only for a well-formed API token.
    public static func authenticate(
        _ credential: BearerCredential, bootstrap: BootstrapTokens, at now: Date, lookUp: (TokenID) throws -> AccessToken?
    ) rethrows -> Result<Grant, AccessRefusal> {
        switch credential {
        case .none: return .failure(.missingToken)
        case .malformed: return .failure(.invalidToken(.malformed))
        case .opaque(let hash): return bootstrap.grant(for: hash).map { .success($0) } ?? .failure(.invalidToken(.unknown))
        case .apiToken(let presented):
            guard let token = try lookUp(presented.id) else {
                // A bootstrap token may have this form too; comparing with them also makes an unknown id cost
                // about what a wrong secret does.
                return bootstrap.grant(for: presented.hash).map { .success($0) } ?? .failure(.invalidToken(.unknown))
            }
            return token.authenticate(presented, at: now)
        }
    }
}

extension AccessToken {
    /// Whether it can still be used at `now`: not revoked, not expired.
    public func isActive(at now: Date) -> Bool {
        (revokedAt.map { $0 > now } ?? true) && (expiresAt.map { $0 > now } ?? true)
    }

    /// Why `DELETE /v1/tokens/{id}` of this token must be refused (409), or nil: it is the last active `admin`
    /// API token and no bootstrap token exists, so nobody could make tokens again.
    public func revocationConflict(among tokens: [AccessToken], bootstrap: BootstrapTokens, at now: Date) -> String? {
        guard bootstrap.isEmpty, scopes.contains(.admin), isActive(at: now) else { return nil }
        let otherAdmins = tokens.filter { $0.id != id && $0.scopes.contains(.admin) && $0.isActive(at: now) }
        return otherAdmins.isEmpty
            ? "'\(name)' is the last admin token and no bootstrap token is configured; make another admin token first" : nil
    }
}
