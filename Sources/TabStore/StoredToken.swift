/// An API token as the store keeps it: who it is, what it may do, and the SHA-256 hashes of its secrets (never a
/// secret). The store does not interpret scopes, globs or environments; `TabAccess` does.
public struct StoredToken: Sendable, Equatable {
    /// One secret's hash and how long it is good for.
    public struct Secret: Sendable, Equatable {
        /// The SHA-256 of the whole token text, 64 lower-case hex digits.
        public var hashHex: String
        /// Milliseconds since 1970-01-01 UTC.
        public var createdAtMillis: Int64
        /// When a rotation's overlap ends for it; nil for the current secret.
        public var retiresAtMillis: Int64?

        /// A stored secret.
        public init(hashHex: String, createdAtMillis: Int64, retiresAtMillis: Int64? = nil) {
            self.hashHex = hashHex
            self.createdAtMillis = createdAtMillis
            self.retiresAtMillis = retiresAtMillis
        }
    }

    /// The public id.
    public var id: String
    public var name: String
    /// Scope names (`read`, `write`, `deploy`, `admin`).
    public var scopes: [String]
    /// Account globs.
    public var accounts: [String]
    /// Environment names; nil is all of them.
    public var environments: [String]?
    public var createdAtMillis: Int64
    /// The name of the token that made it.
    public var createdBy: String
    public var expiresAtMillis: Int64?
    public var revokedAtMillis: Int64?
    public var lastUsedAtMillis: Int64?
    /// The current secret first, then those still in a rotation's overlap.
    public var secrets: [Secret]

    /// A token record.
    public init(
        id: String, name: String, scopes: [String], accounts: [String], environments: [String]?, createdAtMillis: Int64,
        createdBy: String, expiresAtMillis: Int64?, revokedAtMillis: Int64?, lastUsedAtMillis: Int64?, secrets: [Secret]
    ) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.accounts = accounts
        self.environments = environments
        self.createdAtMillis = createdAtMillis
        self.createdBy = createdBy
        self.expiresAtMillis = expiresAtMillis
        self.revokedAtMillis = revokedAtMillis
        self.lastUsedAtMillis = lastUsedAtMillis
        self.secrets = secrets
    }

    /// Lists (scopes, accounts, environments) are kept as text joined by a space: none of their entries may
    /// hold one (scope names, account globs and environment names are all without spaces).
    static func joined(_ list: [String]) -> String { list.joined(separator: " ") }

    static func split(_ text: String) -> [String] { text.split(separator: " ").map(String.init) }
}

/// What ``TabStore/editToken(id:_:)`` does with the token it read: store the edited record, or change nothing and
/// say why (a revocation refused with 409, say).
public enum TokenEdit: Sendable, Equatable {
    /// Store this record (same id) and announce it to the other replicas.
    case replace(StoredToken)
    /// Change nothing: it is as asked already (a second revocation).
    case unchanged
    /// Change nothing, and say why.
    case refuse(String)
}

/// The SQL of the token tables, once for SQLite and PostgreSQL: statements take `$1…` placeholders (SQLite reads
/// them too) and every value travels as text (or NULL), so both backends bind and read the same cells.
public enum TokenRows {
    static let columns =
        "id, name, scopes, accounts, environments, created_at_ms, created_by, expires_at_ms, revoked_at_ms, last_used_at_ms"
    /// Every token, by id.
    public static let selectTokens = "SELECT \(columns) FROM tokens ORDER BY id"
    /// Every secret, newest first within a token.
    public static let selectSecrets =
        "SELECT token_id, hash, created_at_ms, retires_at_ms FROM token_secrets ORDER BY token_id, created_at_ms DESC, hash"
    /// Inserts a token or replaces every column of the one with its id.
    public static let upsertToken = """
        INSERT INTO tokens (\(columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, scopes = excluded.scopes, accounts = excluded.accounts,
        environments = excluded.environments, created_at_ms = excluded.created_at_ms, created_by = excluded.created_by,
        expires_at_ms = excluded.expires_at_ms, revoked_at_ms = excluded.revoked_at_ms, last_used_at_ms = excluded.last_used_at_ms
        """
    public static let deleteSecrets = "DELETE FROM token_secrets WHERE token_id = $1"
    public static let insertSecret = "INSERT INTO token_secrets (token_id, hash, created_at_ms, retires_at_ms) VALUES ($1, $2, $3, $4)"

    /// The cells of ``upsertToken`` for `token`.
    public static func tokenCells(_ token: StoredToken) -> [String?] {
        [
            token.id, token.name, StoredToken.joined(token.scopes), StoredToken.joined(token.accounts),
            token.environments.map(StoredToken.joined), String(token.createdAtMillis), token.createdBy,
            token.expiresAtMillis.map(String.init), token.revokedAtMillis.map(String.init), token.lastUsedAtMillis.map(String.init),
        ]
    }

    /// The cells of ``insertSecret`` for each of `token`'s secrets.
    public static func secretCells(_ token: StoredToken) -> [[String?]] {
        token.secrets.map { [token.id, $0.hashHex, String($0.createdAtMillis), $0.retiresAtMillis.map(String.init)] }
    }

    /// Tokens from the rows of ``selectTokens`` and ``selectSecrets``.
    /// - Throws: ``StoreError/unavailable(_:)`` when a cell the schema requires is NULL or not a number.
    public static func decode(tokens: [[String?]], secrets: [[String?]]) throws(StoreError) -> [StoredToken] {
        var secretsByToken: [String: [StoredToken.Secret]] = [:]
        for row in secrets {
            let secret = StoredToken.Secret(
                hashHex: try required(row, 1), createdAtMillis: try number(row, 2), retiresAtMillis: try optionalNumber(row, 3))
            secretsByToken[try required(row, 0), default: []].append(secret)
        }
        return try tokens.map { (row) throws(StoreError) -> StoredToken in
            let id = try required(row, 0)
            return StoredToken(
                id: id, name: try required(row, 1), scopes: StoredToken.split(try required(row, 2)),
                accounts: StoredToken.split(try required(row, 3)), environments: row[4].map(StoredToken.split),
                createdAtMillis: try number(row, 5), createdBy: try required(row, 6), expiresAtMillis: try optionalNumber(row, 7),
                revokedAtMillis: try optionalNumber(row, 8), lastUsedAtMillis: try optionalNumber(row, 9),
                secrets: secretsByToken[id] ?? [])
        }
    }

    private static func required(_ row: [String?], _ column: Int) throws(StoreError) -> String {
        guard column < row.count, let text = row[column] else { throw .unavailable("token row: column \(column) is NULL") }
        return text
    }

    private static func number(_ row: [String?], _ column: Int) throws(StoreError) -> Int64 {
        guard let value = Int64(try required(row, column)) else { throw .unavailable("token row: column \(column) is not a number") }
        return value
    }

    private static func optionalNumber(_ row: [String?], _ column: Int) throws(StoreError) -> Int64? {
        guard column < row.count, row[column] != nil else { return nil }
        return try number(row, column)
    }
}
