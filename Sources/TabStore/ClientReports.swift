import TabGuard

/// Where a batch of one install's reports counts: a rollout's arm (`rollout:ID`, arm `candidate`, `stable` or
/// `testers`) or, outside rollouts, a version (`version:N`, arm `version`).
public struct ReportSubject: Sendable, Hashable {
    /// The account, and the environment by name.
    public var account, environment: String
    /// `rollout:ID` or `version:N`.
    public var key: String

    public init(account: String, environment: String, key: String) {
        self.account = account
        self.environment = environment
        self.key = key
    }

    public static func rollout(account: String, environment: String, id: Int) -> ReportSubject {
        ReportSubject(account: account, environment: environment, key: "rollout:\(id)")
    }

    public static func version(account: String, environment: String, version: Int) -> ReportSubject {
        ReportSubject(account: account, environment: environment, key: "version:\(version)")
    }
}

/// One install's reports that count to one arm of a subject: each (kind, tab) is one row, kept once per install.
public struct ReportBatch: Sendable, Hashable {
    public var subject: ReportSubject
    public var arm: String
    public var install: String
    /// (kind, tab) pairs; the tab is empty for kinds that name none.
    public var reports: [ReportKey]

    public struct ReportKey: Sendable, Hashable {
        public var kind: ReportKind
        public var tab: String

        public init(kind: ReportKind, tab: String) {
            self.kind = kind
            self.tab = tab
        }
    }

    public init(subject: ReportSubject, arm: String, install: String, reports: [ReportKey]) {
        self.subject = subject
        self.arm = arm
        self.install = install
        self.reports = reports
    }
}

/// The apps' reports as counted in a write transaction; each backend implements them.
public protocol ReportRows {
    /// Adds the batch's rows not counted yet, unless the arm holds `cap` rows already; returns how many it added.
    func countReports(_ batch: ReportBatch, cap: Int, atMillis: Int64) throws(StoreError) -> Int
    /// Each arm's health for a subject.
    func reportHealth(_ subject: ReportSubject) throws(StoreError) -> [String: ArmHealth]
    /// Deletes the rows of subjects whose newest row is older than `millis` and that `keep` does not name; returns how
    /// many rows it deleted.
    func pruneReports(olderThanMillis millis: Int64, keep: Set<ReportSubject>) throws(StoreError) -> Int
}

/// The apps' reports (`POST …/tabs/reports`), counted once per install, kind and tab, shared by every replica.
public protocol ReportStore: Sendable {
    /// Counts `batches` (one transaction); returns the rows added.
    func countReports(_ batches: [ReportBatch], cap: Int) async throws(StoreError) -> Int
    /// Each arm's health for a subject.
    func reportHealth(_ subject: ReportSubject) async throws(StoreError) -> [String: ArmHealth]
    /// Drops what no rollout under way needs and nothing has added to for `retentionMillis`.
    func pruneReports(olderThanMillis millis: Int64, keep: Set<ReportSubject>) async throws(StoreError) -> Int
}

extension StoreBackend {
    public func countReports(_ batches: [ReportBatch], cap: Int) async throws(StoreError) -> Int {
        guard !batches.isEmpty else { return 0 }
        return try await transaction { (rows) throws(StoreError) in
            var added = 0
            for batch in batches { added += try rows.countReports(batch, cap: cap, atMillis: rows.clock.unixMillis) }
            return added
        }
    }

    public func reportHealth(_ subject: ReportSubject) async throws(StoreError) -> [String: ArmHealth] {
        try await transaction { (rows) throws(StoreError) in try rows.reportHealth(subject) }
    }

    public func pruneReports(olderThanMillis millis: Int64, keep: Set<ReportSubject>) async throws(StoreError) -> Int {
        try await transaction { (rows) throws(StoreError) in try rows.pruneReports(olderThanMillis: millis, keep: keep) }
    }
}

/// The reports' SQL, once for SQLite and PostgreSQL (`?` placeholders).
public enum ReportSQL {
    /// One row of ``health``.
    public struct CountRow: Sendable {
        var arm: String
        var kind: String
        var tab: String
        var installs: Int

        public init(arm: String, kind: String, tab: String, installs: Int) {
            self.arm = arm
            self.kind = kind
            self.tab = tab
            self.installs = installs
        }
    }

    public static let armRows = "SELECT COUNT(*) FROM client_reports WHERE account = ? AND environment = ? AND subject = ? AND arm = ?"
    public static let insert = """
        INSERT INTO client_reports (account, environment, subject, arm, kind, tab, install, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (account, environment, subject, arm, kind, tab, install) DO NOTHING
        """
    /// Distinct installs per arm (kind and tab empty), per arm and kind (tab empty), per arm and failed tab, and failing
    /// installs per arm (kind `*`).
    public static let health = """
        SELECT arm, '', '', COUNT(DISTINCT install) FROM client_reports WHERE account = ? AND environment = ? AND subject = ? GROUP BY arm
        UNION ALL
        SELECT arm, kind, '', COUNT(DISTINCT install) FROM client_reports WHERE account = ? AND environment = ? AND subject = ?
        GROUP BY arm, kind
        UNION ALL
        SELECT arm, kind, tab, COUNT(DISTINCT install) FROM client_reports
        WHERE account = ? AND environment = ? AND subject = ? AND kind = 'tabFailed' GROUP BY arm, kind, tab
        UNION ALL
        SELECT arm, '*', '', COUNT(DISTINCT install) FROM client_reports
        WHERE account = ? AND environment = ? AND subject = ? AND kind <> 'rendered' GROUP BY arm
        """
    /// The subjects whose newest row is older than a time.
    public static let staleSubjects = """
        SELECT account, environment, subject FROM client_reports GROUP BY account, environment, subject HAVING MAX(at_ms) < ?
        """
    public static let deleteSubject = "DELETE FROM client_reports WHERE account = ? AND environment = ? AND subject = ?"

    /// Each arm's health from the rows of ``health``.
    public static func health(_ rows: [CountRow]) -> [String: ArmHealth] {
        var arms: [String: ArmHealth] = [:]
        for row in rows {
            var arm = arms[row.arm] ?? ArmHealth()
            switch (row.kind, row.tab) {
            case ("", _): arm.installs = row.installs
            case ("*", _): arm.failed = row.installs
            case (let kind, ""): if let kind = ReportKind(rawValue: kind) { arm.byKind[kind] = row.installs }
            case (_, let tab): arm.byTab[tab] = row.installs
            }
            arms[row.arm] = arm
        }
        return arms
    }
}
