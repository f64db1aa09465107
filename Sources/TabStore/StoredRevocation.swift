import TabAccess

/// A version of an account's layout withdrawn from every environment (`POST …/layout/versions/{n}/revoke`): no
/// answer by number serves it and manifests list it. Un-revoking keeps the row with ``unrevokedAtMillis`` set, so
/// that the time of the last change to an account's list survives a restart (a manifest's `revision` never goes back).
public struct StoredRevocation: Sendable, Equatable {
    public var account: String
    public var version: Int
    /// Why, as the revoker gave it (at most 2 KiB, without control characters or bidi marks).
    public var reason: String
    public var revokedAtMillis: Int64
    public var revokedBy: String
    /// When it was un-revoked, nil while it is revoked.
    public var unrevokedAtMillis: Int64?
    /// Who un-revoked it.
    public var unrevokedBy: String?

    public init(
        account: String, version: Int, reason: String, revokedAtMillis: Int64, revokedBy: String, unrevokedAtMillis: Int64? = nil,
        unrevokedBy: String? = nil
    ) {
        self.unrevokedBy = unrevokedBy
        self.account = account
        self.version = version
        self.reason = reason
        self.revokedAtMillis = revokedAtMillis
        self.revokedBy = revokedBy
        self.unrevokedAtMillis = unrevokedAtMillis
    }

    /// Whether the version is revoked now.
    public var isRevoked: Bool { unrevokedAtMillis == nil }

    /// The time of its last change (revoked, or un-revoked).
    public var changedAtMillis: Int64 { max(revokedAtMillis, unrevokedAtMillis ?? 0) }
}

/// Revocations inside one write transaction; each backend implements them.
public protocol RevocationRows {
    /// The revocations of one account (every account when nil), revoked and un-revoked ones, by account then version.
    func revocations(account: String?) throws(StoreError) -> [StoredRevocation]
    /// Stores a revocation, replacing the account's row for that version.
    func save(revocation: StoredRevocation) throws(StoreError)
    /// Tells the other replicas that an account's revocations changed, at commit (stores no other process reads do
    /// nothing).
    func announceRevocations(account: String, atMillis: Int64) throws(StoreError)
}

extension RevocationRows {
    public func announceRevocations(account: String, atMillis: Int64) throws(StoreError) {}
}

/// The SQL of ``RevocationRows`` for SQLite and PostgreSQL (both read `$1`-style parameters).
public enum RevocationSQL {
    static let columns = "account, version, reason, revoked_at_ms, revoked_by, unrevoked_at_ms, unrevoked_by"
    public static let selectAll = "SELECT \(columns) FROM layout_revocations ORDER BY account, version"
    public static let selectAccount = "SELECT \(columns) FROM layout_revocations WHERE account = $1 ORDER BY version"
    public static let upsert = """
        INSERT INTO layout_revocations (\(columns)) VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (account, version) DO UPDATE SET reason = excluded.reason, revoked_at_ms = excluded.revoked_at_ms,
        revoked_by = excluded.revoked_by, unrevoked_at_ms = excluded.unrevoked_at_ms,
        unrevoked_by = excluded.unrevoked_by
        """

    /// The parameters of ``upsert``.
    public static func cells(_ revocation: StoredRevocation) -> [String?] {
        [
            revocation.account, String(revocation.version), revocation.reason, String(revocation.revokedAtMillis), revocation.revokedBy,
            revocation.unrevokedAtMillis.map { String($0) }, revocation.unrevokedBy,
        ]
    }

    /// Revocations from the text cells of ``selectAll`` or ``selectAccount``.
    /// - Throws: ``StoreError/unavailable(_:)`` when a cell the schema requires is NULL or not a number.
    public static func decode(_ rows: [[String?]]) throws(StoreError) -> [StoredRevocation] {
        var revocations: [StoredRevocation] = []
        for row in rows {
            guard row.count == 7, let account = row[0], let version = row[1].flatMap({ Int($0) }), let reason = row[2],
                let at = row[3].flatMap({ Int64($0) }), let by = row[4]
            else { throw .unavailable("a layout_revocations row is not what the schema writes") }
            revocations.append(
                StoredRevocation(
                    account: account, version: version, reason: reason, revokedAtMillis: at, revokedBy: by,
                    unrevokedAtMillis: row[5].flatMap { Int64($0) }, unrevokedBy: row[6]))
        }
        return revocations
    }
}

/// What a revoke or an un-revoke did.
public enum RevocationOutcome: Sendable, Equatable {
    /// Recorded; `changed` is false when the version was in that state already (nothing written, nothing told).
    case recorded(StoredRevocation, changed: Bool)
    /// The account has no such version (or it is a deletion record).
    case unknownVersion
    /// Refused: these environments point at the version, or run a rollout that serves it (as candidate or stable).
    case served(pointedBy: [String], rolloutsIn: [String])
    /// An un-revoke of a version that was never revoked.
    case notRevoked
}

/// What the service asks of a store about revocations (each call one transaction).
public protocol RevocationStore: Sendable {
    /// The revocations of one account (every account when nil), revoked and un-revoked ones.
    func revocations(account: String?) async throws(StoreError) -> [StoredRevocation]
    /// Revokes `version` of `account` in every environment unless one serves it, with `audit` and the webhook
    /// deliveries of `event` (its data, filled by the caller with the revocation) in the same transaction.
    func revoke(
        account: String, version: Int, reason: String, author: String, audit: AuditEntry?,
        event: @escaping @Sendable (StoredRevocation) -> [UInt8]
    ) async throws(StoreError) -> RevocationOutcome
    /// Un-revokes `version` of `account`, with `audit` and the webhook deliveries of `event` in the same transaction.
    func unrevoke(
        account: String, version: Int, author: String, audit: AuditEntry?, event: @escaping @Sendable (StoredRevocation) -> [UInt8]
    ) async throws(StoreError) -> RevocationOutcome
}

extension StoreBackend {
    public func revocations(account: String?) async throws(StoreError) -> [StoredRevocation] {
        try await transaction { (rows) throws(StoreError) in try rows.revocations(account: account) }
    }

    public func revoke(
        account: String, version: Int, reason: String, author: String, audit: AuditEntry?,
        event: @escaping @Sendable (StoredRevocation) -> [UInt8]
    ) async throws(StoreError) -> RevocationOutcome {
        try await transaction { (rows) throws(StoreError) in
            guard let record = try rows.version(account: account, number: version), !record.deleted else { return .unknownVersion }
            let held = try rows.revocations(account: account).first { $0.version == version }
            if let held, held.isRevoked { return .recorded(held, changed: false) }
            let pointedBy = try rows.pointers(account: account).filter { $0.value == version }.map(\.key).sorted()
            let rolloutsIn = try rows.rolloutsUnderWay().filter {
                $0.account == account && ($0.candidateVersion == version || $0.stableVersion == version)
            }.map(\.environment.text).sorted()
            guard pointedBy.isEmpty, rolloutsIn.isEmpty else { return .served(pointedBy: pointedBy, rolloutsIn: rolloutsIn) }
            let now = rows.clock.unixMillis
            let revocation = StoredRevocation(account: account, version: version, reason: reason, revokedAtMillis: now, revokedBy: author)
            try WriteRule.recordRevocation(revocation, audit: audit, event: event, revoked: true, rows)
            return .recorded(revocation, changed: true)
        }
    }

    public func unrevoke(
        account: String, version: Int, author: String, audit: AuditEntry?, event: @escaping @Sendable (StoredRevocation) -> [UInt8]
    ) async throws(StoreError) -> RevocationOutcome {
        try await transaction { (rows) throws(StoreError) in
            guard let record = try rows.version(account: account, number: version), !record.deleted else { return .unknownVersion }
            guard var held = try rows.revocations(account: account).first(where: { $0.version == version }) else { return .notRevoked }
            guard held.isRevoked else { return .recorded(held, changed: false) }
            held.unrevokedAtMillis = max(rows.clock.unixMillis, held.revokedAtMillis)
            held.unrevokedBy = author
            try WriteRule.recordRevocation(held, audit: audit, event: event, revoked: false, rows)
            return .recorded(held, changed: true)
        }
    }
}

extension WriteRule {
    /// Stores a revocation's change with its audit entry and webhook deliveries, and tells the other replicas.
    static func recordRevocation(
        _ revocation: StoredRevocation, audit: AuditEntry?, event: (StoredRevocation) -> [UInt8], revoked: Bool, _ rows: any StoreRows
    ) throws(StoreError) {
        try rows.save(revocation: revocation)
        try record(audit, version: revocation.version, rows)
        try Outbox.enqueue(revocation: revocation, revoked: revoked, data: event(revocation), rows)
        try rows.announceRevocations(account: revocation.account, atMillis: revocation.changedAtMillis)
    }

    /// The versions of `account` that are revoked now.
    static func revokedVersions(_ account: String, _ rows: any StoreRows) throws(StoreError) -> Set<Int> {
        Set(try rows.revocations(account: account).filter(\.isRevoked).map(\.version))
    }
}
