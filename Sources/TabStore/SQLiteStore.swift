internal import CSQLite
import Synchronization
import TabAccess
import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// The embedded store: one SQLite file in WAL mode with `synchronous=FULL`, so a write that returned is
/// on disk (it survives `kill -9` and power loss). Writes run in `BEGIN IMMEDIATE` transactions, so of
/// writers racing on one tag (in this process or another) exactly one succeeds.
public final class SQLiteStore: StoreBackend {
    private let connection: Mutex<SQLiteConnection>
    public let path: String
    public let executor = StoreExecutor(label: "tabstore.sqlite")
    public let clock: TimeSource

    /// Opens (creating when missing) the database at `path` and applies pending migrations; records are dated by
    /// `clock`.
    /// - Throws: ``StoreError/unavailable(_:)`` when the file cannot be opened or migrated.
    public init(path: String, clock: TimeSource = .system) throws(StoreError) {
        self.path = path
        self.clock = clock
        if let slash = path.lastIndex(of: "/") {
            let directory = String(path[..<slash])
            if !directory.isEmpty { mkdir(directory, 0o755) }
        }
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        try connection.execute("PRAGMA foreign_keys=ON")
        try connection.execute(StoreSchema.migrationsTable(.sqlite))
        try connection.transaction { () throws(StoreError) in
            let applied = try connection.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", []) { $0.int(0) }.first ?? 0
            for (version, sql) in try StoreSchema.pending(after: applied, .sqlite) {
                try connection.execute(sql)
                try connection.run(
                    "INSERT INTO schema_migrations (version, applied_at_ms) VALUES (?, ?)", [.int(version), .int64(clock.unixMillis)])
            }
        }
        self.connection = Mutex(connection)
    }

    static let versionColumns =
        "account, version, source, content_type, etag, created_at_ms, author, message, restored_from, deleted, extends"
    static let stringsColumns = "locale, version, source, content_type, etag, created_at_ms, author"

    /// A row of `layout_versions`; a NULL where the schema forbids one is an error, never a default.
    static func version(_ row: SQLiteRow) throws(StoreError) -> StoredVersion {
        StoredVersion(
            account: try row.required(0), version: row.int(1), source: row.blob(2), contentType: try row.required(3),
            etag: try row.required(4), createdAtMillis: row.int64(5), author: row.text(6), message: row.text(7),
            restoredFrom: row.isNull(8) ? nil : row.int(8), deleted: row.int(9) != 0, extends: row.text(10))
    }

    static func strings(_ row: SQLiteRow) throws(StoreError) -> StoredStrings {
        StoredStrings(
            locale: try row.required(0), version: row.int(1), source: row.blob(2), contentType: try row.required(3),
            etag: try row.required(4), createdAtMillis: row.int64(5), author: row.text(6))
    }

    public func readCurrentLayouts(environment: String) throws(StoreError) -> [StoredVersion] {
        try connection.withLock { (db) throws(StoreError) -> [StoredVersion] in
            try db.query(
                """
                SELECT \(Self.versionColumns.split(separator: ", ").map { "v." + $0 }.joined(separator: ", "))
                FROM layout_pointers AS p JOIN layout_versions AS v ON v.account = p.account AND v.version = p.version
                WHERE p.environment = ? AND v.deleted = 0 ORDER BY v.account
                """, [.text(environment)], Self.version)
        }
    }

    public func readLatest(account: String) throws(StoreError) -> StoredVersion? {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion? in try SQLiteRows(db: db, clock: clock).latest(account: account)
        }
    }

    public func readVersions(account: String) throws(StoreError) -> [StoredVersion] {
        try connection.withLock { (db) throws(StoreError) -> [StoredVersion] in
            try db.query(
                "SELECT \(Self.versionColumns) FROM layout_versions WHERE account = ? ORDER BY version DESC", [.text(account)], Self.version
            )
        }
    }

    public func readVersion(account: String, number: Int) throws(StoreError) -> StoredVersion? {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion? in
            try SQLiteRows(db: db, clock: clock).version(account: account, number: number)
        }
    }

    public func readCurrentStrings(environment: String) throws(StoreError) -> [StoredStrings] {
        try connection.withLock { (db) throws(StoreError) -> [StoredStrings] in
            try db.query(
                """
                SELECT \(Self.stringsColumns.split(separator: ", ").map { "s." + $0 }.joined(separator: ", "))
                FROM strings_pointers AS p JOIN strings_versions AS s ON s.locale = p.locale AND s.version = p.version
                WHERE p.environment = ? ORDER BY s.locale
                """, [.text(environment)], Self.strings)
        }
    }

    public func writeTransaction<R: Sendable>(_ body: (any StoreRows) throws(StoreError) -> R) throws(StoreError) -> R {
        try connection.withLock { (db) throws(StoreError) -> R in
            try db.transaction { () throws(StoreError) -> R in try body(SQLiteRows(db: db, clock: clock)) }
        }
    }

    public func readTokens() throws(StoreError) -> [StoredToken] {
        try connection.withLock { (db) throws(StoreError) -> [StoredToken] in try SQLiteRows(db: db, clock: clock).tokens() }
    }

    public func readAudit(afterID: Int64, limit: Int, account: String?, actor: String?) throws(StoreError) -> [AuditEntry] {
        try connection.withLock { (db) throws(StoreError) -> [AuditEntry] in
            try AuditRows.decode(
                try db.query(
                    AuditRows.select, SQLiteRows.bind(AuditRows.selectCells(afterID: afterID, limit: limit, account: account, actor: actor))
                ) { (row) throws(StoreError) -> [String?] in (0..<15).map { row.text($0) } })
        }
    }

    public func readPing() -> Bool {
        (try? connection.withLock { (db) throws(StoreError) -> Int in try db.query("SELECT 1", []) { $0.int(0) }.first ?? 0 }) == 1
    }

    /// Runs SQLite's `PRAGMA integrity_check`; true when it answers "ok".
    public func integrityCheck() -> Bool {
        (try? connection.withLock { (db) throws(StoreError) -> String? in
            try db.query("PRAGMA integrity_check", []) { $0.text(0) }.first ?? nil
        }) == "ok"
    }
}

/// A write transaction on the SQLite connection (inside `BEGIN IMMEDIATE`: writers are serialized).
struct SQLiteRows: StoreRows {
    let db: SQLiteConnection
    let clock: TimeSource

    func latest(account: String) throws(StoreError) -> StoredVersion? {
        try db.query(
            "SELECT \(SQLiteStore.versionColumns) FROM layout_versions WHERE account = ? ORDER BY version DESC LIMIT 1", [.text(account)],
            SQLiteStore.version
        ).first
    }

    func latestStrings(locale: String) throws(StoreError) -> StoredStrings? {
        try db.query(
            "SELECT \(SQLiteStore.stringsColumns) FROM strings_versions WHERE locale = ? ORDER BY version DESC LIMIT 1", [.text(locale)],
            SQLiteStore.strings
        ).first
    }

    func version(account: String, number: Int) throws(StoreError) -> StoredVersion? {
        try db.query(
            "SELECT \(SQLiteStore.versionColumns) FROM layout_versions WHERE account = ? AND version = ?", [.text(account), .int(number)],
            SQLiteStore.version
        ).first
    }

    func deletedVersions(account: String) throws(StoreError) -> [Int] {
        try db.query("SELECT version FROM layout_versions WHERE account = ? AND deleted = 1", [.text(account)]) { $0.int(0) }
    }

    func insert(_ record: StoredVersion) throws(StoreError) {
        try db.run(
            "INSERT INTO layout_versions (\(SQLiteStore.versionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(record.account), .int(record.version), .blob(record.source), .text(record.contentType),
                .text(record.etag), .int64(record.createdAtMillis), record.author.map { .text($0) } ?? .null,
                record.message.map { .text($0) } ?? .null, record.restoredFrom.map { .int($0) } ?? .null,
                .int(record.deleted ? 1 : 0), record.extends.map { .text($0) } ?? .null,
            ])
    }

    func insert(_ record: StoredStrings) throws(StoreError) {
        try db.run(
            "INSERT INTO strings_versions (\(SQLiteStore.stringsColumns)) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .text(record.locale), .int(record.version), .blob(record.source), .text(record.contentType), .text(record.etag),
                .int64(record.createdAtMillis), record.author.map { .text($0) } ?? .null,
            ])
    }

    func tokens() throws(StoreError) -> [StoredToken] {
        let cells = { (count: Int32) in
            { (row: SQLiteRow) throws(StoreError) -> [String?] in (0..<count).map { row.text($0) } }
        }
        return try TokenRows.decode(
            tokens: try db.query(TokenRows.selectTokens, [], cells(10)), secrets: try db.query(TokenRows.selectSecrets, [], cells(4)))
    }

    /// Nothing to announce: only this process writes a SQLite store.
    func save(_ token: StoredToken, announce: Bool) throws(StoreError) {
        try db.run(TokenRows.upsertToken, Self.bind(TokenRows.tokenCells(token)))
        try db.run(TokenRows.deleteSecrets, [.text(token.id)])
        for secret in TokenRows.secretCells(token) { try db.run(TokenRows.insertSecret, Self.bind(secret)) }
    }

    func insertAudit(_ entry: AuditEntry) throws(StoreError) { try db.run(AuditRows.insert, Self.bind(AuditRows.cells(entry))) }

    func pruneAudit(beforeMillis millis: Int64, keepingNewest rows: Int64, limit: Int) throws(StoreError) -> Int {
        try db.run(AuditRows.prune, [.int64(millis), .int64(rows), .int(limit)])
        return try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0
    }

    func builds() throws(StoreError) -> [StoredBuild] {
        try BuildSQL.decode(try db.query(BuildSQL.select, []) { (row) throws(StoreError) -> [String?] in (0..<6).map { row.text($0) } })
    }

    func revocations(account: String?) throws(StoreError) -> [StoredRevocation] {
        let (sql, parameters) = account.map { (RevocationSQL.selectAccount, [SQLiteValue.text($0)]) } ?? (RevocationSQL.selectAll, [])
        return try RevocationSQL.decode(
            try db.query(sql, parameters) { (row) throws(StoreError) -> [String?] in (0..<7).map { row.text($0) } })
    }

    func save(revocation: StoredRevocation) throws(StoreError) {
        try db.run(RevocationSQL.upsert, Self.bind(RevocationSQL.cells(revocation)))
    }

    func save(build: StoredBuild) throws(StoreError) -> Bool {
        let existed = !(try db.query(BuildSQL.exists, [.text(build.platform), .text(build.appVersion)]) { $0.int(0) }).isEmpty
        try db.run(BuildSQL.upsert, Self.bind(BuildSQL.cells(build)))
        return existed
    }

    func deleteBuild(platform: String, appVersion: String) throws(StoreError) -> Bool {
        try db.run(BuildSQL.delete, [.text(platform), .text(appVersion)])
        return (try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0) > 0
    }

    func markSeen(platform: String, appVersion: String, atMillis: Int64) throws(StoreError) {
        try db.run(BuildSQL.markSeen, [.int64(atMillis), .text(platform), .text(appVersion)])
    }

    func changeRequests() throws(StoreError) -> [StoredChangeRequest] {
        try ChangeRequestSQL.decode(
            try db.query(ChangeRequestSQL.select, []) { (row) throws(StoreError) -> [String?] in (0..<4).map { row.text($0) } })
    }

    func insert(changeRequest: StoredChangeRequest) throws(StoreError) {
        try db.run(
            ChangeRequestSQL.insert,
            [
                .text(changeRequest.id), .text(changeRequest.state), .text(String(decoding: changeRequest.record, as: UTF8.self)),
                .int64(changeRequest.createdAtMillis),
            ])
    }

    func update(changeRequest: StoredChangeRequest, expecting: String) throws(StoreError) -> Bool {
        try db.run(
            ChangeRequestSQL.update,
            [
                .text(changeRequest.state), .text(String(decoding: changeRequest.record, as: UTF8.self)),
                changeRequest.finishedAtMillis.map(SQLiteValue.int64) ?? .null,
                .text(changeRequest.id), .text(expecting),
            ])
        return (try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0) > 0
    }

    func dueChangeRequests(atMillis: Int64, limit: Int) throws(StoreError) -> [StoredChangeRequest] {
        try ChangeRequestSQL.decode(
            try db.query(ChangeRequestSQL.selectDue, [.int64(atMillis), .int(limit)]) { (row) throws(StoreError) -> [String?] in
                (0..<4).map { row.text($0) }
            })
    }

    func nextChangeRequestApplyAt(after atMillis: Int64) throws(StoreError) -> Int64? {
        try db.query(ChangeRequestSQL.nextApplyAt, [.int64(atMillis)]) { (row) throws(StoreError) -> Int64? in
            row.isNull(0) ? nil : row.int64(0)
        }.first ?? nil
    }

    func changeRequestCounts() throws(StoreError) -> [String: Int] {
        let rows = try db.query(ChangeRequestSQL.counts, []) { (row) throws(StoreError) -> (String, Int) in
            (row.text(0) ?? "", row.int(1))
        }
        return Dictionary(rows, uniquingKeysWith: +)
    }

    func pruneChangeRequests(finishedBefore beforeMillis: Int64, limit: Int) throws(StoreError) -> Int {
        try db.run(ChangeRequestSQL.prune, [.int64(beforeMillis), .int(limit)])
        return try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0
    }

    func changeRequest(id: String) throws(StoreError) -> StoredChangeRequest? {
        try ChangeRequestSQL.decode(
            try db.query(ChangeRequestSQL.selectOne, [.text(id)]) { (row) throws(StoreError) -> [String?] in (0..<4).map { row.text($0) } }
        ).first
    }

    func update(changeRequest: StoredChangeRequest, replacing record: [UInt8]) throws(StoreError) -> Bool {
        try db.run(
            ChangeRequestSQL.replace,
            [
                .text(changeRequest.state), .text(String(decoding: changeRequest.record, as: UTF8.self)),
                changeRequest.finishedAtMillis.map(SQLiteValue.int64) ?? .null,
                .text(changeRequest.id), .text(String(decoding: record, as: UTF8.self)),
            ])
        return (try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0) > 0
    }

    func claim(changeRequest id: String, state: String, by claimer: String) throws(StoreError) -> Bool {
        try db.run(ChangeRequestSQL.claim, [.text(claimer), .text(id), .text(state)])
        return (try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0) > 0
    }

    /// Text cells as SQLite values (NULL for nil).
    static func bind(_ cells: [String?]) -> [SQLiteValue] { cells.map { $0.map { SQLiteValue.text($0) } ?? .null } }
}

/// A value bound to a statement parameter.
enum SQLiteValue {
    case null
    case int(Int)
    case int64(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A result row, valid during the row callback.
struct SQLiteRow {
    let statement: OpaquePointer

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    func text(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(statement, column) else { return nil }
        return String(cString: text)
    }
    /// A text column the schema declares NOT NULL: a NULL there is a decoding error, not "".
    func required(_ column: Int32) throws(StoreError) -> String {
        guard let text = text(column) else { throw .unavailable("row decoding: column \(column) is NULL") }
        return text
    }
    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

/// One SQLite connection. Safety (`@unchecked Sendable`): only ever used under the store's `Mutex`.
final class SQLiteConnection: @unchecked Sendable {
    /// The handle; used directly only by the backup (``SQLiteCopyEndpoint``).
    let db: OpaquePointer

    init(path: String) throws(StoreError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw .unavailable("cannot open \(path): \(message)")
        }
        db = handle
        sqlite3_busy_timeout(db, 10_000)
    }

    deinit { sqlite3_close(db) }

    /// The error of the call that just failed: ``StoreError/diskFull(_:)`` when the disk is full (`SQLITE_FULL`,
    /// which SQLite also answers when a write to the database, its journal or its WAL meets `ENOSPC`, or any
    /// I/O error whose system error is `ENOSPC`), else ``StoreError/unavailable(_:)``.
    private func failure(_ what: String) -> StoreError {
        let code = sqlite3_extended_errcode(db)
        let detail = "\(what): \(String(cString: sqlite3_errmsg(db))) (code \(code))"
        let diskFull = code & 0xff == SQLITE_FULL || (code & 0xff == SQLITE_IOERR && sqlite3_system_errno(db) == ENOSPC)
        return diskFull ? .diskFull(detail) : .unavailable(detail)
    }

    func execute(_ sql: String) throws(StoreError) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw failure("exec") }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back when it throws.
    func transaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            _ = sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    func run(_ sql: String, _ parameters: [SQLiteValue]) throws(StoreError) {
        _ = try query(sql, parameters) { (_) throws(StoreError) in () }
    }

    func query<R>(_ sql: String, _ parameters: [SQLiteValue], _ row: (SQLiteRow) throws(StoreError) -> R) throws(StoreError) -> [R] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw failure("prepare") }
        defer { sqlite3_finalize(statement) }
        for (offset, parameter) in parameters.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch parameter {
            case .null: status = sqlite3_bind_null(statement, index)
            case .int(let n): status = sqlite3_bind_int64(statement, index, Int64(n))
            case .int64(let n): status = sqlite3_bind_int64(statement, index, n)
            case .real(let x): status = sqlite3_bind_double(statement, index, x)
            case .text(let s): status = csqlite_bind_text_copy(statement, index, s, -1)
            case .blob(let bytes):
                status =
                    bytes.isEmpty
                    ? sqlite3_bind_zeroblob(statement, index, 0)
                    : bytes.withUnsafeBytes { csqlite_bind_blob_copy(statement, index, $0.baseAddress, Int32($0.count)) }
            }
            guard status == SQLITE_OK else { throw failure("bind") }
        }
        var rows: [R] = []
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: rows.append(try row(SQLiteRow(statement: statement)))
            case SQLITE_DONE: return rows
            case SQLITE_CONSTRAINT: throw .conflict
            default: throw failure("step")
            }
        }
    }
}
