internal import CLibPQ
import Foundation
import Synchronization
import TabStore

#if canImport(Glibc)
    import Glibc
#endif

/// The store for several replicas: PostgreSQL through libpq. Preconditions hold across processes (a unique
/// key on (account, version) lets exactly one of any number of racing writers insert the next version), and
/// every commit is announced with NOTIFY so that other replicas reload what changed (``watch(_:)``).
public final class PostgresStore: TabStore {
    /// The channel commits are announced on; the payload is `layout|strings <name> <committed ms>`.
    static let channel = "tabserver_changes"

    private let url: String
    private let connection: Mutex<PGConnection>
    private let watching = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)

    static let migrations: [String] = [
        """
        CREATE TABLE layout_versions (
            account TEXT NOT NULL,
            version INTEGER NOT NULL,
            source BYTEA NOT NULL,
            content_type TEXT NOT NULL,
            etag TEXT NOT NULL,
            created_at_ms BIGINT NOT NULL,
            author TEXT,
            message TEXT,
            restored_from INTEGER,
            deleted BOOLEAN NOT NULL DEFAULT FALSE,
            PRIMARY KEY (account, version)
        );
        CREATE TABLE strings_versions (
            locale TEXT NOT NULL,
            version INTEGER NOT NULL,
            source BYTEA NOT NULL,
            content_type TEXT NOT NULL,
            etag TEXT NOT NULL,
            created_at_ms BIGINT NOT NULL,
            author TEXT,
            PRIMARY KEY (locale, version)
        );
        """
    ]

    /// Connects and applies pending migrations (under an advisory lock, so replicas starting together agree).
    /// - Throws: ``StoreError/unavailable(_:)`` when the server cannot be reached or migrated.
    public init(url: String) throws(StoreError) {
        self.url = url
        let connection = try PGConnection(url: url)
        _ = try connection.execute("SELECT pg_advisory_lock(7262001)")
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(7262001)") }
        _ = try connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms BIGINT NOT NULL)")
        let applied = Int(try connection.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").first?[0].text ?? "0") ?? 0
        for (index, sql) in Self.migrations.enumerated() where index + 1 > applied {
            try connection.transaction { () throws(StoreError) in
                _ = try connection.execute(sql)
                _ = try connection.execute(
                    "INSERT INTO schema_migrations (version, applied_at_ms) VALUES ($1, $2)",
                    [.text(String(index + 1)), .text(String(currentTimeMillis()))])
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

    private static let columns = "account, version, source, content_type, etag, created_at_ms, author, message, restored_from, deleted"

    private static func version(_ row: [PGValue]) -> StoredVersion {
        StoredVersion(
            account: row[0].text ?? "", version: Int(row[1].text ?? "") ?? 0, source: row[2].bytea, contentType: row[3].text ?? "",
            etag: row[4].text ?? "", createdAtMillis: Int64(row[5].text ?? "") ?? 0, author: row[6].text, message: row[7].text,
            restoredFrom: row[8].text.flatMap { Int($0) }, deleted: row[9].text == "t")
    }

    private static func strings(_ row: [PGValue]) -> StoredStrings {
        StoredStrings(
            locale: row[0].text ?? "", version: Int(row[1].text ?? "") ?? 0, source: row[2].bytea, contentType: row[3].text ?? "",
            etag: row[4].text ?? "", createdAtMillis: Int64(row[5].text ?? "") ?? 0, author: row[6].text)
    }

    public func currentLayouts() async throws(StoreError) -> [StoredVersion] {
        try connection.withLock { (db) throws(StoreError) -> [StoredVersion] in
            try db.execute(
                """
                SELECT DISTINCT ON (account) \(Self.columns) FROM layout_versions
                ORDER BY account, version DESC
                """
            ).map(Self.version).filter { !$0.deleted }
        }
    }

    public func latest(account: String) async throws(StoreError) -> StoredVersion? {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion? in try Self.latest(db, account) }
    }

    private static func latest(_ db: PGConnection, _ account: String) throws(StoreError) -> StoredVersion? {
        try db.execute("SELECT \(columns) FROM layout_versions WHERE account = $1 ORDER BY version DESC LIMIT 1", [.text(account)])
            .first.map(version)
    }

    public func versions(account: String) async throws(StoreError) -> [StoredVersion] {
        try connection.withLock { (db) throws(StoreError) -> [StoredVersion] in
            try db.execute("SELECT \(Self.columns) FROM layout_versions WHERE account = $1 ORDER BY version DESC", [.text(account)])
                .map(Self.version)
        }
    }

    public func version(account: String, number: Int) async throws(StoreError) -> StoredVersion? {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion? in
            try db.execute(
                "SELECT \(Self.columns) FROM layout_versions WHERE account = $1 AND version = $2", [.text(account), .text(String(number))]
            ).first.map(Self.version)
        }
    }

    public func append(_ write: LayoutWrite) async throws(StoreError) -> StoredVersion {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion in
            try Self.insertVersion(db, account: write.account, precondition: write.precondition) { latest in
                StoredVersion.next(after: latest, for: write)
            }
        }
    }

    public func delete(account: String, precondition: WritePrecondition, author: String?) async throws(StoreError) -> StoredVersion {
        try connection.withLock { (db) throws(StoreError) -> StoredVersion in
            try Self.insertVersion(db, account: account, precondition: precondition, requireExisting: true) { latest in
                StoredVersion.deletion(after: latest!, author: author)
            }
        }
    }

    /// Checks the precondition against the latest record, inserts the next one and announces it, in one
    /// transaction. A writer that loses the race for the version number gets the precondition error that
    /// the winner's record causes.
    private static func insertVersion(
        _ db: PGConnection, account: String, precondition: WritePrecondition, requireExisting: Bool = false,
        _ make: (StoredVersion?) -> StoredVersion
    ) throws(StoreError) -> StoredVersion {
        do throws(StoreError) {
            return try db.transaction { () throws(StoreError) -> StoredVersion in
                let latest = try latest(db, account)
                if requireExisting && (latest == nil || latest!.deleted) { throw .notFound }
                try precondition.check(current: latest.flatMap { $0.deleted ? nil : $0.etag })
                let record = make(latest)
                _ = try db.execute(
                    "INSERT INTO layout_versions (\(columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    [
                        .text(record.account), .text(String(record.version)), .bytes(record.source), .text(record.contentType),
                        .text(record.etag), .text(String(record.createdAtMillis)), .optional(record.author), .optional(record.message),
                        .optional(record.restoredFrom.map(String.init)), .text(record.deleted ? "t" : "f"),
                    ])
                _ = try db.execute("SELECT pg_notify($1, $2)", [.text(channel), .text("layout \(account) \(record.createdAtMillis)")])
                return record
            }
        } catch .conflict {
            let winner = try latest(db, account)
            try precondition.check(current: winner.flatMap { $0.deleted ? nil : $0.etag })
            throw .preconditionFailed(current: winner?.etag)
        }
    }

    public func currentStrings() async throws(StoreError) -> [StoredStrings] {
        try connection.withLock { (db) throws(StoreError) -> [StoredStrings] in
            try db.execute(
                """
                SELECT DISTINCT ON (locale) locale, version, source, content_type, etag, created_at_ms, author
                FROM strings_versions ORDER BY locale, version DESC
                """
            ).map(Self.strings)
        }
    }

    public func appendStrings(
        locale: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String?
    ) async throws(StoreError) -> StoredStrings {
        try connection.withLock { (db) throws(StoreError) -> StoredStrings in
            func current() throws(StoreError) -> StoredStrings? {
                try db.execute(
                    "SELECT locale, version, source, content_type, etag, created_at_ms, author FROM strings_versions WHERE locale = $1 ORDER BY version DESC LIMIT 1",
                    [.text(locale)]
                ).first.map(Self.strings)
            }
            do throws(StoreError) {
                return try db.transaction { () throws(StoreError) -> StoredStrings in
                    let latest = try current()
                    try precondition.check(current: latest?.etag)
                    let record = StoredStrings.next(
                        after: latest, locale: locale, source: source, contentType: contentType, author: author)
                    _ = try db.execute(
                        "INSERT INTO strings_versions (locale, version, source, content_type, etag, created_at_ms, author) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        [
                            .text(locale), .text(String(record.version)), .bytes(source), .text(contentType), .text(record.etag),
                            .text(String(record.createdAtMillis)), .optional(author),
                        ])
                    _ = try db.execute(
                        "SELECT pg_notify($1, $2)", [.text(Self.channel), .text("strings \(locale) \(record.createdAtMillis)")])
                    return record
                }
            } catch .conflict {
                let winner = try current()
                try precondition.check(current: winner?.etag)
                throw .preconditionFailed(current: winner?.etag)
            }
        }
    }

    public func ping() async -> Bool {
        (try? connection.withLock { (db) throws(StoreError) -> String? in try db.execute("SELECT 1").first?[0].text }) == "1"
    }

    /// Listens for other replicas' commits on a thread with its own connection, and every two seconds
    /// compares row counts as a safety net for notifications lost while disconnected.
    public func watch(_ onChange: @escaping @Sendable (StoreChange) -> Void) {
        guard !watching.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let url = self.url
        let stopped = StopFlag(store: self)
        let thread = Thread {
            ChangeListener(url: url, stopped: stopped, onChange: onChange).run()
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
    let stopped: StopFlag
    let onChange: @Sendable (StoreChange) -> Void

    func run() {
        var expected: (layouts: Int, strings: Int)?
        var lastCheck = 0.0
        while !stopped.isSet {
            guard let connection = try? PGConnection(url: url), (try? connection.execute("LISTEN \(PostgresStore.channel)")) != nil else {
                sleep(1)
                continue
            }
            if expected != nil { onChange(.everything) }  // notifications may have been missed while reconnecting
            while !stopped.isSet {
                guard connection.waitForNotifications(milliseconds: 1000) else { break }
                for payload in connection.takeNotifications() {
                    let parts = payload.split(separator: " ")
                    guard parts.count == 3, let millis = Int64(parts[2]) else { continue }
                    if parts[0] == "strings" {
                        expected?.strings += 1
                        onChange(.strings(locale: String(parts[1]), committedAtMillis: millis))
                    } else {
                        expected?.layouts += 1
                        onChange(.layout(account: String(parts[1]), committedAtMillis: millis))
                    }
                }
                let now = Double(currentTimeMillis()) / 1000
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
                if let known = expected, known.layouts != layouts || known.strings != strings { onChange(.everything) }
                expected = (layouts, strings)
            }
        }
    }
}
