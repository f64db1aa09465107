import TabDelivery

/// The environment pointers' and rollouts' SQL, once for SQLite and PostgreSQL (`?` placeholders; PostgreSQL numbers
/// them with ``WebhookSQL/numbered(_:)``).
public enum RolloutSQL {
    public static let selectPointer = "SELECT version FROM layout_pointers WHERE account = ? AND environment = ?"
    public static let upsertPointer = """
        INSERT INTO layout_pointers (account, environment, version) VALUES (?, ?, ?)
        ON CONFLICT (account, environment) DO UPDATE SET version = excluded.version
        """
    public static let insertServedVersion = """
        INSERT INTO layout_served_versions (account, environment, version) VALUES (?, ?, ?)
        ON CONFLICT (account, environment, version) DO NOTHING
        """
    public static let selectServedVersions =
        "SELECT environment, version FROM layout_served_versions WHERE account = ? ORDER BY version DESC, environment"
    public static let selectPointers = "SELECT environment, version FROM layout_pointers WHERE account = ? ORDER BY environment"
    /// Accounts whose version in an environment extends an account (`?`: the account, the environment).
    public static let selectExtending = """
        SELECT v.account FROM layout_pointers AS p JOIN layout_versions AS v ON v.account = p.account AND v.version = p.version
        WHERE v.extends = ? AND p.environment = ? AND NOT v.deleted
        """
    public static let selectStringsPointer = "SELECT version FROM strings_pointers WHERE locale = ? AND environment = ?"
    public static let upsertStringsPointer = """
        INSERT INTO strings_pointers (locale, environment, version) VALUES (?, ?, ?)
        ON CONFLICT (locale, environment) DO UPDATE SET version = excluded.version
        """
    public static let selectLatestRollout =
        "SELECT record FROM rollouts WHERE account = ? AND environment = ? ORDER BY id DESC LIMIT 1"
    public static let selectRolloutsUnderWay = "SELECT record FROM rollouts WHERE ended = 0 ORDER BY account, environment, id"
    public static let nextRolloutID = "SELECT COALESCE(MAX(id), 0) + 1 FROM rollouts WHERE account = ? AND environment = ?"
    public static let insertRollout = """
        INSERT INTO rollouts (account, environment, id, revision, ended, record, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
        """
    /// Updates a rollout only where its revision is the one read (the last `?`); PostgreSQL appends `RETURNING 1`.
    public static let updateRollout = """
        UPDATE rollouts SET revision = ?, ended = ?, record = ?, updated_at_ms = ?
        WHERE account = ? AND environment = ? AND id = ? AND revision = ?
        """
    public static let upsertServed = """
        INSERT INTO rollout_served (account, environment, id, replica, candidate, stable, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (account, environment, id, replica) DO UPDATE SET candidate = excluded.candidate, stable = excluded.stable,
        updated_at_ms = excluded.updated_at_ms
        """
    public static let selectServed = """
        SELECT COALESCE(SUM(candidate), 0), COALESCE(SUM(stable), 0) FROM rollout_served
        WHERE account = ? AND environment = ? AND id = ?
        """

    /// The cells of `insertRollout`, the row written at `millis`.
    public static func insertCells(_ rollout: Rollout, atMillis millis: Int64) -> [WebhookSQL.Cell] {
        [
            .text(rollout.account), .text(rollout.environment.text), .int(Int64(rollout.id)), .int(Int64(rollout.revision)),
            .int(rollout.progress.ending == nil ? 0 : 1), .bytes(rollout.record), .int(millis),
        ]
    }

    /// The cells of `updateRollout`, for a rollout whose stored revision is `expected`, the row updated at `millis`.
    public static func updateCells(_ rollout: Rollout, expected: Int, atMillis millis: Int64) -> [WebhookSQL.Cell] {
        [
            .int(Int64(rollout.revision)), .int(rollout.progress.ending == nil ? 0 : 1), .bytes(rollout.record), .int(millis),
            .text(rollout.account), .text(rollout.environment.text), .int(Int64(rollout.id)), .int(Int64(expected)),
        ]
    }

    /// A rollout from its stored record. - Throws: ``StoreError/unavailable(_:)`` for a damaged row.
    public static func rollout(_ record: [UInt8]) throws(StoreError) -> Rollout {
        guard let rollout = Rollout(record: record) else { throw .unavailable("a rollouts row does not hold a rollout record") }
        return rollout
    }
}
