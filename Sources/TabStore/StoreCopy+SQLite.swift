internal import CSQLite
import Foundation
import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// A SQLite store as one side of a copy, on a connection of its own (a server may be using the file meanwhile:
/// WAL lets it write while this connection reads its snapshot).
public final class SQLiteCopyEndpoint: StoreCopyEndpoint {
    public let path: String
    public var name: String { "sqlite:" + path }
    private let connection: SQLiteConnection

    /// Opens the store at `path`, migrated to this build's schema; a missing file is created only when `create`.
    /// - Throws: ``StoreError/unavailable(_:)`` when there is no store at `path` (and not `create`) or it cannot
    ///   be opened.
    public init(path: String, create: Bool) throws(StoreError) {
        guard create || access(path, F_OK) == 0 else { throw .unavailable("there is no store at \(path)") }
        self.path = path
        _ = try SQLiteStore(path: path)  // creates it, or applies pending migrations; closed at once
        connection = try SQLiteConnection(path: path)
    }

    public func withSnapshot<R>(_ body: (any StoreTableAccess) throws(StoreError) -> R) throws(StoreError) -> R {
        try connection.readTransaction { () throws(StoreError) -> R in try body(SQLiteTableAccess(db: connection)) }
    }

    public func withWriteTransaction<R>(_ body: (any StoreTableWriter) throws(StoreError) -> R) throws(StoreError) -> R {
        try connection.transaction { () throws(StoreError) -> R in try body(SQLiteTableAccess(db: connection)) }
    }

    /// Copies this store into the SQLite file at `targetPath` with SQLite's online backup, from one read snapshot
    /// (which also gives the counts, tags and digests the copy is then checked against).
    /// - Parameters:
    ///   - pages: called after each step of the backup with the pages copied and the source's page count.
    ///   - clock: what the backup's seconds and the progress interval are measured on.
    ///   - progress: called at most once per `progressInterval` while the source's snapshot is read (`reading`) and
    ///     the target checked (`checking`).
    /// - Throws: ``StoreError/targetNotEmpty(table:rows:)`` when the target holds rows; ``StoreError/copyMismatch(_:)``
    ///   when the check finds a difference; ``StoreError/unavailable(_:)`` when SQLite fails.
    public func backup(
        to targetPath: String, progressInterval: Double = 3, pages: (_ copied: Int, _ total: Int) -> Void = { _, _ in },
        clock: TimeSource = .system, progress: (StoreCopyProgress) -> Void = { _ in }
    ) throws(StoreError) -> StoreCopyReport {
        let start = clock.seconds
        if access(targetPath, F_OK) == 0 {
            _ = try SQLiteCopyEndpoint(path: targetPath, create: false).withWriteTransaction(StoreCopy.refuseNonEmpty)
        }
        let target = try SQLiteConnection(path: targetPath)
        var report = try connection.readTransaction { () throws(StoreError) -> StoreCopyReport in
            let access = SQLiteTableAccess(db: connection)
            var total = 0
            for table in try access.tables() where table.name != StoreCopy.migrationsTable { total += try access.count(table.name) }
            var counter = ProgressCounter(phase: "reading", total: total, interval: progressInterval, clock: clock)
            let report = try StoreCopy.summarize(access, tables: nil, counter: &counter, progress)
            guard let backup = sqlite3_backup_init(target.db, "main", connection.db, "main") else {
                throw .unavailable("backup to \(targetPath): \(String(cString: sqlite3_errmsg(target.db)))")
            }
            var status = SQLITE_OK
            while status == SQLITE_OK || status == SQLITE_BUSY || status == SQLITE_LOCKED {
                status = sqlite3_backup_step(backup, 1024)
                pages(Int(sqlite3_backup_pagecount(backup) - sqlite3_backup_remaining(backup)), Int(sqlite3_backup_pagecount(backup)))
                if status == SQLITE_BUSY || status == SQLITE_LOCKED { usleep(50_000) }
            }
            let finished = sqlite3_backup_finish(backup)
            guard status == SQLITE_DONE, finished == SQLITE_OK else {
                throw .unavailable(
                    "backup to \(targetPath) failed: \(String(cString: sqlite3_errstr(status == SQLITE_DONE ? finished : status)))")
            }
            return report
        }
        for object in try SQLiteSchema.keepOnlyKnown(in: target) {
            report.dropped.append(object.described)
            if object.type == "table" {
                (report.rows[object.name], report.tags[object.name], report.digests[object.name]) = (nil, nil, nil)
            }
        }
        try StoreCopy.verify(
            try SQLiteCopyEndpoint(path: targetPath, create: false), against: report, progressInterval: progressInterval,
            clock: clock, progress: progress)
        report.seconds = clock.seconds - start
        return report
    }
}

/// A SQLite file's schema objects compared with what this build creates: the online backup copies the whole file,
/// so a trigger, view, index or table that an operator (or an attacker) added to the source would come along
/// (docs/security.md, "fourth review": a trigger that un-revoked tokens survived a migration).
enum SQLiteSchema {
    /// One entry of `sqlite_master` (SQLite's own left out), with a table's columns.
    struct Object: Hashable, Comparable {
        let type: String
        let name: String
        let columns: [String]

        static func < (a: Object, b: Object) -> Bool { (a.type, a.name) < (b.type, b.name) }
        var described: String { "\(type) \(name)" }
    }

    /// The objects of the database on `db`.
    static func objects(_ db: SQLiteConnection) throws(StoreError) -> Set<Object> {
        let rows = try db.query(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name", []
        ) { (row) throws(StoreError) -> (String, String) in (try row.required(0), try row.required(1)) }
        var objects: Set<Object> = []
        for (type, name) in rows {
            let columns =
                type == "table"
                ? try db.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(name)]) {
                    (row) throws(StoreError) -> String in try row.required(0)
                } : []
            objects.insert(Object(type: type, name: name, columns: columns))
        }
        return objects
    }

    /// The objects a new store of this build has (made in a scratch file, removed after).
    static func known() throws(StoreError) -> Set<Object> {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("tabserver-schema-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { unlink(scratch + suffix) } }
        _ = try SQLiteStore(path: scratch)
        return try objects(try SQLiteConnection(path: scratch))
    }

    /// Drops from `db` every object this build does not create (triggers and views first), then checks that what
    /// is left is exactly this build's schema. Returns what was dropped.
    /// - Throws: ``StoreError/copyMismatch(_:)`` when an object of this build is missing or has other columns.
    static func keepOnlyKnown(in db: SQLiteConnection) throws(StoreError) -> [Object] {
        let known = try known()
        let present = try objects(db)
        let knownNames = Set(known.map { [$0.type, $0.name] })
        let order = ["trigger": 0, "view": 1, "index": 2, "table": 3]
        let unknown = present.filter { !knownNames.contains([$0.type, $0.name]) }.sorted {
            (order[$0.type] ?? 4, $0.name) < (order[$1.type] ?? 4, $1.name)
        }
        for object in unknown where ["trigger", "view", "index", "table"].contains(object.type) {
            try db.execute("DROP \(object.type.uppercased()) IF EXISTS \(StoreTable.quoted(object.name))")
        }
        let left = try objects(db)
        guard left == known else {
            let missing = known.subtracting(left).sorted().map(\.described)
            let other = left.subtracting(known).sorted().map(\.described)
            throw .copyMismatch("the copy's schema is not this build's: missing or changed \(missing), unknown \(other)")
        }
        return unknown
    }
}

/// The tables of a SQLite connection, inside whichever transaction it has open.
private struct SQLiteTableAccess: StoreTableWriter {
    let db: SQLiteConnection

    func tables() throws(StoreError) -> [StoreTable] {
        let names = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", []) {
            (row) throws(StoreError) -> String in try row.required(0)
        }
        var tables: [StoreTable] = []
        for name in names {
            let columns = try db.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(name)]) {
                (row) throws(StoreError) -> String in try row.required(0)
            }
            tables.append(StoreTable(name: name, columns: columns))
        }
        return tables
    }

    func count(_ table: String) throws(StoreError) -> Int {
        try db.query("SELECT count(*) FROM \(StoreTable.quoted(table))", []) { $0.int(0) }.first ?? 0
    }

    func scan(_ table: StoreTable, batchSize: Int, _ body: ([[StoreCell]]) throws(StoreError) -> Void) throws(StoreError) {
        var batch: [[StoreCell]] = []
        batch.reserveCapacity(batchSize)
        let columns = table.columns.map(StoreTable.quoted).joined(separator: ", ")
        _ = try db.query("SELECT \(columns) FROM \(StoreTable.quoted(table.name))", []) { (row) throws(StoreError) in
            batch.append((0..<Int32(table.columns.count)).map(row.cell))
            if batch.count >= batchSize {
                try body(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try body(batch) }
    }

    func insert(_ table: String, columns: [String], rows: [[StoreCell]]) throws(StoreError) {
        guard !rows.isEmpty else { return }
        let placeholders = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let sql =
            "INSERT INTO \(StoreTable.quoted(table)) (\(columns.map(StoreTable.quoted).joined(separator: ", "))) VALUES "
            + Array(repeating: placeholders, count: rows.count).joined(separator: ", ")
        try db.run(sql, rows.flatMap { $0.map(SQLiteValue.init) })
    }
}

extension SQLiteValue {
    init(_ cell: StoreCell) {
        switch cell {
        case .null: self = .null
        case .integer(let n): self = .int64(n)
        case .real(let x): self = .real(x)
        case .text(let s): self = .text(s)
        case .bytes(let b): self = .blob(b)
        }
    }
}

extension SQLiteRow {
    /// A column as the type SQLite stored it with.
    func cell(_ column: Int32) -> StoreCell {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: .integer(int64(column))
        case SQLITE_FLOAT: .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT: text(column).map(StoreCell.text) ?? .null
        case SQLITE_BLOB: .bytes(blob(column))
        default: .null
        }
    }
}

extension SQLiteConnection {
    /// Runs `body` in one read transaction (`BEGIN DEFERRED`: its first read fixes the snapshot every later read
    /// sees, while writers go on in the WAL).
    func readTransaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try execute("BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }
}
