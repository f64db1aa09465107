import ContentHash
import TabAccess
import TabDelivery
import TabTime

/// One immutable version of an account's layout (or, with `deleted`, the record that it was deleted).
public struct StoredVersion: Sendable, Equatable {
    public var account: String
    /// 1, 2, … per account, contiguous.
    public var version: Int
    /// The source exactly as uploaded.
    public var source: [UInt8]
    public var contentType: String
    /// The version's strong entity tag (what `If-Match` compares against).
    public var etag: String
    /// Milliseconds since 1970-01-01 UTC.
    public var createdAtMillis: Int64
    public var author: String?
    public var message: String?
    public var restoredFrom: Int?
    /// A deletion record: the account has no layout of its own from this version on.
    public var deleted: Bool
    /// The account this version's layout extends (`extends`): `""` when it extends none, nil when unknown (versions
    /// stored before the store recorded it: read the source).
    public var extends: String?

    public init(
        account: String, version: Int, source: [UInt8], contentType: String, etag: String, createdAtMillis: Int64,
        author: String?, message: String?, restoredFrom: Int?, deleted: Bool, extends: String? = nil
    ) {
        self.extends = extends
        self.account = account
        self.version = version
        self.source = source
        self.contentType = contentType
        self.etag = etag
        self.createdAtMillis = createdAtMillis
        self.author = author
        self.message = message
        self.restoredFrom = restoredFrom
        self.deleted = deleted
    }

    /// The version that `write` appends after `latest` (nil: the account's first), dated `millis`.
    public static func next(after latest: StoredVersion?, for write: LayoutWrite, atMillis millis: Int64) -> StoredVersion {
        let number = (latest?.version ?? 0) + 1
        return StoredVersion(
            account: write.account, version: number, source: write.source, contentType: write.contentType,
            etag: makeETag(account: write.account, version: number, contentType: write.contentType, source: write.source),
            createdAtMillis: millis, author: write.author, message: write.message, restoredFrom: write.restoredFrom,
            deleted: false, extends: write.extends)
    }

    /// The deletion record that follows `latest`, dated `millis`: it keeps the last source (for the history) under a
    /// new tag.
    public static func deletion(after latest: StoredVersion, author: String?, atMillis millis: Int64) -> StoredVersion {
        var record = latest
        record.version = latest.version + 1
        record.etag = makeETag(account: latest.account, version: record.version, contentType: "deleted", source: [])
        record.createdAtMillis = millis
        record.author = author
        record.message = nil
        record.restoredFrom = nil
        record.deleted = true
        record.extends = nil
        return record
    }

    /// The tag of a version: derived from the account, the number and the bytes, so that every replica
    /// computes the same one and no two versions of an account share one.
    public static func makeETag(account: String, version: Int, contentType: String, source: [UInt8]) -> String {
        let digest = SHA256.hash(Array("\(account)\u{0}\(version)\u{0}\(contentType)\u{0}".utf8) + source)
        return "\"v\(version)-" + SHA256.hex(Array(digest.prefix(10))) + "\""
    }
}

/// One version of a global strings table.
public struct StoredStrings: Sendable, Equatable {
    public var locale: String
    public var version: Int
    public var source: [UInt8]
    public var contentType: String
    public var etag: String
    public var createdAtMillis: Int64
    public var author: String?

    /// The version of a table that follows `latest` (nil: the locale's first), dated `millis`.
    public static func next(
        after latest: StoredStrings?, locale: String, source: [UInt8], contentType: String, author: String?, atMillis millis: Int64
    ) -> StoredStrings {
        let number = (latest?.version ?? 0) + 1
        return StoredStrings(
            locale: locale, version: number, source: source, contentType: contentType,
            etag: StoredVersion.makeETag(account: "strings/" + locale, version: number, contentType: contentType, source: source),
            createdAtMillis: millis, author: author)
    }

    public init(locale: String, version: Int, source: [UInt8], contentType: String, etag: String, createdAtMillis: Int64, author: String?) {
        self.locale = locale
        self.version = version
        self.source = source
        self.contentType = contentType
        self.etag = etag
        self.createdAtMillis = createdAtMillis
        self.author = author
    }
}

/// What a write requires of the record's current state (RFC 9110 §13.1): TabDelivery's ``Precondition``, the one
/// rule for writes and for the pointers promotions and rollouts move.
public typealias WritePrecondition = Precondition

extension Precondition {
    /// ``check(current:)`` with the store's errors.
    /// - Throws: ``StoreError/preconditionRequired`` or ``StoreError/preconditionFailed(current:)``.
    public func checkWrite(current: String?) throws(StoreError) {
        do throws(RolloutError) {
            try check(current: current)
        } catch .preconditionFailed(let tag) {
            throw .preconditionFailed(current: tag)
        } catch .preconditionRequired {
            throw .preconditionRequired
        } catch {
            throw .refused(error)  // `check` throws only the two above
        }
    }
}

/// What the store could not do.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// No such account, version or table.
    case notFound
    /// A write to an existing record came without `If-Match`.
    case preconditionRequired
    /// `If-Match` did not match, or `If-None-Match: *` met an existing record; carries the current tag.
    case preconditionFailed(current: String?)
    /// The store URL is not one this build understands.
    case unsupportedURL(String)
    /// The database failed (I/O, corruption, locked beyond the timeout); the detail is for the log only.
    case unavailable(String)
    /// Another writer took the version number first (a backend maps this to ``preconditionFailed(current:)``).
    case conflict
    /// A deletion refused: these accounts' current layouts extend the account (checked in the write's transaction).
    case extended(by: [String])
    /// A layout that extends an account with no layout (it was deleted meanwhile; checked in the transaction).
    case missingBase(String)
    /// The store did not answer within its deadline.
    case timedOut(seconds: Double)
    /// The store's schema was written by a newer tabserver (its newest migration, and the newest this build knows).
    case schemaTooNew(store: Int, binary: Int)
    /// The disk (or the database's quota) is full: nothing was written; reads go on, and writes work again once
    /// space is freed. The detail is for the log.
    case diskFull(String)
    /// A copy's target already holds rows (`migrate` copies only into an empty store).
    case targetNotEmpty(table: String, rows: Int)
    /// A copy's target does not hold what the source's snapshot held (or cannot: another schema).
    case copyMismatch(String)
    /// The environments' and rollouts' rules refuse the change (a rollout under way, a percent downward, …).
    case refused(RolloutError)

    public var description: String {
        switch self {
        case .notFound: "not found"
        case .preconditionRequired: "the record exists: a write needs If-Match with its current ETag"
        case .preconditionFailed(let current): "precondition failed (current ETag \(current ?? "none"))"
        case .unsupportedURL(let url): "unsupported store URL '\(url)' (use sqlite:PATH, memory: or postgres://user@host:port/db)"
        case .unavailable(let detail): "the store is unavailable: \(detail)"
        case .conflict: "another writer committed first"
        case .extended(let accounts): "other layouts extend it: \(accounts.joined(separator: ", "))"
        case .missingBase(let base): "the layout it extends, '\(base)', does not exist"
        case .timedOut(let seconds): "the store did not answer within \(seconds) s"
        case .schemaTooNew(let store, let binary):
            "the store's schema is version \(store), newer than this tabserver's (\(binary)): a newer release wrote it; run that release or newer (or restore a backup made before the upgrade)"
        case .diskFull(let detail): "the store's disk is full: \(detail)"
        case .targetNotEmpty(let table, let rows):
            "the target store is not empty (\(table) has \(rows) rows): migrate copies only into an empty store"
        case .copyMismatch(let detail): "the copy does not match its source: \(detail)"
        case .refused(let error): error.description
        }
    }
}

/// A new layout version to append.
public struct LayoutWrite: Sendable {
    public var account: String
    public var source: [UInt8]
    public var contentType: String
    public var precondition: WritePrecondition
    public var author: String?
    public var message: String?
    public var restoredFrom: Int?
    /// The account the new layout extends: `""` for none, nil when the writer did not say (then readers parse the
    /// source to find out). The store refuses the write when a named base has no layout.
    public var extends: String?
    /// The audit entry of the write, stored in its transaction with the new version's number.
    public var audit: AuditEntry?
    /// The environment the write enters (its pointer is checked and, when `publish`, moved).
    public var environment: String = TabStoreDefaults.environment
    /// Whether the environment's pointer moves to the new version; false stores a draft (`?publish=false`).
    public var publish = true

    public init(
        account: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String? = nil,
        message: String? = nil, restoredFrom: Int? = nil, extends: String? = nil
    ) {
        self.extends = extends
        self.account = account
        self.source = source
        self.contentType = contentType
        self.precondition = precondition
        self.author = author
        self.message = message
        self.restoredFrom = restoredFrom
    }
}

/// The tabs store: every version of every layout and strings table. A write returns only once it is durable;
/// of writers racing on one tag, exactly one succeeds.
public protocol TabStore: AccessStore, WebhookStore, RolloutStore, BuildStore, ChangeRequestStore, RevocationStore, ReportStore {
    /// What records are dated with (``StoreRows/clock`` in its transactions): the machine's clock, or a test's.
    var clock: TimeSource { get }
    /// The version `environment` points at (deletions excluded) of every account that has a layout there.
    func currentLayouts(environment: String) async throws(StoreError) -> [StoredVersion]
    /// The latest record of an account (a deletion record included), or nil when it never had a layout.
    func latest(account: String) async throws(StoreError) -> StoredVersion?
    /// Every record of an account, newest first.
    func versions(account: String) async throws(StoreError) -> [StoredVersion]
    /// One record of an account.
    func version(account: String, number: Int) async throws(StoreError) -> StoredVersion?
    /// Appends a version after checking `write.precondition` against the current one.
    func append(_ write: LayoutWrite) async throws(StoreError) -> StoredVersion
    /// Appends a deletion record and points `environment` at it (the account falls back to `default` there), and
    /// `audit` in the same transaction.
    func delete(
        account: String, environment: String, precondition: WritePrecondition, author: String?, audit: AuditEntry?
    ) async throws(StoreError) -> StoredVersion
    /// The version of every global strings table `environment` points at.
    func currentStrings(environment: String) async throws(StoreError) -> [StoredStrings]
    /// Appends a strings table version after checking `precondition` against `environment`'s, points `environment` at
    /// it, and stores `audit` in the same transaction.
    func appendStrings(
        locale: String, environment: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String?,
        audit: AuditEntry?
    ) async throws(StoreError) -> StoredStrings
    /// Whether the store answers (for `/readyz`).
    func ping() async -> Bool
    /// Calls `onChange` (on a thread of the store's) for changes committed by other processes.
    func watch(_ onChange: @escaping @Sendable (StoreChange) -> Void)
}

/// What a store assumes when a caller names no environment.
public enum TabStoreDefaults {
    /// The one environment of a server started without `--environments`, and the one a store written before
    /// environments existed points with.
    public static let environment = "production"
}

extension TabStore {
    /// The versions the default environment serves.
    public func currentLayouts() async throws(StoreError) -> [StoredVersion] {
        try await currentLayouts(environment: TabStoreDefaults.environment)
    }

    /// A deletion without an audit entry.
    public func delete(account: String, precondition: WritePrecondition, author: String?) async throws(StoreError) -> StoredVersion {
        try await delete(
            account: account, environment: TabStoreDefaults.environment, precondition: precondition, author: author, audit: nil)
    }

    /// A deletion in the default environment.
    public func delete(account: String, precondition: WritePrecondition, author: String?, audit: AuditEntry?) async throws(StoreError)
        -> StoredVersion
    {
        try await delete(
            account: account, environment: TabStoreDefaults.environment, precondition: precondition, author: author, audit: audit)
    }

    /// A strings table version in the default environment without an audit entry.
    public func appendStrings(
        locale: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String?
    ) async throws(StoreError) -> StoredStrings {
        try await appendStrings(
            locale: locale, environment: TabStoreDefaults.environment, source: source, contentType: contentType,
            precondition: precondition, author: author, audit: nil)
    }

    /// A strings table version in the default environment.
    public func appendStrings(
        locale: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String?, audit: AuditEntry?
    ) async throws(StoreError) -> StoredStrings {
        try await appendStrings(
            locale: locale, environment: TabStoreDefaults.environment, source: source, contentType: contentType,
            precondition: precondition, author: author, audit: audit)
    }

    /// The strings tables the default environment serves.
    public func currentStrings() async throws(StoreError) -> [StoredStrings] {
        try await currentStrings(environment: TabStoreDefaults.environment)
    }

    /// A token made without an audit entry.
    public func createToken(_ token: StoredToken) async throws(StoreError) { try await createToken(token, audit: nil) }

    /// A token edit without an audit entry.
    public func editToken(id: String, _ edit: @escaping @Sendable (StoredToken, [StoredToken]) -> TokenEdit) async throws(StoreError)
        -> TokenEdit
    {
        try await editToken(id: id, audit: nil, edit)
    }
}

/// Opens the store a URL names: `sqlite:PATH`, `memory:`.
/// - Throws: ``StoreError/unsupportedURL(_:)``, or what opening the database throws.
public func openStore(url: String) throws(StoreError) -> any TabStore {
    if url == "memory:" || url.hasPrefix("memory:") { return MemoryStore() }
    if url.hasPrefix("sqlite:") {
        var path = String(url.dropFirst("sqlite:".count))
        if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
        guard !path.isEmpty else { throw .unsupportedURL(url) }
        return try SQLiteStore(path: path)
    }
    throw .unsupportedURL(url)
}
