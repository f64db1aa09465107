import Foundation
import TabAccess

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
    /// Deletes at most `$3` of the oldest entries: those dated before `$1`, and those beyond the newest `$2` (ids
    /// only grow by one and only the oldest are deleted, so the newest `$2` are the ids within `$2` of the largest);
    /// never the newest entry (whose id the next one follows).
    public static let prune = """
        DELETE FROM audit_log WHERE id IN (
            SELECT id FROM audit_log
            WHERE (at_ms < CAST($1 AS BIGINT) OR id <= (SELECT MAX(id) FROM audit_log) - CAST($2 AS BIGINT))
            AND id < (SELECT MAX(id) FROM audit_log) ORDER BY id LIMIT CAST($3 AS BIGINT))
        """

    /// The cells of ``insert`` for `entry` (its time in Unix milliseconds; refusals with their ``AuditEntry/coalescingKey``).
    public static func cells(_ entry: AuditEntry) -> [String?] {
        [
            String(entry.at.millis), entry.actor, entry.tokenID?.rawValue, entry.address, entry.method, entry.path, entry.action,
            entry.account, entry.environment, entry.version.map(String.init), String(entry.status), entry.requestID,
            String(entry.count), entry.coalescingKey,
        ]
    }

    public static func selectCells(afterID: Int64, limit: Int, account: String?, actor: String?) -> [String?] {
        [String(afterID), account, actor, String(limit)]
    }

    /// Entries from rows of ``select``.
    /// - Throws: ``StoreError/unavailable(_:)`` when a required cell is NULL or not a number.
    public static func decode(_ rows: [[String?]]) throws(StoreError) -> [AuditEntry] {
        try rows.map { (cells) throws(StoreError) -> AuditEntry in
            let row = TextCells(cells: cells, row: "audit row")
            return AuditEntry(
                id: try row.number(0), at: Date(millis: try row.number(1)), actor: try row.required(2),
                tokenID: row[3].flatMap { TokenID($0) }, address: try row.required(4), method: try row.required(5),
                path: try row.required(6), action: try row.required(7), account: row[8], environment: row[9],
                version: row[10].flatMap { Int($0) }, status: Int(try row.number(11)), requestID: row[12], count: Int(try row.number(13)))
        }
    }
}
