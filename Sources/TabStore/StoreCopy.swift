import ContentHash
import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// One value of a row copied between stores, the same whatever the dialect: a PostgreSQL `boolean` reads as
/// `.integer(0 or 1)`, as SQLite stores it.
public enum StoreCell: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bytes([UInt8])
}

/// A table of a store and its columns, in declaration order.
public struct StoreTable: Sendable, Equatable {
    public var name: String
    public var columns: [String]

    public init(name: String, columns: [String]) {
        self.name = name
        self.columns = columns
    }

    /// An identifier in double quotes, as SQLite and PostgreSQL both read it (names come from the catalog, and are
    /// quoted all the same).
    public static func quoted(_ name: String) -> String { "\"" + name.replacing("\"", with: "\"\"") + "\"" }
}

/// A store's tables as plain rows, inside a read snapshot or a write transaction.
public protocol StoreTableAccess {
    /// Every table of the store (`schema_migrations` included), by name.
    func tables() throws(StoreError) -> [StoreTable]
    /// The number of rows of `table`.
    func count(_ table: String) throws(StoreError) -> Int
    /// Calls `body` with the rows of `table` (its `columns`, in that order), `batchSize` rows at a time.
    func scan(_ table: StoreTable, batchSize: Int, _ body: ([[StoreCell]]) throws(StoreError) -> Void) throws(StoreError)
}

/// A store's tables inside one write transaction.
public protocol StoreTableWriter: StoreTableAccess {
    /// Inserts `rows` (values of `columns`, in that order) into `table`.
    func insert(_ table: String, columns: [String], rows: [[StoreCell]]) throws(StoreError)
}

/// One side of a copy: a store read as one consistent snapshot, or written in one transaction.
public protocol StoreCopyEndpoint {
    /// What the copy says about this store (a path, a URL without its password).
    var name: String { get }
    /// Runs `body` inside one read transaction: every read sees the same committed state.
    func withSnapshot<R>(_ body: (any StoreTableAccess) throws(StoreError) -> R) throws(StoreError) -> R
    /// Runs `body` inside one write transaction: committed when it returns, rolled back when it throws (or when
    /// the process dies), so the store holds all of it or none of it.
    func withWriteTransaction<R>(_ body: (any StoreTableWriter) throws(StoreError) -> R) throws(StoreError) -> R
}

/// What a copy read, table by table, and checked in the target.
public struct StoreCopyReport: Sendable, Equatable {
    /// Per copied table: its rows.
    public var rows: [String: Int] = [:]
    /// Per table with an `etag` column: every version's tag.
    public var tags: [String: Set<String>] = [:]
    /// Per table: a digest of every row, independent of row order.
    public var digests: [String: RowDigest] = [:]
    /// Seconds the copy took, the check included.
    public var seconds: Double = 0
    /// Objects of the source that this build does not create (triggers, views…), not carried into the target
    /// (`type name`).
    public var dropped: [String] = []

    public init() {}

    /// The tags of every table, counted.
    public var tagCount: Int { tags.values.reduce(0) { $0 + $1.count } }

    /// One line per table, then the totals: what `migrate` prints.
    public var summary: String {
        let tables = rows.keys.sorted().map { "  \($0): \(rows[$0] ?? 0) rows" + (tags[$0].map { ", \($0.count) tags" } ?? "") }
        let total = rows.values.reduce(0, +)
        let dropped = dropped.isEmpty ? [] : ["left out (not this build's schema): " + dropped.joined(separator: ", ")]
        return
            (tables + dropped + [
                "copied \(rows.count) tables, \(total) rows in \(String(format1: seconds)) s; "
                    + "checked in the target: every table's row count, every version's tag (\(tagCount)) and a digest of every row"
            ]).joined(separator: "\n")
    }
}

/// An order-independent digest of rows: the wrapping sum of each row's SHA-256 (first 16 bytes).
public struct RowDigest: Sendable, Equatable {
    var high: UInt64 = 0
    var low: UInt64 = 0

    mutating func add(_ row: [StoreCell]) {
        var bytes: [UInt8] = []
        for cell in row {
            switch cell {
            case .null: bytes.append(0)
            case .integer(let n): bytes += [1] + Array(String(n).utf8) + [0]
            case .real(let x): bytes += [2] + Array(String(x).utf8) + [0]
            case .text(let s): bytes += [3] + length(s.utf8.count) + Array(s.utf8)
            case .bytes(let b): bytes += [4] + length(b.count) + b
            }
        }
        let hash = SHA256.hash(bytes)
        high &+= hash[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        low &+= hash[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
    }

    private func length(_ count: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(count).bigEndian) { Array($0) } }
}

/// Where a copy stands, for progress lines.
public struct StoreCopyProgress: Sendable {
    /// `copying` (the source into the target) or `checking` (the target read back).
    public var phase: String
    /// The table being copied or checked.
    public var table: String
    /// Rows of that table copied so far, and how many it has.
    public var tableRows: Int
    public var tableTotal: Int
    /// Rows copied so far in every table, how many there are in all, and seconds since the copy began.
    public var rows: Int
    public var total: Int
    public var seconds: Double

    /// `copying layout_versions: 120000/300000 rows; 130000/300005 in all, 41000 rows/s`.
    public var line: String {
        let rate = seconds > 0 ? Int(Double(rows) / seconds) : 0
        return "\(phase) \(table): \(tableRows)/\(tableTotal) rows; \(rows)/\(total) in all, \(rate) rows/s"
    }
}

/// Copies every table of one store into an empty one.
public enum StoreCopy {
    /// The table every store creates itself: compared (the versions must agree), not copied.
    static let migrationsTable = "schema_migrations"

    /// Copies every row of every table of `source` (read as one snapshot) into `target` (written in one
    /// transaction), then reads the target back and compares each table's row count, every version's tag and a
    /// digest of every row with what the snapshot held.
    /// - Parameters:
    ///   - progressInterval: seconds between two calls of `progress`.
    ///   - clock: what the copy's seconds and the progress interval are measured on.
    ///   - progress: called during the copy, at most once per `progressInterval`.
    /// - Throws: ``StoreError/targetNotEmpty(table:rows:)``, ``StoreError/copyMismatch(_:)``, or what the
    ///   stores throw (the target then holds nothing of the copy).
    public static func copy(
        from source: some StoreCopyEndpoint, to target: some StoreCopyEndpoint, batchSize: Int = 500, progressInterval: Double = 3,
        clock: TimeSource = .system, progress: (StoreCopyProgress) -> Void = { _ in }
    ) throws(StoreError) -> StoreCopyReport {
        let start = clock.seconds
        var report = try target.withWriteTransaction { (writer) throws(StoreError) -> StoreCopyReport in
            let targetTables = try refuseNonEmpty(writer)
            return try source.withSnapshot { (reader) throws(StoreError) -> StoreCopyReport in
                let tables = try reader.tables()
                try checkSameSchema(reader, writer)
                let data = tables.filter { $0.name != migrationsTable }
                for table in data {
                    guard let match = targetTables.first(where: { $0.name == table.name }),
                        Set(table.columns).isSubset(of: match.columns)
                    else {
                        throw .copyMismatch("the target has no table \(table.name) with columns \(table.columns.joined(separator: ", "))")
                    }
                }
                var counts: [String: Int] = [:]
                for table in data { counts[table.name] = try reader.count(table.name) }
                var counter = ProgressCounter(
                    phase: "copying", total: counts.values.reduce(0, +), interval: progressInterval, clock: clock)
                var report = StoreCopyReport()
                for table in data {
                    counter.begin(table.name, total: counts[table.name] ?? 0)
                    let perRow = max(1, min(batchSize, 30_000 / max(1, table.columns.count)))
                    var summary = TableSummary(table)
                    try reader.scan(table, batchSize: perRow) { (rows) throws(StoreError) in
                        try writer.insert(table.name, columns: table.columns, rows: rows)
                        summary.add(rows)
                        counter.advance(rows.count, progress)
                    }
                    summary.record(in: &report)
                }
                return report
            }
        }
        try verify(target, against: report, progressInterval: progressInterval, clock: clock, progress: progress)
        report.seconds = clock.seconds - start
        return report
    }

    /// Reads `target` again in a snapshot of its own and throws ``StoreError/copyMismatch(_:)`` at the first
    /// difference from `expected` (row counts, tags, row digests); `progress` is told at most once per
    /// `progressInterval` seconds by `clock`.
    public static func verify(
        _ target: some StoreCopyEndpoint, against expected: StoreCopyReport, progressInterval: Double = 3,
        clock: TimeSource = .system, progress: (StoreCopyProgress) -> Void = { _ in }
    ) throws(StoreError) {
        let found = try target.withSnapshot { (reader) throws(StoreError) -> StoreCopyReport in
            var counter = ProgressCounter(
                phase: "checking", total: expected.rows.values.reduce(0, +), interval: progressInterval, clock: clock)
            return try summarize(reader, tables: Set(expected.rows.keys), counter: &counter, progress)
        }
        for table in expected.rows.keys.sorted() {
            guard found.rows[table] == expected.rows[table] else {
                throw .copyMismatch("\(table): \(expected.rows[table] ?? 0) rows read, \(found.rows[table] ?? 0) in the target")
            }
            if let tags = expected.tags[table], found.tags[table] != tags {
                let missing = tags.subtracting(found.tags[table] ?? []).sorted().prefix(3)
                throw .copyMismatch("\(table): tags differ (missing in the target: \(missing.joined(separator: ", ")))")
            }
            guard found.digests[table] == expected.digests[table] else { throw .copyMismatch("\(table): the rows' contents differ") }
        }
    }

    /// The counts, tags and digests of `tables` (all but `schema_migrations` when nil) in one snapshot of `endpoint`.
    public static func summarize(_ endpoint: some StoreCopyEndpoint, tables names: Set<String>? = nil) throws(StoreError)
        -> StoreCopyReport
    {
        try endpoint.withSnapshot { (reader) throws(StoreError) -> StoreCopyReport in try summarize(reader, tables: names) }
    }

    /// The counts, tags and digests of `tables` (all but `schema_migrations` when nil), read through `reader`.
    static func summarize(_ reader: any StoreTableAccess, tables names: Set<String>? = nil) throws(StoreError) -> StoreCopyReport {
        var silent = ProgressCounter(phase: "checking", total: 0, interval: .infinity, clock: .system)
        return try summarize(reader, tables: names, counter: &silent) { _ in }
    }

    /// ``summarize(_:tables:)``, telling `progress` through `counter`.
    static func summarize(
        _ reader: any StoreTableAccess, tables names: Set<String>?, counter: inout ProgressCounter, _ progress: (StoreCopyProgress) -> Void
    ) throws(StoreError) -> StoreCopyReport {
        var report = StoreCopyReport()
        for table in try reader.tables() where table.name != migrationsTable && (names?.contains(table.name) ?? true) {
            var summary = TableSummary(table)
            if counter.interval.isFinite { counter.begin(table.name, total: try reader.count(table.name)) }
            try reader.scan(table, batchSize: 1000) { (rows) throws(StoreError) in
                summary.add(rows)
                counter.advance(rows.count, progress)
            }
            summary.record(in: &report)
        }
        return report
    }

    /// The target's tables, when none of them holds a row.
    static func refuseNonEmpty(_ writer: any StoreTableWriter) throws(StoreError) -> [StoreTable] {
        let tables = try writer.tables()
        for table in tables where table.name != migrationsTable {
            let rows = try writer.count(table.name)
            if rows > 0 { throw .targetNotEmpty(table: table.name, rows: rows) }
        }
        return tables
    }

    /// Both stores were migrated to the same schema version (each was opened by this build, which migrates it).
    private static func checkSameSchema(_ reader: any StoreTableAccess, _ writer: any StoreTableWriter)
        throws(StoreError)
    {
        func newest(_ access: any StoreTableAccess) throws(StoreError) -> Int64 {
            guard let table = try access.tables().first(where: { $0.name == migrationsTable }) else { return 0 }
            var newest: Int64 = 0
            let versionOnly = StoreTable(name: table.name, columns: ["version"])
            try access.scan(versionOnly, batchSize: 1000) { (rows) throws(StoreError) in
                for case .integer(let n) in rows.map({ $0[0] }) { newest = max(newest, n) }
            }
            return newest
        }
        let (from, to) = (try newest(reader), try newest(writer))
        guard from == to else { throw .copyMismatch("schema versions differ: the source is at \(from), the target at \(to)") }
    }
}

/// What one table held: rows, tags, digest.
private struct TableSummary {
    let name: String
    let tagColumn: Int?
    var rows = 0
    var tags: Set<String> = []
    var digest = RowDigest()

    init(_ table: StoreTable) {
        name = table.name
        tagColumn = table.columns.firstIndex(of: "etag")
    }

    mutating func add(_ batch: [[StoreCell]]) {
        for row in batch {
            rows += 1
            digest.add(row)
            if let tagColumn, case .text(let tag) = row[tagColumn] { tags.insert(tag) }
        }
    }

    func record(in report: inout StoreCopyReport) {
        report.rows[name] = rows
        report.digests[name] = digest
        if tagColumn != nil { report.tags[name] = tags }
    }
}

/// Rows copied (or checked) so far and when progress was last told.
struct ProgressCounter {
    let phase: String
    let total: Int
    /// Seconds between two lines (infinite: none).
    let interval: Double
    /// What the seconds are measured on (its monotonic reading).
    let clock: TimeSource
    let start: Double
    var rows = 0
    var table = ""
    var tableRows = 0
    var tableTotal = 0
    var lastTold: Double

    init(phase: String, total: Int, interval: Double, clock: TimeSource) {
        self.phase = phase
        self.total = total
        self.interval = interval
        self.clock = clock
        start = clock.seconds
        lastTold = start
    }

    mutating func begin(_ name: String, total: Int) {
        table = name
        tableRows = 0
        tableTotal = total
    }

    mutating func advance(_ count: Int, _ progress: (StoreCopyProgress) -> Void) {
        rows += count
        tableRows += count
        let now = clock.seconds
        guard now - lastTold >= interval else { return }
        lastTold = now
        progress(
            StoreCopyProgress(
                phase: phase, table: table, tableRows: tableRows, tableTotal: tableTotal, rows: rows, total: total, seconds: now - start))
    }
}

extension String {
    /// `x` with one decimal.
    init(format1 x: Double) { self = String(Double(Int((x * 10).rounded())) / 10) }
}
