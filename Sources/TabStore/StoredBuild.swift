import TabAccess

/// An app build as the store keeps it (docs/builds.md): what it declared, by whom and when, and when a client of it
/// was last seen. The declaration is kept as the JSON its `PUT` was checked into (TabBuilds reads it).
public struct StoredBuild: Sendable, Equatable {
    public var platform: String
    /// The version as a canonical string (`2.0` is kept as `2`): one row per build however clients write it.
    public var appVersion: String
    /// `{"viewControllers", "images"?, "note"?}`.
    public var spec: [UInt8]
    public var declaredAtMillis: Int64
    public var declaredBy: String
    public var lastSeenMillis: Int64?

    public init(platform: String, appVersion: String, spec: [UInt8], declaredAtMillis: Int64, declaredBy: String, lastSeenMillis: Int64?) {
        self.platform = platform
        self.appVersion = appVersion
        self.spec = spec
        self.declaredAtMillis = declaredAtMillis
        self.declaredBy = declaredBy
        self.lastSeenMillis = lastSeenMillis
    }
}

/// A build's rows, in one transaction.
public protocol BuildRows {
    /// Every declared build.
    func builds() throws(StoreError) -> [StoredBuild]
    /// Declares `build` or replaces its declaration (keeping when it was last seen); true when it replaced one.
    func save(build: StoredBuild) throws(StoreError) -> Bool
    /// Retires a build; false when there was none.
    func deleteBuild(platform: String, appVersion: String) throws(StoreError) -> Bool
    /// Moves `lastSeenMillis` forward (never back) for each declared build named.
    func markSeen(platform: String, appVersion: String, atMillis: Int64) throws(StoreError)
}

/// The SQL of ``BuildRows`` for SQLite and PostgreSQL (both read `$1`-style parameters).
public enum BuildSQL {
    public static let select =
        "SELECT platform, app_version, spec, declared_at_ms, declared_by, last_seen_ms FROM builds ORDER BY platform, app_version"
    public static let exists = "SELECT 1 FROM builds WHERE platform = $1 AND app_version = $2"
    public static let upsert = """
        INSERT INTO builds (platform, app_version, spec, declared_at_ms, declared_by) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (platform, app_version) DO UPDATE SET spec = excluded.spec, declared_at_ms = excluded.declared_at_ms,
        declared_by = excluded.declared_by
        """
    public static let delete = "DELETE FROM builds WHERE platform = $1 AND app_version = $2"
    /// Parameters: the time, the platform, the version. (SQLite numbers `$N` parameters in order of first appearance,
    /// so each statement names them in order.)
    public static let markSeen = """
        UPDATE builds SET last_seen_ms = $1 WHERE platform = $2 AND app_version = $3 AND (last_seen_ms IS NULL OR last_seen_ms < $1)
        """

    /// The parameters of ``upsert``.
    public static func cells(_ build: StoredBuild) -> [String?] {
        [build.platform, build.appVersion, String(decoding: build.spec, as: UTF8.self), String(build.declaredAtMillis), build.declaredBy]
    }

    /// Builds from the text cells of ``select``.
    /// - Throws: ``StoreError/unavailable(_:)`` when a cell the schema requires is NULL or not a number.
    public static func decode(_ rows: [[String?]]) throws(StoreError) -> [StoredBuild] {
        var builds: [StoredBuild] = []
        for row in rows {
            guard row.count == 6, let platform = row[0], let version = row[1], let spec = row[2],
                let declared = row[3].flatMap({ Int64($0) }),
                let by = row[4]
            else { throw .unavailable("a builds row is not what the schema writes") }
            builds.append(
                StoredBuild(
                    platform: platform, appVersion: version, spec: Array(spec.utf8), declaredAtMillis: declared, declaredBy: by,
                    lastSeenMillis: row[5].flatMap { Int64($0) }))
        }
        return builds
    }
}

/// What the service asks of a store about builds (each call one transaction).
public protocol BuildStore: Sendable {
    func builds() async throws(StoreError) -> [StoredBuild]
    /// Declares or replaces `build`, and `audit` in the same transaction; true when it replaced one.
    func declare(build: StoredBuild, audit: AuditEntry?) async throws(StoreError) -> Bool
    /// Retires a build, and `audit` in the same transaction; false when there was none.
    func retireBuild(platform: String, appVersion: String, audit: AuditEntry?) async throws(StoreError) -> Bool
    /// Records when clients of these builds were last seen (to the minute).
    func markBuildsSeen(_ seen: [(platform: String, appVersion: String, atMillis: Int64)]) async throws(StoreError)
}

extension StoreBackend {
    public func builds() async throws(StoreError) -> [StoredBuild] {
        try await transaction { (rows) throws(StoreError) in try rows.builds() }
    }

    public func declare(build: StoredBuild, audit: AuditEntry?) async throws(StoreError) -> Bool {
        try await transaction { (rows) throws(StoreError) in
            let replaced = try rows.save(build: build)
            try WriteRule.record(audit, version: nil, rows)
            return replaced
        }
    }

    public func retireBuild(platform: String, appVersion: String, audit: AuditEntry?) async throws(StoreError) -> Bool {
        try await transaction { (rows) throws(StoreError) in
            let existed = try rows.deleteBuild(platform: platform, appVersion: appVersion)
            if existed { try WriteRule.record(audit, version: nil, rows) }
            return existed
        }
    }

    public func markBuildsSeen(_ seen: [(platform: String, appVersion: String, atMillis: Int64)]) async throws(StoreError) {
        try await transaction { (rows) throws(StoreError) in
            for sighting in seen {
                try rows.markSeen(platform: sighting.platform, appVersion: sighting.appVersion, atMillis: sighting.atMillis)
            }
        }
    }
}
