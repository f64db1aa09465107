import Foundation
import Testing

@testable import TabStore
@testable import TabStorePostgres

/// Change requests in a store the previous release wrote (its schema: every migration before the one that adds
/// `apply_at_ms`; its rows: written with its own statements, which name only the columns it knew) are read by the
/// schedule's clock after the upgrade in place; during a rolling upgrade on one store, the rows an older replica
/// inserts or approves after the migration are found at their time as well.
@Suite struct ChangeRequestUpgradeTests {
    /// The previous release's writes, as it ran them: the clock's read must not depend on a column these leave out.
    static let oldInsert = "INSERT INTO change_requests (id, state, record, created_at_ms) VALUES ($1, $2, $3, $4)"
    static let oldReplace =
        "UPDATE change_requests SET state = $1, record = $2, claimed_by = NULL, finished_at_ms = $3 WHERE id = $4 AND record = $5"

    /// The schema version of the release before `apply_at_ms`.
    static func previousRelease() throws -> Int {
        try #require(StoreSchema.migrations.firstIndex { $0.contains("apply_at_ms") })
    }

    static func record(_ id: String, _ state: String, applyAt: Int64?) -> String {
        #"{"id":"\#(id)""# + (applyAt.map { #","applyAtMillis":\#($0)"# } ?? "") + #","state":"\#(state)"}"#
    }

    /// Runs the previous release's schema and writes through `execute` (SQL with `$n` parameters, as text), opens
    /// today's store with `open`, and checks what its clock reads before and after an older replica's writes.
    func expectUpgrade(
        _ dialect: StoreSchema.Dialect, execute: (String, [String?]) throws -> Void, open: () throws -> any TabStore
    ) async throws {
        try execute(StoreSchema.migrationsTable(dialect), [])
        for (version, sql) in try StoreSchema.pending(after: 0, dialect).prefix(try Self.previousRelease()) {
            try execute(sql, [])
            try execute("INSERT INTO schema_migrations (version, applied_at_ms) VALUES (\(version), 0)", [])
        }
        for (id, state, applyAt) in [
            ("cr_due", "approved", Int64?.some(5_000)), ("cr_ahead", "approved", 50_000), ("cr_open", "open", 1_000),
            ("cr_byhand", "approved", nil),
        ] {
            try execute(Self.oldInsert, [id, state, Self.record(id, state, applyAt: applyAt), "1000"])
        }

        let store = try open()
        let upgraded = try await store.dueChangeRequests(atMillis: 10_000, limit: 100)
        #expect(upgraded.due.map(\.id) == ["cr_due"], "the old row that is due, and not the one ahead, the open one or one by hand")
        #expect(upgraded.nextApplyAtMillis == 50_000)
        #expect(upgraded.counts == ["approved": 3, "open": 1])

        // An older replica on the upgraded store: a request it creates approved is found at its time, and one it
        // approves with a time of its own is dated by that time, not by the one it had while open.
        try execute(Self.oldInsert, ["cr_older", "approved", Self.record("cr_older", "approved", applyAt: 6_000), "2000"])
        try execute(
            Self.oldReplace,
            [
                "approved", Self.record("cr_open", "approved", applyAt: 40_000), nil, "cr_open",
                Self.record("cr_open", "open", applyAt: 1_000),
            ])
        let rolling = try await store.dueChangeRequests(atMillis: 10_000, limit: 100)
        #expect(rolling.due.map(\.id) == ["cr_due", "cr_older"])
        #expect(rolling.nextApplyAtMillis == 40_000)
        let later = try await store.dueChangeRequests(atMillis: 45_000, limit: 100)
        #expect(later.due.map(\.id) == ["cr_due", "cr_older", "cr_open"])
    }

    @Test func anSQLiteStoreOfThePreviousReleaseUpgradesAndItsDueRequestsAreRead() async throws {
        let path = temporaryPath("change-request-upgrade") + "/tabs.sqlite"
        let old = try SQLiteConnection(path: path)
        try await expectUpgrade(
            .sqlite,
            execute: { sql, parameters in
                if parameters.isEmpty {
                    try old.execute(sql)
                } else {
                    try old.run(sql, parameters.map { $0.map(SQLiteValue.text) ?? .null })
                }
            },
            open: { try SQLiteStore(path: path) })
        let applied = try old.query("SELECT MAX(version) FROM schema_migrations", []) { $0.int(0) }
        #expect(applied == [StoreSchema.currentVersion])
    }

    @Test(.enabled(if: PostgresTestDatabase.serverURL != nil))
    func aPostgreSQLStoreOfThePreviousReleaseUpgradesAndItsDueRequestsAreRead() async throws {
        let url = try PostgresTestDatabase.create()
        let old = try PGConnection(url: url)
        try await expectUpgrade(
            .postgres,
            execute: { sql, parameters in _ = try old.execute(sql, parameters.map { $0.map(PGValue.text) ?? .null }) },
            open: { try PostgresStore(url: url) })
        let applied = try old.execute("SELECT MAX(version) FROM schema_migrations").first?.first?.text
        #expect(applied == String(StoreSchema.currentVersion))
    }
}
