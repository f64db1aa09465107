import TabStore

/// A PostgreSQL store as one side of a copy, on a connection of its own: read in one `REPEATABLE READ` snapshot
/// through a cursor (rows arrive a batch at a time), or written in one transaction under the writers' lock.
public final class PostgresCopyEndpoint: StoreCopyEndpoint {
    public let name: String
    private let connection: PGConnection

    /// Connects to the store at `url` (migrated to this build's schema first); `name` is what messages call it
    /// (the URL without its password).
    /// - Throws: ``StoreError/unavailable(_:)`` when the server cannot be reached or migrated.
    public init(url: String, name: String) throws(StoreError) {
        self.name = name
        let store = try PostgresStore(url: url)  // applies pending migrations
        store.stopWatching()
        connection = try PGConnection(url: url)
        // A copy's statements are batches, but the whole copy may take minutes: no per-statement deadline.
        _ = try connection.execute("SET statement_timeout = 0")
    }

    public func withSnapshot<R>(_ body: (any StoreTableAccess) throws(StoreError) -> R) throws(StoreError) -> R {
        _ = try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return try finish { () throws(StoreError) -> R in try body(PGTableAccess(db: connection)) }
    }

    public func withWriteTransaction<R>(_ body: (any StoreTableWriter) throws(StoreError) -> R) throws(StoreError) -> R {
        _ = try connection.execute("BEGIN")
        return try finish { () throws(StoreError) -> R in
            _ = try connection.execute("SELECT pg_advisory_xact_lock(7262002)")  // the writers' lock (PostgresStore)
            let access = PGTableAccess(db: connection)
            let result = try body(access)
            try access.advanceSequences()
            return result
        }
    }

    /// Commits when `body` returns, rolls back when it throws.
    private func finish<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        do {
            let result = try body()
            _ = try connection.execute("COMMIT")
            return result
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }
}

/// The tables of the connection's schema, inside whichever transaction it has open.
private struct PGTableAccess: StoreTableWriter {
    let db: PGConnection

    /// Generated columns are left out, as SQLite's `table_info` leaves them out: the database computes them in the
    /// target (it refuses a value for one).
    func tables() throws(StoreError) -> [StoreTable] {
        let rows = try db.execute(
            """
            SELECT c.table_name, c.column_name FROM information_schema.columns AS c
            JOIN information_schema.tables AS t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.is_generated = 'NEVER'
            ORDER BY c.table_name, c.ordinal_position
            """)
        var tables: [StoreTable] = []
        for row in rows {
            guard let table = row[0].text, let column = row[1].text else { continue }
            if tables.last?.name == table {
                tables[tables.count - 1].columns.append(column)
            } else {
                tables.append(StoreTable(name: table, columns: [column]))
            }
        }
        return tables
    }

    func count(_ table: String) throws(StoreError) -> Int {
        Int(try db.execute("SELECT count(*) FROM \(StoreTable.quoted(table))").first?[0].text ?? "0") ?? 0
    }

    /// The declared type of each column of `table` (`bytea`, `boolean`, `bigint`, …).
    private func types(_ table: String) throws(StoreError) -> [String: String] {
        let rows = try db.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
            [.text(table)])
        return Dictionary(rows.compactMap { row in row[0].text.flatMap { name in row[1].text.map { (name, $0) } } }) { a, _ in a }
    }

    func scan(_ table: StoreTable, batchSize: Int, _ body: ([[StoreCell]]) throws(StoreError) -> Void) throws(StoreError) {
        let declared = try types(table.name)
        let kinds = table.columns.map { declared[$0] ?? "text" }
        _ = try db.execute(
            "DECLARE tabserver_copy NO SCROLL CURSOR FOR SELECT \(table.columns.map(StoreTable.quoted).joined(separator: ", ")) FROM \(StoreTable.quoted(table.name))"
        )
        while true {
            let rows = try db.execute("FETCH \(batchSize) FROM tabserver_copy")
            if rows.isEmpty { break }
            try body(rows.map { row in zip(row, kinds).map { Self.cell($0, type: $1) } })
        }
        _ = try db.execute("CLOSE tabserver_copy")
    }

    /// A text-format result value as a cell of its column's type.
    static func cell(_ value: PGValue, type: String) -> StoreCell {
        guard let text = value.text else { return .null }
        switch type {
        case "bytea": return .bytes(value.bytea)
        case "boolean": return .integer(text == "t" ? 1 : 0)
        case "smallint", "integer", "bigint": return Int64(text).map(StoreCell.integer) ?? .text(text)
        case "real", "double precision": return Double(text).map(StoreCell.real) ?? .text(text)
        default: return .text(text)
        }
    }

    func insert(_ table: String, columns: [String], rows: [[StoreCell]]) throws(StoreError) {
        guard !rows.isEmpty else { return }
        var parameters: [PGValue] = []
        parameters.reserveCapacity(rows.count * columns.count)
        var tuples: [String] = []
        for row in rows {
            let first = parameters.count
            parameters += row.map(PGValue.init)
            tuples.append("(" + (first..<parameters.count).map { "$\($0 + 1)" }.joined(separator: ", ") + ")")
        }
        _ = try db.execute(
            "INSERT INTO \(StoreTable.quoted(table)) (\(columns.map(StoreTable.quoted).joined(separator: ", "))) OVERRIDING SYSTEM VALUE VALUES "
                + tuples.joined(separator: ", "), parameters)
    }

    /// Moves every serial or identity column's sequence past the highest value copied, so that the next insert
    /// of the server does not collide with a copied row.
    func advanceSequences() throws(StoreError) {
        let columns = try db.execute(
            """
            SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()
            AND (column_default LIKE 'nextval(%' OR is_identity = 'YES')
            """)
        for row in columns {
            guard let table = row[0].text, let column = row[1].text else { continue }
            _ = try db.execute(
                "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(MAX(\(StoreTable.quoted(column))), 0) + 1, false) FROM \(StoreTable.quoted(table))",
                [.text(StoreTable.quoted(table)), .text(column)])
        }
    }
}

extension PGValue {
    init(_ cell: StoreCell) {
        switch cell {
        case .null: self = .null
        case .integer(let n): self = .text(String(n))
        case .real(let x): self = .text(String(x))
        case .text(let s): self = .text(s)
        case .bytes(let b): self = .bytes(b)
        }
    }
}
