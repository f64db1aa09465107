/// One entry of the audit log as the store keeps it (`TabAccess.AuditEntry` is its meaning and JSON form): who
/// did what, to which account, with what outcome. Entries of changes are written in the change's transaction;
/// refusals on their own, coalesced per ``coalescingKey``.
public struct StoredAuditEntry: Sendable, Equatable {
    /// The store's sequence number (0 until stored): only grows.
    public var id: Int64
    public var atMillis: Int64
    public var actor: String
    public var tokenID: String?
    public var address: String
    public var method: String
    public var path: String
    public var action: String
    public var account: String?
    public var environment: String?
    public var version: Int?
    public var status: Int
    public var requestID: String?
    /// How many requests it stands for (coalesced refusals).
    public var count: Int
    /// Entries with the same key are one entry whose `count` grows; nil for changes.
    public var coalescingKey: String?

    /// An entry.
    public init(
        id: Int64 = 0, atMillis: Int64, actor: String, tokenID: String?, address: String, method: String, path: String, action: String,
        account: String? = nil, environment: String? = nil, version: Int? = nil, status: Int, requestID: String? = nil, count: Int = 1,
        coalescingKey: String? = nil
    ) {
        self.id = id
        self.atMillis = atMillis
        self.actor = actor
        self.tokenID = tokenID
        self.address = address
        self.method = method
        self.path = path
        self.action = action
        self.account = account
        self.environment = environment
        self.version = version
        self.status = status
        self.requestID = requestID
        self.count = count
        self.coalescingKey = coalescingKey
    }
}

/// The SQL of the audit log, once for SQLite and PostgreSQL (`$n` placeholders in order of first use, text cells).
public enum AuditRows {
    public static let columns =
        "at_ms, actor, token_id, address, method, path, action, account, environment, version, status, request_id, count, coalescing_key"
    /// Inserts an entry with the next id (inside a write transaction, which serializes writers); one with the key
    /// of an existing entry adds to that entry's count instead. (`WHERE true`: SQLite's parser needs it before an
    /// upsert's `ON CONFLICT` after a `SELECT`; the casts tell PostgreSQL the parameters' types.)
    public static let insert = """
        INSERT INTO audit_log (id, \(columns))
        SELECT COALESCE(MAX(id), 0) + 1, CAST($1 AS BIGINT), CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS TEXT),
            CAST($5 AS TEXT), CAST($6 AS TEXT), CAST($7 AS TEXT), CAST($8 AS TEXT), CAST($9 AS TEXT), CAST($10 AS INTEGER),
            CAST($11 AS INTEGER), CAST($12 AS TEXT), CAST($13 AS INTEGER), CAST($14 AS TEXT)
        FROM audit_log WHERE true
        ON CONFLICT (coalescing_key) DO UPDATE SET count = audit_log.count + excluded.count
        """
    /// Entries after `$1`, optionally of account `$2` and actor `$3`, oldest first, at most `$4`.
    public static let select = """
        SELECT id, \(columns) FROM audit_log WHERE id > $1
        AND (CAST($2 AS TEXT) IS NULL OR account = CAST($2 AS TEXT)) AND (CAST($3 AS TEXT) IS NULL OR actor = CAST($3 AS TEXT))
        ORDER BY id LIMIT $4
        """
    /// Deletes at most `$2` of the oldest entries dated before `$1`, never the newest (whose id the next one follows).
    public static let prune = """
        DELETE FROM audit_log WHERE id IN (
            SELECT id FROM audit_log WHERE at_ms < $1 AND id < (SELECT MAX(id) FROM audit_log) ORDER BY id LIMIT $2)
        """

    public static func cells(_ entry: StoredAuditEntry) -> [String?] {
        [
            String(entry.atMillis), entry.actor, entry.tokenID, entry.address, entry.method, entry.path, entry.action, entry.account,
            entry.environment, entry.version.map(String.init), String(entry.status), entry.requestID, String(entry.count),
            entry.coalescingKey,
        ]
    }

    public static func selectCells(afterID: Int64, limit: Int, account: String?, actor: String?) -> [String?] {
        [String(afterID), account, actor, String(limit)]
    }

    /// Entries from rows of ``select``.
    /// - Throws: ``StoreError/unavailable(_:)`` when a required cell is NULL or not a number.
    public static func decode(_ rows: [[String?]]) throws(StoreError) -> [StoredAuditEntry] {
        try rows.map { (row) throws(StoreError) -> StoredAuditEntry in
            func text(_ column: Int) throws(StoreError) -> String {
                guard column < row.count, let value = row[column] else { throw .unavailable("audit row: column \(column) is NULL") }
                return value
            }
            func number(_ column: Int) throws(StoreError) -> Int64 {
                guard let value = Int64(try text(column)) else { throw .unavailable("audit row: column \(column) is not a number") }
                return value
            }
            return StoredAuditEntry(
                id: try number(0), atMillis: try number(1), actor: try text(2), tokenID: row[3], address: try text(4), method: try text(5),
                path: try text(6), action: try text(7), account: row[8], environment: row[9], version: row[10].flatMap { Int($0) },
                status: Int(try number(11)), requestID: row[12], count: Int(try number(13)), coalescingKey: row[14])
        }
    }
}
