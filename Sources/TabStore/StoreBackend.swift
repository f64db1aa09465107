import Dispatch
import Synchronization
import TabAccess
import TabDelivery
import TabTime

/// One write transaction's view of a store: what the write rule reads and writes. Valid only inside
/// ``StoreBackend/writeTransaction(_:)``.
public protocol StoreRows: WebhookRows, RolloutRows, BuildRows, ChangeRequestRows, RevocationRows, ReportRows {
    /// The store's clock: what the transaction dates its records and events with.
    var clock: TimeSource { get }
    /// The latest record of an account (a deletion record included).
    func latest(account: String) throws(StoreError) -> StoredVersion?
    /// One record of an account.
    func version(account: String, number: Int) throws(StoreError) -> StoredVersion?
    /// The numbers of an account's deletion records.
    func deletedVersions(account: String) throws(StoreError) -> [Int]
    /// The latest version of a strings table.
    func latestStrings(locale: String) throws(StoreError) -> StoredStrings?
    /// Appends a record; ``StoreError/conflict`` when another writer took its version number.
    func insert(_ record: StoredVersion) throws(StoreError)
    func insert(_ record: StoredStrings) throws(StoreError)
    /// Every API token, revoked and expired ones included, by id.
    func tokens() throws(StoreError) -> [StoredToken]
    /// Inserts an audit entry (adding to the count of the entry with its coalescing key, if there is one).
    func insertAudit(_ entry: AuditEntry) throws(StoreError)
    /// Deletes at most `limit` of the oldest entries dated before `millis` or beyond the newest `rows`; returns how many.
    func pruneAudit(beforeMillis millis: Int64, keepingNewest rows: Int64, limit: Int) throws(StoreError) -> Int
    /// Inserts or replaces a token and its secrets; `announce` tells the other replicas (revocation and rotation
    /// must reach them within a second; a `lastUsedAt` update need not).
    func save(_ token: StoredToken, announce: Bool) throws(StoreError)
}

/// Where a store keeps its rows: memory, SQLite or PostgreSQL. A backend provides blocking primitives; the write
/// rule (preconditions, version numbers, the `extends` checks, authorship) exists once, in this protocol's
/// extension, and every call runs on the backend's own thread with a deadline (``StoreExecutor``), never on
/// Swift's cooperative pool.
public protocol StoreBackend: TabStore {
    /// The thread the backend's blocking calls run on, and their deadline.
    var executor: StoreExecutor { get }
    /// Runs `body` as one transaction, serialized against every other writer (other processes included):
    /// committed when it returns, rolled back when it throws. Blocking.
    func writeTransaction<R: Sendable>(_ body: (any StoreRows) throws(StoreError) -> R) throws(StoreError) -> R
    /// Blocking reads.
    func readCurrentLayouts(environment: String) throws(StoreError) -> [StoredVersion]
    func readLatest(account: String) throws(StoreError) -> StoredVersion?
    func readVersions(account: String) throws(StoreError) -> [StoredVersion]
    func readVersion(account: String, number: Int) throws(StoreError) -> StoredVersion?
    func readCurrentStrings(environment: String) throws(StoreError) -> [StoredStrings]
    func readTokens() throws(StoreError) -> [StoredToken]
    func readAudit(afterID: Int64, limit: Int, account: String?, actor: String?) throws(StoreError) -> [AuditEntry]
    /// Whether the database answers a trivial query. Blocking.
    func readPing() -> Bool
}

extension StoreBackend {
    public func currentLayouts(environment: String) async throws(StoreError) -> [StoredVersion] {
        try await executor.run { () throws(StoreError) in try self.readCurrentLayouts(environment: environment) }
    }

    public func latest(account: String) async throws(StoreError) -> StoredVersion? {
        try await executor.run { () throws(StoreError) in try self.readLatest(account: account) }
    }

    public func versions(account: String) async throws(StoreError) -> [StoredVersion] {
        try await executor.run { () throws(StoreError) in try self.readVersions(account: account) }
    }

    public func version(account: String, number: Int) async throws(StoreError) -> StoredVersion? {
        try await executor.run { () throws(StoreError) in try self.readVersion(account: account, number: number) }
    }

    public func currentStrings(environment: String) async throws(StoreError) -> [StoredStrings] {
        try await executor.run { () throws(StoreError) in try self.readCurrentStrings(environment: environment) }
    }

    public func ping() async -> Bool {
        (try? await executor.run { () throws(StoreError) in self.readPing() }) ?? false
    }

    public func append(_ write: LayoutWrite) async throws(StoreError) -> StoredVersion {
        try await executor.run { () throws(StoreError) in
            try self.writeTransaction { (rows) throws(StoreError) in try WriteRule.append(write, rows) }
        }
    }

    public func delete(
        account: String, environment: String, precondition: WritePrecondition, author: String?, audit: AuditEntry?
    ) async throws(StoreError) -> StoredVersion {
        try await executor.run { () throws(StoreError) in
            try self.writeTransaction { (rows) throws(StoreError) in
                let record = try WriteRule.delete(
                    account: account, environment: environment, precondition: precondition, author: author, rows)
                try WriteRule.record(audit, version: record.version, rows)
                return record
            }
        }
    }

    public func appendStrings(
        locale: String, environment: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String?,
        audit: AuditEntry?
    ) async throws(StoreError) -> StoredStrings {
        try await executor.run { () throws(StoreError) in
            try self.writeTransaction { (rows) throws(StoreError) in
                let record = try WriteRule.appendStrings(
                    locale: locale, environment: environment, source: source, contentType: contentType, precondition: precondition,
                    author: author, rows)
                try WriteRule.record(audit, version: record.version, rows)
                return record
            }
        }
    }

    /// No other process writes to this store: nothing to follow.
    public func watch(_ onChange: @escaping @Sendable (StoreChange) -> Void) {}
}

/// The write rule, once for every backend. Each function runs inside one write transaction, and a change's webhook
/// deliveries (``Outbox``) are written in that same transaction: they commit together or not at all.
enum WriteRule {
    static func append(_ write: LayoutWrite, _ rows: any StoreRows) throws(StoreError) -> StoredVersion {
        let latest = try rows.latest(account: write.account)
        let pointed = try pointed(write.account, write.environment, rows)
        try checkRollout(account: write.account, environment: write.environment, moving: write.publish, rows)
        try write.precondition.checkWrite(current: pointed.flatMap { $0.deleted ? nil : $0.etag })
        if let base = write.extends, !base.isEmpty {
            guard let held = try Self.pointed(base, write.environment, rows), !held.deleted else { throw .missingBase(base) }
        }
        let record = StoredVersion.next(after: latest, for: write, atMillis: rows.clock.unixMillis)
        try insertResolvingRace(record, precondition: write.precondition, rows)
        try Self.record(write.audit, version: record.version, rows)
        if write.publish {
            try rows.setPointer(account: write.account, environment: write.environment, version: record.version)
            try Outbox.enqueue(layout: record, environment: write.environment, rows)
        }
        return record
    }

    /// Refuses a write while a rollout is under way in the environment when the write would move the pointer, or
    /// while a rollout's completion is due but not recorded (the pointer is about to move); a draft is refused only
    /// in the second case.
    static func checkRollout(account: String, environment: String, moving: Bool, _ rows: any StoreRows) throws(StoreError) {
        guard let rollout = try rows.latestRollout(account: account, environment: environment) else { return }
        let now = rows.clock.now
        do throws(RolloutError) {
            try rollout.requireCompletionRecorded(at: now)
        } catch {
            throw .refused(error)
        }
        if moving, rollout.isUnderWay(at: now) {
            throw .refused(.conflict(.rolloutInProgress(id: rollout.id, environment: environment)))
        }
    }

    /// Stores a change's audit entry, with the version it made, in the change's transaction.
    static func record(_ audit: AuditEntry?, version: Int?, _ rows: any StoreRows) throws(StoreError) {
        guard var audit else { return }
        audit.version = version
        try rows.insertAudit(audit)
    }

    static func delete(account: String, environment: String, precondition: WritePrecondition, author: String?, _ rows: any StoreRows)
        throws(StoreError) -> StoredVersion
    {
        guard let pointed = try pointed(account, environment, rows), !pointed.deleted, let latest = try rows.latest(account: account)
        else { throw .notFound }
        try checkRollout(account: account, environment: environment, moving: true, rows)
        try precondition.checkWrite(current: pointed.etag)
        let dependents = try rows.accounts(extending: account, environment: environment).filter { $0 != account }.sorted()
        guard dependents.isEmpty else { throw .extended(by: dependents) }
        var record = StoredVersion.deletion(after: latest, author: author, atMillis: rows.clock.unixMillis)
        if latest.version != pointed.version {
            // A draft stands after the version served: the deletion record keeps the served source for the history.
            (record.source, record.contentType) = (pointed.source, pointed.contentType)
        }
        try insertResolvingRace(record, precondition: precondition, rows)
        try rows.setPointer(account: account, environment: environment, version: record.version)
        try Outbox.enqueue(layout: record, environment: environment, rows)
        return record
    }

    static func appendStrings(
        locale: String, environment: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String?,
        _ rows: any StoreRows
    ) throws(StoreError) -> StoredStrings {
        let latest = try rows.latestStrings(locale: locale)
        try precondition.checkWrite(current: try pointedStrings(locale, environment, rows)?.etag)
        let record = StoredStrings.next(
            after: latest, locale: locale, source: source, contentType: contentType, author: author, atMillis: rows.clock.unixMillis)
        do throws(StoreError) {
            try rows.insert(record)
        } catch .conflict {
            throw .preconditionFailed(current: nil)
        }
        try rows.setStringsPointer(locale: locale, environment: environment, version: record.version)
        try Outbox.enqueue(strings: record, environment: environment, rows)
        return record
    }

    /// Inserts `record`; a writer that lost the race for its version number (possible only where the backend
    /// does not serialize writers) gets the precondition error the winner's record causes.
    private static func insertResolvingRace(_ record: StoredVersion, precondition: WritePrecondition, _ rows: any StoreRows)
        throws(StoreError)
    {
        do throws(StoreError) {
            try rows.insert(record)
        } catch .conflict {
            throw .preconditionFailed(current: nil)
        }
    }
}

/// The thread a store's blocking calls run on, one at a time, each with a deadline: a caller that waits longer
/// gets ``StoreError/timedOut(seconds:)`` (a write then answers 503 with `Retry-After`) while the call itself
/// finishes or fails on the store's thread, never on Swift's cooperative pool.
public final class StoreExecutor: Sendable {
    private let queue: DispatchQueue
    /// Seconds a caller waits for one call.
    public let deadlineSeconds: Double

    public init(label: String, deadlineSeconds: Double = 15) {
        queue = DispatchQueue(label: label)
        self.deadlineSeconds = deadlineSeconds
    }

    /// Runs `body` on the store's thread and returns its result, or throws ``StoreError/timedOut(seconds:)``.
    public func run<R: Sendable>(_ body: @escaping @Sendable () throws(StoreError) -> R) async throws(StoreError) -> R {
        let outcome = OneOutcome<Result<R, StoreError>>()
        let deadline = deadlineSeconds
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<R, StoreError>, Never>) in
            outcome.set(continuation)
            queue.async {
                do throws(StoreError) {
                    outcome.resume(returning: .success(try body()))
                } catch {
                    outcome.resume(returning: .failure(error))
                }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + deadline) {
                outcome.resume(returning: .failure(.timedOut(seconds: deadline)))
            }
        }
        return try result.get()
    }
}
