import Foundation
import TabAccess
import TabDelivery
import TabStorePostgres
import Testing

@testable import TabStore

/// `StoreCopy` (what `tabserver migrate` runs) between real stores: SQLite files, and PostgreSQL where
/// `TABSERVER_TEST_POSTGRES_URL` names a server.
@Suite struct StoreCopyTests {
    enum Kind: String, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// The directions `migrate` supports that this machine can run.
    static var directions: [(Kind, Kind)] {
        PostgresTestDatabase.serverURL == nil ? [(.sqlite, .sqlite)] : [(.sqlite, .sqlite), (.sqlite, .postgres), (.postgres, .sqlite)]
    }

    /// A new, empty store of `kind`: its URL and an endpoint on it.
    static func fresh(_ kind: Kind) throws -> (url: String, endpoint: any StoreCopyEndpoint) {
        switch kind {
        case .sqlite:
            let path = temporaryPath("copy") + "/tabs.sqlite"
            return ("sqlite:" + path, try SQLiteCopyEndpoint(path: path, create: true))
        case .postgres:
            let url = try PostgresTestDatabase.create()
            return (url, try PostgresCopyEndpoint(url: url, name: url))
        }
    }

    static func open(_ url: String) throws -> any TabStore {
        url.hasPrefix("sqlite:") ? try SQLiteStore(path: String(url.dropFirst(7))) : try PostgresStore(url: url)
    }

    /// Writes, through the store's own write path, at least one row into every table the store has, with the
    /// values that are easy to lose: an empty source, NULL and non-ASCII authors and messages, a restore, a
    /// deletion, strings tables. A table added to the schema must be seeded here too
    /// (``everyTableOfTheStoreIsCopied`` fails until it is).
    static func seedEveryTable(_ store: any TabStore) async throws {
        let first = try await store.append(write("jack", #"{"tabs":[]}"#, .none, message: "première"))
        let second = try await store.append(
            LayoutWrite(
                account: "jack", source: [0, 1, 2, 255], contentType: "application/x-plist", precondition: .ifMatch([first.etag]),
                author: nil, message: nil, restoredFrom: 1, extends: ""))
        _ = try await store.append(write("base", "{}", .none))
        _ = try await store.append(
            LayoutWrite(account: "child", source: [], contentType: "application/json", precondition: .none, author: "ü", extends: "base"))
        _ = try await store.delete(account: "jack", precondition: .ifMatch([second.etag]), author: "deleter")
        // A revoked version (no environment serves jack's first one any more), its un-revoke columns NULL.
        _ = try await store.revoke(account: "jack", version: 1, reason: "cassé ü", author: "ci", audit: nil) { _ in Array("{}".utf8) }
        // An install's failing tab counted to a rollout's candidate arm.
        _ = try await store.countReports(
            [
                ReportBatch(
                    subject: .rollout(account: "jack", environment: "production", id: 1), arm: "candidate", install: "install-ü",
                    reports: [ReportBatch.ReportKey(kind: .tabFailed, tab: "news")])
            ], cap: 100)
        _ = try await store.appendStrings(
            locale: "fr", source: Array("\"a\" = \"b\";".utf8), contentType: "text/plain", precondition: .none, author: nil)
        // Tokens (a rotated one: two secrets, one retiring) and the audit log, a change's entry and a coalesced refusal.
        try await store.createToken(storedToken("aaaaaaaaaaaaaaaa", environments: ["staging"], hashes: [hashA, hashB]))
        _ = try await store.editToken(id: "aaaaaaaaaaaaaaaa") { token, _ in
            var token = token
            token.secrets[1].retiresAtMillis = 9_000
            token.lastUsedAtMillis = 8_000
            return .replace(token)
        }
        // A declared build, seen by a client.
        _ = try await store.declare(
            build: StoredBuild(
                platform: "iphone", appVersion: "2.0", spec: Array(#"{"viewControllers":["HomeViewController"]}"#.utf8),
                declaredAtMillis: 1_000, declaredBy: "ci", lastSeenMillis: nil), audit: nil)
        try await store.markBuildsSeen([(platform: "iphone", appVersion: "2.0", atMillis: 60_000)])
        // A change request held for review, approved to apply at a time (the target computes its `apply_at_ms`).
        try await store.create(
            changeRequest: StoredChangeRequest(
                id: "cr_0123456789abcdef", state: "approved",
                record: Array(#"{"applyAtMillis":3000,"id":"cr_0123456789abcdef","state":"approved"}"#.utf8), createdAtMillis: 2_000),
            audit: nil, event: nil)
        // A webhook that wants the next write: the write leaves one delivery in the outbox.
        try await store.createWebhook(
            StoredWebhook(
                id: "wh_copied", url: "https://hooks.example.com/x", events: ["layout"], accounts: ["audited"],
                secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", previousSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                previousUntilMillis: 7_000, createdAtMillis: 500, createdBy: "ci"))
        var audited = write("audited", "{}", .none)
        audited.audit = AuditEntry(
            at: Date(millis: 1_000), actor: "ci", tokenID: TokenID("aaaaaaaaaaaaaaaa"), address: "192.0.2.1", method: "PUT",
            path: "/v1/accounts/audited/layout",
            action: "layout.put", account: "audited", status: 201, requestID: "r-1")
        _ = try await store.append(audited)
        try await store.appendAudit(
            AuditEntry(
                at: Date(millis: 2_000), actor: "anonymous", tokenID: nil, address: "192.0.2.2", method: "GET", path: "/v1/accounts",
                action: "refused", status: 401, count: 3))
        // A draft under a running rollout, and one replica's answer counts: rows in rollouts and rollout_served (every
        // account above has its row in layout_pointers).
        let stable = try await store.append(write("staged", "{}", .none))
        var draft = write("staged", "{ }", .ifMatch([stable.etag]))
        draft.publish = false
        let candidate = try await store.append(draft)
        let started = try await store.startRollout(account: "staged", environment: "production", author: "ci", audit: nil) {
            (id, current, latest, availability) throws(RolloutError) in
            try Rollout.start(
                RolloutPlan(version: candidate.version, schedule: .fixed(Percent(basisPoints: 1250)!)),
                in: RolloutStartContext(
                    account: "staged", environment: .production, id: id, current: current, latest: latest,
                    precondition: .ifMatch([stable.etag]), now: Timestamp(unixMillis: 10_000),
                    availability: { availability[$0] ?? .missing }))
        }
        try await store.saveServed([(started.rollout, ServedCounts(candidate: 2, stable: 9))], replica: "replica-ü")
    }

    @Test(arguments: directions)
    func aCopyHoldsEveryVersionWithItsAuthorMessageTimeAndTag(from: Kind, to: Kind) async throws {
        let source = try Self.fresh(from)
        try await Self.seedEveryTable(try Self.open(source.url))
        let target = try Self.fresh(to)
        let report = try StoreCopy.copy(from: source.endpoint, to: target.endpoint)
        #expect(
            report.rows["layout_versions"] == 8 && report.rows["strings_versions"] == 1 && report.rows["layout_pointers"] == 5
                && report.rows["strings_pointers"] == 1)
        #expect(report.rows["rollouts"] == 1 && report.rows["rollout_served"] == 1)
        #expect(report.rows["tokens"] == 1 && report.rows["token_secrets"] == 2 && report.rows["audit_log"] == 2)
        #expect(report.rows["webhooks"] == 1 && report.rows["webhook_deliveries"] == 1)

        let (original, copy) = (try Self.open(source.url), try Self.open(target.url))
        for account in ["jack", "base", "child"] {
            #expect(try await copy.versions(account: account) == original.versions(account: account), "\(account)")
        }
        #expect(try await copy.currentStrings() == original.currentStrings())
        #expect(try await copy.currentLayouts().map(\.account) == ["audited", "base", "child", "staged"])
        #expect(try await copy.rolloutsUnderWay() == original.rolloutsUnderWay())
        #expect(try await copy.dueChangeRequests(atMillis: 5_000, limit: 10).due.map(\.id) == ["cr_0123456789abcdef"])
        #expect(try await copy.revocations(account: nil) == original.revocations(account: nil))
        #expect(report.rows["layout_revocations"] == 1 && report.rows["client_reports"] == 1)
        #expect(try await copy.latestRollout(account: "staged", environment: "production")?.1 == ServedCounts(candidate: 2, stable: 9))
        // The copy is a store like any other: the next write follows the copied history.
        let latest = try #require(try await copy.latest(account: "base"))
        #expect(try await copy.append(write("base", "{ }", .ifMatch([latest.etag]))).version == 2)
    }

    @Test func sqliteBackupCopiesEveryVersion() async throws {
        let source = try Self.fresh(.sqlite)
        try await Self.seedEveryTable(try Self.open(source.url))
        let targetPath = temporaryPath("backup") + "/copy.sqlite"
        let report = try #require(source.endpoint as? SQLiteCopyEndpoint).backup(to: targetPath)
        #expect(
            report.rows == [
                "layout_versions": 8, "strings_versions": 1, "tokens": 1, "token_secrets": 2, "audit_log": 2, "webhooks": 1,
                "webhook_deliveries": 1, "layout_pointers": 5, "rollouts": 1, "rollout_served": 1, "strings_pointers": 1, "builds": 1,
                "change_requests": 1, "layout_served_versions": 8, "layout_revocations": 1, "client_reports": 1,
            ])
        #expect(report.tagCount == 9)
        let copy = try SQLiteStore(path: targetPath)
        #expect(try await copy.versions(account: "jack") == Self.open(source.url).versions(account: "jack"))
        #expect(copy.integrityCheck())
    }

    /// The online backup copies the whole file: what this build does not create (a trigger that un-revokes tokens,
    /// a view, a stray table) is dropped from the copy and named in the summary, and the copy's schema is checked.
    @Test func sqliteBackupLeavesOutWhatTheSchemaDoesNotHave() async throws {
        let source = try Self.fresh(.sqlite)
        try await Self.seedEveryTable(try Self.open(source.url))
        let sourcePath = String(source.url.dropFirst(7))
        _ = try sqlite3(
            sourcePath,
            "CREATE TRIGGER unrevoke AFTER UPDATE ON tokens BEGIN UPDATE tokens SET revoked_at_ms = NULL; END; "
                + "CREATE VIEW every_token AS SELECT * FROM tokens; CREATE TABLE stray (x); INSERT INTO stray VALUES (1);")
        let targetPath = temporaryPath("backup-schema") + "/copy.sqlite"
        let report = try #require(source.endpoint as? SQLiteCopyEndpoint).backup(to: targetPath)
        #expect(report.dropped == ["trigger unrevoke", "view every_token", "table stray"])
        #expect(report.summary.contains("left out (not this build's schema): trigger unrevoke, view every_token, table stray"))
        #expect(report.rows["stray"] == nil && report.rows["tokens"] == 1)
        let left = try sqlite3(
            targetPath, "SELECT type || ' ' || name FROM sqlite_master WHERE name IN ('unrevoke', 'every_token', 'stray')")
        #expect(left.isEmpty, "\(left)")
    }

    /// Lists the tables from the catalog with the sqlite3 shell (not through the code under test) and compares
    /// every row of every table, as `.dump` writes it, after SQLite → PostgreSQL → SQLite (or SQLite → SQLite).
    @Test func everyTableOfTheStoreIsCopied() async throws {
        let source = try Self.fresh(.sqlite)
        try await Self.seedEveryTable(try Self.open(source.url))
        let sourcePath = String(source.url.dropFirst(7))
        let final = try Self.fresh(.sqlite)
        if PostgresTestDatabase.serverURL != nil {
            let middle = try Self.fresh(.postgres)
            _ = try StoreCopy.copy(from: source.endpoint, to: middle.endpoint)
            _ = try StoreCopy.copy(from: middle.endpoint, to: final.endpoint)
        } else {
            _ = try StoreCopy.copy(from: source.endpoint, to: final.endpoint)
        }
        let finalPath = String(final.url.dropFirst(7))
        let tables = try sqlite3(sourcePath, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        #expect(tables.contains("layout_versions") && tables.contains("strings_versions"))
        for table in tables where table != StoreCopy.migrationsTable {
            let rows = try sqlite3(sourcePath, ".dump \(table)").filter { $0.hasPrefix("INSERT") }
            #expect(!rows.isEmpty, "\(table) has no row: seed it in seedEveryTable so that its copy is checked")
            #expect(try sqlite3(finalPath, ".dump \(table)").filter { $0.hasPrefix("INSERT") }.sorted() == rows.sorted(), "\(table)")
        }
    }

    /// A table the copy has never heard of (as the next release's audit log will be), with an identity column, a
    /// boolean, a real and bytes: copied by the catalog, and the target's sequence moved past the copied ids.
    @Test(.enabled(if: PostgresTestDatabase.serverURL != nil))
    func aTableAddedLaterIsCopiedWithItsTypesAndItsSequenceAdvanced() async throws {
        let source = try Self.fresh(.sqlite)
        let path = String(source.url.dropFirst(7))
        _ = try sqlite3(
            path,
            """
            CREATE TABLE later_log (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT, at_ms INTEGER, flag INTEGER, score REAL, data BLOB);
            INSERT INTO later_log (what, at_ms, flag, score, data) VALUES ('first', 1700000000000, 1, 0.25, x'00ff'), (NULL, 2, 0, -1.5, NULL);
            INSERT INTO later_log (id, what, at_ms, flag, score, data) VALUES (41, 'é', 3, 0, 1e300, x'');
            """)
        try await Self.seedEveryTable(try Self.open(source.url))
        let target = try Self.fresh(.postgres)
        try psql(
            target.url,
            """
            CREATE TABLE later_log (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, what TEXT, at_ms BIGINT, flag BOOLEAN,
                                    score DOUBLE PRECISION, data BYTEA)
            """)
        let report = try StoreCopy.copy(from: source.endpoint, to: target.endpoint)
        #expect(report.rows["later_log"] == 3)
        try psql(target.url, "INSERT INTO later_log (what) VALUES ('next')")
        #expect(
            try psql(target.url, "SELECT id, what, flag, score, encode(data, 'hex') FROM later_log ORDER BY id") == [
                "1|first|t|0.25|00ff", "2||f|-1.5|", "41|é|f|1e+300|", "42|next|||",
            ])
    }

    @Test(arguments: directions)
    func aTargetWithRowsIsRefusedAndKeptAsItWas(from: Kind, to: Kind) async throws {
        let source = try Self.fresh(from)
        try await Self.seedEveryTable(try Self.open(source.url))
        let target = try Self.fresh(to)
        let held = try await Self.open(target.url).append(write("mine", "{}", .none))
        #expect(throws: StoreError.targetNotEmpty(table: "layout_pointers", rows: 1)) {
            try StoreCopy.copy(from: source.endpoint, to: target.endpoint)
        }
        #expect(try await Self.open(target.url).versions(account: "mine") == [held])
        #expect(try await Self.open(target.url).versions(account: "jack").isEmpty)
    }

    @Test func progressIsToldWithCountsAndRate() async throws {
        let source = try Self.fresh(.sqlite)
        try await Self.seedEveryTable(try Self.open(source.url))
        var lines: [StoreCopyProgress] = []
        _ = try StoreCopy.copy(from: source.endpoint, to: try Self.fresh(.sqlite).endpoint, batchSize: 1, progressInterval: 0) {
            lines.append($0)
        }
        let copying = lines.filter { $0.phase == "copying" }
        #expect(copying.count == 36)
        #expect(copying.last?.rows == 36 && copying.last?.total == 36 && copying.last?.table == "webhooks")
        #expect(copying.first?.line.hasPrefix("copying audit_log: 1/2 rows; 1/36 in all, ") == true)
        let checking = lines.filter { $0.phase == "checking" }
        #expect(
            checking.map(\.table) == [
                "audit_log", "builds", "change_requests", "client_reports", "layout_pointers", "layout_revocations",
                "layout_served_versions",
                "layout_versions", "rollout_served",
                "rollouts", "strings_pointers",
                "strings_versions",
                "token_secrets",
                "tokens", "webhook_deliveries", "webhooks",
            ] && checking.last?.rows == 36)
    }

    @Test func aCheckThatFindsADifferenceSaysWhere() async throws {
        let source = try Self.fresh(.sqlite)
        try await Self.seedEveryTable(try Self.open(source.url))
        var expected = try StoreCopy.summarize(source.endpoint)
        expected.tags["layout_versions"]?.insert("\"v9-missing\"")
        #expect(throws: StoreError.copyMismatch("layout_versions: tags differ (missing in the target: \"v9-missing\")")) {
            try StoreCopy.verify(source.endpoint, against: expected)
        }
    }
}

/// The lines the sqlite3 shell prints for `command` on the database at `path`.
func sqlite3(_ path: String, _ command: String) throws -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    // A store just closed may still hold its lock a moment (its own thread ends it): wait for it, as the store does.
    process.arguments = ["-cmd", ".timeout 10000", path, command]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "sqlite3 \(command)")
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
}

/// The rows psql prints for `sql` on the database at `url` (unaligned, `|` between columns).
@discardableResult
func psql(_ url: String, _ sql: String) throws -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
    process.arguments = [url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "psql \(sql)")
    return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter {
        !$0.isEmpty
    }
}
