internal import CSQLite
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The embedded store: one SQLite file in WAL mode with `synchronous=FULL`, so a write that returned is
/// on disk (it survives `kill -9` and power loss). Writes run in `BEGIN IMMEDIATE` transactions, so of
/// writers racing on one tag (in this process or another) exactly one succeeds.
public final class SQLiteStore: TabStore {
    private let connection: Mutex<SQLiteConnection>
    public let path: String

    /// The schema, one migration per step; applied in order, each recorded in `schema_migrations`.
    static let migrations: [String] = [
        """
        CREATE TABLE layout_versions (
            account TEXT NOT NULL,
            version INTEGER NOT NULL,
            source BLOB NOT NULL,
            content_type TEXT NOT NULL,
            etag TEXT NOT NULL,
            created_at_ms INTEGER NOT NULL,
            author TEXT,
            message TEXT,
            restored_from INTEGER,
            deleted INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (account, version)
        ) WITHOUT ROWID;
        CREATE TABLE strings_versions (
            locale TEXT NOT NULL,
            version INTEGER NOT NULL,
            source BLOB NOT NULL,
            content_type TEXT NOT NULL,
            etag TEXT NOT NULL,
            created_at_ms INTEGER NOT NULL,
            author TEXT,
            PRIMARY KEY (locale, version)
        ) WITHOUT ROWID;
        """
    ]

    /// Opens (creating when missing) the database at `path` and applies pending migrations.
    /// - Throws: ``StoreError/unavailable(_:)`` when the file cannot be opened or migrated.
    public init(path: String) throws(StoreError) {
        self.path = path
        if let slash = path.lastIndex(of: "/") {
            let directory = String(path[..<slash])
            if !directory.isEmpty { mkdir(directory, 0o755) }
        }
        let connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        try connection.execute("PRAGMA foreign_keys=ON")
        try connection.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms INTEGER NOT NULL)")
        try connection.transaction { () throws(StoreError) in
            let applied = try connection.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", []) { $0.int(0) }.first ?? 0
            for (index, sql) in Self.migrations.enumerated() where index + 1 > applied {
                try connection.execute(sql)
                try connection.run(
                    "INSERT INTO schema_migrations (version, applied_at_ms) VALUES (?, ?)", [.int(index + 1), .int64(currentTimeMillis())])
            }
        }
        self.connection = Mutex(connection)
    }

    private static let versionColumns =
        "account, version, source, content_type, etag, created_at_ms, author, message, restored_from, deleted"

    private static func version(_ row: SQLiteRow) -> StoredVersion {
        StoredVersion(
            account: row.text(0) ?? "", version: row.int(1), source: row.blob(2), contentType: row.text(3) ?? "",
            etag: row.text(4) ?? "", createdAtMillis: row.int64(5), author: row.text(6), message: row.text(7),
            restoredFrom: row.isNull(8) ? nil : row.int(8), deleted: row.int(9) != 0)
    }

    private static func strings(_ row: SQLiteRow) -> StoredStrings {
        StoredStrings(
            locale: row.text(0) ?? "", version: row.int(1), source: row.blob(2), contentType: row.text(3) ?? "",
            etag: row.text(4) ?? "", createdAtMillis: row.int64(5), author: row.text(6))
    }

    public func currentLayouts() async throws(StoreError) -> [StoredVersion] {
        try connection.withLock { (db) throws(StoreError) -> [StoredVersion] in
            try db.query(
                """
                SELECT \(Self.versionColumns) FROM layout_versions AS v
                WHERE version = (SELECT MAX(version) FROM layout_versions WHERE account = v.account) AND deleted = 0
                ORDER BY account
                """, [], Self.version)
        }
    }

    public func latest(account: String) async throws(StoreError) -> StoredVersion? {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion? in try Self.latest(db, account) }
    }

    private static func latest(_ db: SQLiteConnection, _ account: String) throws(StoreError) -> StoredVersion? {
        try db.query(
            "SELECT \(versionColumns) FROM layout_versions WHERE account = ? ORDER BY version DESC LIMIT 1",
            [.text(account)], version
        ).first
    }

    public func versions(account: String) async throws(StoreError) -> [StoredVersion] {
        try connection.withLock { (db) throws(StoreError) -> [StoredVersion] in
            try db.query(
                "SELECT \(Self.versionColumns) FROM layout_versions WHERE account = ? ORDER BY version DESC",
                [.text(account)], Self.version)
        }
    }

    public func version(account: String, number: Int) async throws(StoreError) -> StoredVersion? {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion? in
            try db.query(
                "SELECT \(Self.versionColumns) FROM layout_versions WHERE account = ? AND version = ?",
                [.text(account), .int(number)], Self.version
            ).first
        }
    }

    public func append(_ write: LayoutWrite) async throws(StoreError) -> StoredVersion {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion in
            try db.transaction { () throws(StoreError) -> StoredVersion in
                let latest = try Self.latest(db, write.account)
                try write.precondition.check(current: latest.flatMap { $0.deleted ? nil : $0.etag })
                let record = StoredVersion.next(after: latest, for: write)
                try Self.insert(db, record)
                return record
            }
        }
    }

    private static func insert(_ db: SQLiteConnection, _ record: StoredVersion) throws(StoreError) {
        try db.run(
            "INSERT INTO layout_versions (\(versionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(record.account), .int(record.version), .blob(record.source), .text(record.contentType),
                .text(record.etag), .int64(record.createdAtMillis), record.author.map { .text($0) } ?? .null,
                record.message.map { .text($0) } ?? .null, record.restoredFrom.map { .int($0) } ?? .null,
                .int(record.deleted ? 1 : 0),
            ])
    }

    public func delete(account: String, precondition: WritePrecondition, author: String?) async throws(StoreError) -> StoredVersion {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion in
            try db.transaction { () throws(StoreError) -> StoredVersion in
                guard let latest = try Self.latest(db, account), !latest.deleted else { throw .notFound }
                try precondition.check(current: latest.etag)
                let record = StoredVersion.deletion(after: latest, author: author)
                try Self.insert(db, record)
                return record
            }
        }
    }

    public func currentStrings() async throws(StoreError) -> [StoredStrings] {
        try connection.withLock { (db) throws(StoreError) -> [StoredStrings] in
            try db.query(
                """
                SELECT locale, version, source, content_type, etag, created_at_ms, author FROM strings_versions AS s
                WHERE version = (SELECT MAX(version) FROM strings_versions WHERE locale = s.locale) ORDER BY locale
                """, [], Self.strings)
        }
    }

    public func appendStrings(
        locale: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String?
    ) async throws(StoreError) -> StoredStrings {
        try connection.withLock { (db) throws(StoreError) -> StoredStrings in
            try db.transaction { () throws(StoreError) -> StoredStrings in
                let latest = try db.query(
                    "SELECT locale, version, source, content_type, etag, created_at_ms, author FROM strings_versions WHERE locale = ? ORDER BY version DESC LIMIT 1",
                    [.text(locale)], Self.strings
                ).first
                try precondition.check(current: latest?.etag)
                let record = StoredStrings.next(after: latest, locale: locale, source: source, contentType: contentType, author: author)
                try db.run(
                    "INSERT INTO strings_versions (locale, version, source, content_type, etag, created_at_ms, author) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        .text(locale), .int(record.version), .blob(source), .text(contentType), .text(record.etag),
                        .int64(record.createdAtMillis),
                        author.map { .text($0) } ?? .null,
                    ])
                return record
            }
        }
    }

    public func ping() async -> Bool {
        (try? connection.withLock { (db) throws(StoreError) -> Int in try db.query("SELECT 1", []) { $0.int(0) }.first ?? 0 }) == 1
    }

    /// Runs SQLite's `PRAGMA integrity_check`; true when it answers "ok".
    public func integrityCheck() -> Bool {
        (try? connection.withLock { (db) throws(StoreError) -> String? in
            try db.query("PRAGMA integrity_check", []) { $0.text(0) }.first ?? nil
        }) == "ok"
    }
}

/// A value bound to a statement parameter.
enum SQLiteValue {
    case null
    case int(Int)
    case int64(Int64)
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
    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

/// One SQLite connection. Safety (`@unchecked Sendable`): only ever used under the store's `Mutex`.
final class SQLiteConnection: @unchecked Sendable {
    private let db: OpaquePointer

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

    private func failure(_ what: String) -> StoreError {
        .unavailable("\(what): \(String(cString: sqlite3_errmsg(db))) (code \(sqlite3_extended_errcode(db)))")
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
        _ = try query(sql, parameters) { _ in () }
    }

    func query<R>(_ sql: String, _ parameters: [SQLiteValue], _ row: (SQLiteRow) -> R) throws(StoreError) -> [R] {
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
            case SQLITE_ROW: rows.append(row(SQLiteRow(statement: statement)))
            case SQLITE_DONE: return rows
            default: throw failure("step")
            }
        }
    }
}
