internal import CLibPQ
import Foundation
import Synchronization
import TabAccess
import TabStore
import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// The store for several replicas: PostgreSQL through libpq. Preconditions hold across processes (a unique
/// key on (account, version) lets exactly one of any number of racing writers insert the next version), and
/// every commit is announced with NOTIFY so that other replicas reload what changed (``watch(_:)``).
public final class PostgresStore: StoreBackend {
    /// The channel commits are announced on; each payload is an ``Announcement``.
    static let channel = "tabserver_changes"

    private let url: String
    private let connection: Mutex<PGConnection>
    private let watching = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    public let executor = StoreExecutor(label: "tabstore.postgres")
    public let clock: TimeSource
    /// This store's name in its notifications, so that its own listener skips what it wrote itself (the
    /// publisher has it already) rather than read and parse it again.
    let origin = String(UInt64.random(in: 1...UInt64.max), radix: 36)

    /// Connects and applies pending migrations (under an advisory lock, so replicas starting together agree); records
    /// and announcements are dated by `clock`.
    /// - Throws: ``StoreError/unavailable(_:)`` when the server cannot be reached or migrated.
    public init(url: String, clock: TimeSource = .system) throws(StoreError) {
        self.url = url
        self.clock = clock
        let connection = try PGConnection(url: url)
        _ = try connection.execute("SELECT pg_advisory_lock(7262001)")
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(7262001)") }
        _ = try connection.execute(StoreSchema.migrationsTable(.postgres))
        let applied = Int(try connection.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").first?[0].text ?? "0") ?? 0
        for (version, sql) in try StoreSchema.pending(after: applied, .postgres) {
            try connection.transaction { () throws(StoreError) in
                _ = try connection.execute(sql)
                _ = try connection.execute(
                    "INSERT INTO schema_migrations (version, applied_at_ms) VALUES ($1, $2)",
                    [.text(String(version)), .text(String(clock.unixMillis))])
            }
        }
        self.connection = Mutex(connection)
    }

    deinit { stopped.store(true, ordering: .releasing) }

    /// Creates a database named `name` on the server `serverURL` points at; returns its URL.
    /// - Throws: ``StoreError/unavailable(_:)`` when the server refuses.
    public static func createDatabase(serverURL: String, name: String) throws(StoreError) -> String {
        guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }), let slash = serverURL.lastIndex(of: "/")
        else { throw .unavailable("'\(name)' is not a plain database name, or '\(serverURL)' has no database part") }
        _ = try PGConnection(url: serverURL).execute("CREATE DATABASE \(name)")
        return serverURL[..<slash] + "/" + name
    }

    static let columns = "account, version, source, content_type, etag, created_at_ms, author, message, restored_from, deleted, extends"
    static let stringsColumns = "locale, version, source, content_type, etag, created_at_ms, author"

    /// A row of `layout_versions`; a NULL or unreadable number where the schema forbids one is an error.
    static func version(_ row: [PGValue]) throws(StoreError) -> StoredVersion {
        StoredVersion(
            account: try required(row, 0), version: try number(row, 1), source: row[2].bytea, contentType: try required(row, 3),
            etag: try required(row, 4), createdAtMillis: Int64(try number(row, 5)), author: row[6].text, message: row[7].text,
            restoredFrom: row[8].text.flatMap { Int($0) }, deleted: row[9].text == "t", extends: row[10].text)
    }

    static func strings(_ row: [PGValue]) throws(StoreError) -> StoredStrings {
        StoredStrings(
            locale: try required(row, 0), version: try number(row, 1), source: row[2].bytea, contentType: try required(row, 3),
            etag: try required(row, 4), createdAtMillis: Int64(try number(row, 5)), author: row[6].text)
    }

    private static func required(_ row: [PGValue], _ column: Int) throws(StoreError) -> String {
        guard column < row.count, let text = row[column].text else { throw .unavailable("row decoding: column \(column) is NULL") }
        return text
    }

    private static func number(_ row: [PGValue], _ column: Int) throws(StoreError) -> Int {
        let text = try required(row, column)
        guard let value = Int(text) else { throw .unavailable("row decoding: column \(column) is not a number: \(text)") }
        return value
    }

    public func readCurrentLayouts(environment: String) throws(StoreError) -> [StoredVersion] {
        try connection.withLock { (db) throws(StoreError) -> [StoredVersion] in
            try db.execute(
                """
                SELECT \(Self.columns.split(separator: ", ").map { "v." + $0 }.joined(separator: ", "))
                FROM layout_pointers AS p JOIN layout_versions AS v ON v.account = p.account AND v.version = p.version
                WHERE p.environment = $1 AND NOT v.deleted ORDER BY v.account
                """, [.text(environment)]
            ).map { (row) throws(StoreError) in try Self.version(row) }
        }
    }

    public func readLatest(account: String) throws(StoreError) -> StoredVersion? {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion? in
            try PGRows(db: db, origin: origin, clock: clock).latest(account: account)
        }
    }

    public func readVersions(account: String) throws(StoreError) -> [StoredVersion] {
        try connection.withLock { (db) throws(StoreError) -> [StoredVersion] in
            try db.execute("SELECT \(Self.columns) FROM layout_versions WHERE account = $1 ORDER BY version DESC", [.text(account)])
                .map { (row) throws(StoreError) in try Self.version(row) }
        }
    }

    public func readVersion(account: String, number: Int) throws(StoreError) -> StoredVersion? {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion? in
            try db.execute(
                "SELECT \(Self.columns) FROM layout_versions WHERE account = $1 AND version = $2", [.text(account), .text(String(number))]
            ).first.map { (row) throws(StoreError) in try Self.version(row) }
        }
    }

    public func readCurrentStrings(environment: String) throws(StoreError) -> [StoredStrings] {
        try connection.withLock { (db) throws(StoreError) -> [StoredStrings] in
            try db.execute(
                """
                SELECT \(Self.stringsColumns.split(separator: ", ").map { "s." + $0 }.joined(separator: ", "))
                FROM strings_pointers AS p JOIN strings_versions AS s ON s.locale = p.locale AND s.version = p.version
                WHERE p.environment = $1 ORDER BY s.locale
                """, [.text(environment)]
            ).map { (row) throws(StoreError) in try Self.strings(row) }
        }
    }

    /// One transaction that first takes a transaction-scoped advisory lock: writers on every replica are
    /// serialized, so the write rule's reads (the latest version, the layouts extending an account) hold until commit.
    public func writeTransaction<R: Sendable>(_ body: (any StoreRows) throws(StoreError) -> R) throws(StoreError) -> R {
        try connection.withLock { (db) throws(StoreError) -> R in
            try db.transaction { () throws(StoreError) -> R in
                _ = try db.execute("SELECT pg_advisory_xact_lock(7262002)")
                return try body(PGRows(db: db, origin: origin, clock: clock))
            }
        }
    }

    public func readTokens() throws(StoreError) -> [StoredToken] {
        try connection.withLock { (db) throws(StoreError) -> [StoredToken] in try PGRows(db: db, origin: origin, clock: clock).tokens() }
    }

    public func readAudit(afterID: Int64, limit: Int, account: String?, actor: String?) throws(StoreError) -> [AuditEntry] {
        try connection.withLock { (db) throws(StoreError) -> [AuditEntry] in
            let cells = AuditRows.selectCells(afterID: afterID, limit: limit, account: account, actor: actor).map(PGValue.optional)
            return try AuditRows.decode(try db.execute(AuditRows.select, cells).map { $0.map(\.text) })
        }
    }

    public func readPing() -> Bool {
        (try? connection.withLock { (db) throws(StoreError) -> String? in try db.execute("SELECT 1").first?[0].text }) == "1"
    }

    /// Listens for other replicas' commits on a thread with its own connection, and every two seconds
    /// compares row counts as a safety net for notifications lost while disconnected.
    public func watch(_ onChange: @escaping @Sendable (StoreChange) -> Void) {
        guard !watching.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let url = self.url
        let (origin, clock) = (self.origin, self.clock)
        let stopped = StopFlag(store: self)
        let thread = Thread {
            ChangeListener(url: url, origin: origin, clock: clock, stopped: stopped, onChange: onChange).run()
        }
        thread.start()
    }

    /// Stops the listener thread (it notices within a second).
    public func stopWatching() { stopped.store(true, ordering: .releasing) }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }
}

/// Lets the listener thread see a stop without keeping the store alive.
final class StopFlag: Sendable {
    private weak let store: PostgresStore?

    init(store: PostgresStore) { self.store = store }

    var isSet: Bool { store?.isStopped ?? true }
}

/// The LISTEN loop of ``PostgresStore/watch(_:)``.
struct ChangeListener {
    let url: String
    /// The watching store's ``PostgresStore/origin``: notifications that carry it are its own commits.
    let origin: String
    /// What the two-second safety-net check is timed on.
    let clock: TimeSource
    let stopped: StopFlag
    let onChange: @Sendable (StoreChange) -> Void

    func run() {
        var expected: (layouts: Int, strings: Int)?
        var lastCheck = 0.0
        var mismatches = 0
        while !stopped.isSet {
            guard let connection = try? PGConnection(url: url), (try? connection.execute("LISTEN \(PostgresStore.channel)")) != nil else {
                sleep(1)
                continue
            }
            if expected != nil { onChange(.everything) }  // notifications may have been missed while reconnecting
            while !stopped.isSet {
                guard connection.waitForNotifications(milliseconds: 1000) else { break }
                let batch = connection.takeNotifications().compactMap(Announcement.init(payload:))
                /// The names `word` announced in this batch.
                func named(_ word: String) -> Set<String> { Set(batch.filter { $0.kind.word == word }.map(\.kind.name)) }
                // A published write announces its row (`layout`) and its pointer (`pointer`) at one commit: one change.
                let (rowsAnnounced, stringsAnnounced) = (named("layout"), named("strings"))
                // A rollout change and a promotion are announced twice (see `announceRecorded`, `announcePromotion`):
                // the plain announcement is for replicas of an older release.
                let rolloutsRecorded = named("rolloutrecorded")
                let (promoted, stringsPromoted) = (named("promoted"), named("stringspromoted"))
                for announcement in batch {
                    let own = announcement.origin == origin
                    switch announcement.kind {
                    case .promoted, .rolloutRecorded, .token, .revocations:
                        // Tokens and revocations add no layout or strings row: not counted by the safety net below.
                        if !own { onChange(announcement.change) }
                    case .stringsPointer(let locale):
                        // A strings table's pointer moved (a promotion; a write announces its row as well): no row.
                        if !own, !stringsAnnounced.contains(locale), !stringsPromoted.contains(locale) { onChange(announcement.change) }
                    case .pointer(let account):
                        // A pointer moved: no row counted by the safety net below.
                        if !own, !rowsAnnounced.contains(account), !promoted.contains(account) { onChange(announcement.change) }
                    case .rollout(let account):
                        if !own, !rolloutsRecorded.contains(account) { onChange(announcement.change) }
                    case .strings:
                        expected?.strings += 1
                        if !own { onChange(announcement.change) }
                    case .layout, .unknown:
                        expected?.layouts += 1
                        if !own { onChange(announcement.change) }
                    }
                }
                let now = Double(clock.unixMillis) / 1000
                guard now - lastCheck >= 2 else { continue }
                lastCheck = now
                // The safety net: every commit adds one row and one notification; rows without a
                // notification mean some were missed.
                guard
                    let row = try? connection.execute(
                        "SELECT (SELECT count(*) FROM layout_versions), (SELECT count(*) FROM strings_versions)"
                    ).first,
                    let layouts = row[0].text.flatMap({ Int($0) }), let strings = row[1].text.flatMap({ Int($0) })
                else { break }
                // A commit whose notification is still on its way shows as a mismatch once: only one that persists
                // through the next check means notifications were lost (a catch-up then reads what is newer).
                if let known = expected, known.layouts != layouts || known.strings != strings {
                    mismatches += 1
                    if mismatches >= 2 {
                        onChange(.everything)
                        mismatches = 0
                        expected = (layouts, strings)
                    }
                } else {
                    mismatches = 0
                    expected = (layouts, strings)
                }
            }
        }
    }
}

/// A write transaction on a PostgreSQL connection (under the writers' advisory lock); every insert is announced
/// to the other replicas with NOTIFY, delivered when the transaction commits.
struct PGRows: StoreRows {
    let db: PGConnection
    /// Named in each notification (``PostgresStore/origin``).
    let origin: String
    let clock: TimeSource

    /// Tells the other replicas, at commit: an ``Announcement`` of `kind` from this store on the store's channel.
    func announce(_ kind: Announcement.Kind) throws(StoreError) { try announce(kind, atMillis: clock.unixMillis) }

    /// Tells the other replicas, at commit: an ``Announcement`` of `kind`, committed at `millis`.
    func announce(_ kind: Announcement.Kind, atMillis millis: Int64) throws(StoreError) {
        let payload = Announcement(kind, committedAtMillis: millis, origin: origin).payload
        _ = try db.execute("SELECT pg_notify($1, $2)", [.text(PostgresStore.channel), .text(payload)])
    }

    func latest(account: String) throws(StoreError) -> StoredVersion? {
        try db.execute(
            "SELECT \(PostgresStore.columns) FROM layout_versions WHERE account = $1 ORDER BY version DESC LIMIT 1", [.text(account)]
        ).first.map { (row) throws(StoreError) in try PostgresStore.version(row) }
    }

    func latestStrings(locale: String) throws(StoreError) -> StoredStrings? {
        try db.execute(
            "SELECT \(PostgresStore.stringsColumns) FROM strings_versions WHERE locale = $1 ORDER BY version DESC LIMIT 1", [.text(locale)]
        ).first.map { (row) throws(StoreError) in try PostgresStore.strings(row) }
    }

    func version(account: String, number: Int) throws(StoreError) -> StoredVersion? {
        try db.execute(
            "SELECT \(PostgresStore.columns) FROM layout_versions WHERE account = $1 AND version = $2",
            [.text(account), .text(String(number))]
        ).first.map { (row) throws(StoreError) in try PostgresStore.version(row) }
    }

    func deletedVersions(account: String) throws(StoreError) -> [Int] {
        try db.execute("SELECT version FROM layout_versions WHERE account = $1 AND deleted", [.text(account)]).compactMap {
            $0.first?.text.flatMap { Int($0) }
        }
    }

    func insert(_ record: StoredVersion) throws(StoreError) {
        _ = try db.execute(
            "INSERT INTO layout_versions (\(PostgresStore.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            [
                .text(record.account), .text(String(record.version)), .bytes(record.source), .text(record.contentType),
                .text(record.etag), .text(String(record.createdAtMillis)), .optional(record.author), .optional(record.message),
                .optional(record.restoredFrom.map(String.init)), .text(record.deleted ? "t" : "f"), .optional(record.extends),
            ])
        try announce(.layout(account: record.account), atMillis: record.createdAtMillis)
    }

    func insert(_ record: StoredStrings) throws(StoreError) {
        _ = try db.execute(
            "INSERT INTO strings_versions (\(PostgresStore.stringsColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [
                .text(record.locale), .text(String(record.version)), .bytes(record.source), .text(record.contentType), .text(record.etag),
                .text(String(record.createdAtMillis)), .optional(record.author),
            ])
        try announce(.strings(locale: record.locale), atMillis: record.createdAtMillis)
    }

    func tokens() throws(StoreError) -> [StoredToken] {
        let cells = { (rows: [[PGValue]]) in rows.map { $0.map(\.text) } }
        return try TokenRows.decode(
            tokens: cells(try db.execute(TokenRows.selectTokens)), secrets: cells(try db.execute(TokenRows.selectSecrets)))
    }

    func insertAudit(_ entry: AuditEntry) throws(StoreError) {
        _ = try db.execute(AuditRows.insert, AuditRows.cells(entry).map(PGValue.optional))
    }

    func pruneAudit(beforeMillis millis: Int64, keepingNewest rows: Int64, limit: Int) throws(StoreError) -> Int {
        let sql = "WITH pruned AS (\(AuditRows.prune) RETURNING 1) SELECT count(*) FROM pruned"
        let cells: [PGValue] = [.text(String(millis)), .text(String(rows)), .text(String(limit))]
        return Int(try db.execute(sql, cells).first?[0].text ?? "0") ?? 0
    }

    func builds() throws(StoreError) -> [StoredBuild] {
        try BuildSQL.decode(try db.execute(BuildSQL.select).map { $0.map(\.text) })
    }

    func revocations(account: String?) throws(StoreError) -> [StoredRevocation] {
        let rows: [[PGValue]]
        if let account {
            rows = try db.execute(RevocationSQL.selectAccount, [.text(account)])
        } else {
            rows = try db.execute(RevocationSQL.selectAll)
        }
        return try RevocationSQL.decode(rows.map { $0.map(\.text) })
    }

    func save(revocation: StoredRevocation) throws(StoreError) {
        _ = try db.execute(RevocationSQL.upsert, RevocationSQL.cells(revocation).map(PGValue.optional))
    }

    func announceRevocations(account: String, atMillis: Int64) throws(StoreError) {
        try announce(.revocations(account: account), atMillis: atMillis)
    }

    func save(build: StoredBuild) throws(StoreError) -> Bool {
        let existed = !(try db.execute(BuildSQL.exists, [.text(build.platform), .text(build.appVersion)])).isEmpty
        _ = try db.execute(BuildSQL.upsert, BuildSQL.cells(build).map(PGValue.optional))
        return existed
    }

    func deleteBuild(platform: String, appVersion: String) throws(StoreError) -> Bool {
        !(try db.execute(BuildSQL.delete + " RETURNING 1", [.text(platform), .text(appVersion)])).isEmpty
    }

    func markSeen(platform: String, appVersion: String, atMillis: Int64) throws(StoreError) {
        _ = try db.execute(BuildSQL.markSeen, [.text(String(atMillis)), .text(platform), .text(appVersion)])
    }

    func changeRequests() throws(StoreError) -> [StoredChangeRequest] {
        try ChangeRequestSQL.decode(try db.execute(ChangeRequestSQL.select).map { $0.map(\.text) })
    }

    func insert(changeRequest: StoredChangeRequest) throws(StoreError) {
        _ = try db.execute(
            ChangeRequestSQL.insert,
            [
                .text(changeRequest.id), .text(changeRequest.state), .text(String(decoding: changeRequest.record, as: UTF8.self)),
                .text(String(changeRequest.createdAtMillis)),
            ])
    }

    func update(changeRequest: StoredChangeRequest, expecting: String) throws(StoreError) -> Bool {
        !(try db.execute(
            ChangeRequestSQL.update + " RETURNING 1",
            [
                .text(changeRequest.state), .text(String(decoding: changeRequest.record, as: UTF8.self)),
                changeRequest.finishedAtMillis.map { .text(String($0)) } ?? .null,
                .text(changeRequest.id), .text(expecting),
            ])).isEmpty
    }

    func dueChangeRequests(atMillis: Int64, limit: Int) throws(StoreError) -> [StoredChangeRequest] {
        try ChangeRequestSQL.decode(
            try db.execute(ChangeRequestSQL.selectDue, [.text(String(atMillis)), .text(String(limit))]).map { $0.map(\.text) })
    }

    func nextChangeRequestApplyAt(after atMillis: Int64) throws(StoreError) -> Int64? {
        try db.execute(ChangeRequestSQL.nextApplyAt, [.text(String(atMillis))]).first?.first?.text.flatMap { Int64($0) }
    }

    func changeRequestCounts() throws(StoreError) -> [String: Int] {
        let rows = try db.execute(ChangeRequestSQL.counts).map { ($0[0].text ?? "", Int($0[1].text ?? "0") ?? 0) }
        return Dictionary(rows, uniquingKeysWith: +)
    }

    func pruneChangeRequests(finishedBefore beforeMillis: Int64, limit: Int) throws(StoreError) -> Int {
        let sql = "WITH pruned AS (\(ChangeRequestSQL.prune) RETURNING 1) SELECT count(*) FROM pruned"
        return Int(try db.execute(sql, [.text(String(beforeMillis)), .text(String(limit))]).first?[0].text ?? "0") ?? 0
    }

    func changeRequest(id: String) throws(StoreError) -> StoredChangeRequest? {
        try ChangeRequestSQL.decode(try db.execute(ChangeRequestSQL.selectOne, [.text(id)]).map { $0.map(\.text) }).first
    }

    func update(changeRequest: StoredChangeRequest, replacing record: [UInt8]) throws(StoreError) -> Bool {
        !(try db.execute(
            ChangeRequestSQL.replace + " RETURNING 1",
            [
                .text(changeRequest.state), .text(String(decoding: changeRequest.record, as: UTF8.self)),
                changeRequest.finishedAtMillis.map { .text(String($0)) } ?? .null,
                .text(changeRequest.id), .text(String(decoding: record, as: UTF8.self)),
            ])).isEmpty
    }

    func claim(changeRequest id: String, state: String, by claimer: String) throws(StoreError) -> Bool {
        !(try db.execute(ChangeRequestSQL.claim + " RETURNING 1", [.text(claimer), .text(id), .text(state)])).isEmpty
    }

    /// Announced as `token <id> <ms> <origin>`, delivered at commit: other replicas reload their tokens at once.
    func save(_ token: StoredToken, announce: Bool) throws(StoreError) {
        _ = try db.execute(TokenRows.upsertToken, TokenRows.tokenCells(token).map(PGValue.optional))
        _ = try db.execute(TokenRows.deleteSecrets, [.text(token.id)])
        for secret in TokenRows.secretCells(token) { _ = try db.execute(TokenRows.insertSecret, secret.map(PGValue.optional)) }
        guard announce else { return }
        try self.announce(.token(id: token.id))
    }
}
