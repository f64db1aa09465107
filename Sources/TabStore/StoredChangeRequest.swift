import Foundation
import TabAccess

/// A change request as the store keeps it: its id, state and the record TabReview writes, and which replica claimed
/// it to apply (so that of replicas racing to apply a scheduled request exactly one does).
public struct StoredChangeRequest: Sendable, Equatable {
    public var id: String
    public var state: String
    public var record: [UInt8]
    public var createdAtMillis: Int64
    /// When it ended (a final state), nil while it is open or approved: pruned `--change-request-retention` days after.
    public var finishedAtMillis: Int64?

    public init(id: String, state: String, record: [UInt8], createdAtMillis: Int64, finishedAtMillis: Int64? = nil) {
        self.id = id
        self.state = state
        self.record = record
        self.createdAtMillis = createdAtMillis
        self.finishedAtMillis = finishedAtMillis
    }

    /// When it is due once approved: its record's integer member `applyAtMillis` (nil without one, or when the record
    /// is not a JSON object). SQLite and PostgreSQL compute the same from the record as the column `apply_at_ms`.
    public var applyAtMillis: Int64? {
        struct Due: Decodable { var applyAtMillis: Int64? }
        return (try? JSONDecoder().decode(Due.self, from: Data(record)))?.applyAtMillis
    }
}

/// What the schedule's clock reads in one transaction: the approved requests due now, when the next one is due, and
/// how many requests are in each state.
public struct DueChangeRequests: Sendable, Equatable {
    /// Approved, unclaimed, and their `applyAt` has come: earliest `applyAt` first, at most the limit asked for.
    public var due: [StoredChangeRequest]
    /// The earliest `applyAt` (Unix milliseconds) of an approved request not due yet; nil when none waits.
    public var nextApplyAtMillis: Int64?
    public var counts: [String: Int]

    public init(due: [StoredChangeRequest], nextApplyAtMillis: Int64?, counts: [String: Int]) {
        self.due = due
        self.nextApplyAtMillis = nextApplyAtMillis
        self.counts = counts
    }
}

/// Change requests' rows, in one transaction.
public protocol ChangeRequestRows {
    func changeRequests() throws(StoreError) -> [StoredChangeRequest]
    func insert(changeRequest: StoredChangeRequest) throws(StoreError)
    /// Replaces the record of `request.id` when its state is still `expecting`; false when it is not (or is gone).
    func update(changeRequest: StoredChangeRequest, expecting: String) throws(StoreError) -> Bool
    /// Marks `id` claimed by `claimer` when it is in state `state` and unclaimed; false when another got there first.
    func claim(changeRequest id: String, state: String, by claimer: String) throws(StoreError) -> Bool
    /// The request `id` (one row), nil when there is none.
    func changeRequest(id: String) throws(StoreError) -> StoredChangeRequest?
    /// At most `limit` approved, unclaimed requests whose `applyAt` is at or before `atMillis`, earliest first (an
    /// index read: the schedule's clock). An approved request without `applyAt` is never due: it waits to be applied
    /// by hand.
    func dueChangeRequests(atMillis: Int64, limit: Int) throws(StoreError) -> [StoredChangeRequest]
    /// The earliest `applyAt` after `atMillis` of an approved request; nil when there is none.
    func nextChangeRequestApplyAt(after atMillis: Int64) throws(StoreError) -> Int64?
    /// How many requests are in each state.
    func changeRequestCounts() throws(StoreError) -> [String: Int]
    /// Deletes at most `limit` requests that ended before `beforeMillis`; how many went.
    func pruneChangeRequests(finishedBefore beforeMillis: Int64, limit: Int) throws(StoreError) -> Int
    /// Replaces the record of `request.id` when it is still exactly `record` (nothing changed it since it was read);
    /// false when it is not (or is gone). Two approvals racing cannot both be written over one record.
    func update(changeRequest: StoredChangeRequest, replacing record: [UInt8]) throws(StoreError) -> Bool
}

/// The SQL of ``ChangeRequestRows`` for SQLite and PostgreSQL (parameters named in order of first appearance).
public enum ChangeRequestSQL {
    public static let select = "SELECT id, state, record, created_at_ms FROM change_requests ORDER BY created_at_ms, id"
    public static let insert = "INSERT INTO change_requests (id, state, record, created_at_ms) VALUES ($1, $2, $3, $4)"
    /// Parameters: the new state, the record, when it ended (null while it has not), the id, the expected state. The
    /// claim is cleared.
    public static let update =
        "UPDATE change_requests SET state = $1, record = $2, claimed_by = NULL, finished_at_ms = $3 WHERE id = $4 AND state = $5"
    /// Parameters: the id.
    public static let selectOne = "SELECT id, state, record, created_at_ms FROM change_requests WHERE id = $1"
    /// Parameters: the time, the most to read. `apply_at_ms` is computed by the database from the record (see the
    /// migration that adds it in ``StoreSchema``), so rows written by a replica of an earlier release are dated too. A
    /// claimed request is being applied by the replica that claimed it: no other can claim it, so none reads it.
    public static let selectDue = """
        SELECT id, state, record, created_at_ms FROM change_requests
        WHERE state = 'approved' AND apply_at_ms <= $1 AND claimed_by IS NULL ORDER BY apply_at_ms, id LIMIT $2
        """
    /// Parameters: the time.
    public static let nextApplyAt = "SELECT MIN(apply_at_ms) FROM change_requests WHERE state = 'approved' AND apply_at_ms > $1"
    public static let counts = "SELECT state, COUNT(*) FROM change_requests GROUP BY state"
    /// Parameters: the time, the most to delete.
    public static let prune = """
        DELETE FROM change_requests WHERE id IN (
            SELECT id FROM change_requests WHERE finished_at_ms IS NOT NULL AND finished_at_ms < $1 ORDER BY finished_at_ms LIMIT $2)
        """
    /// Parameters: the new state, the record, when it ended (null while it has not), the id, the record it replaces.
    /// The claim is cleared.
    public static let replace =
        "UPDATE change_requests SET state = $1, record = $2, claimed_by = NULL, finished_at_ms = $3 WHERE id = $4 AND record = $5"
    /// Parameters: the claimer, the id, the state.
    public static let claim = "UPDATE change_requests SET claimed_by = $1 WHERE id = $2 AND state = $3 AND claimed_by IS NULL"

    /// Change requests from the text cells of ``select``.
    public static func decode(_ rows: [[String?]]) throws(StoreError) -> [StoredChangeRequest] {
        try rows.map { (row) throws(StoreError) -> StoredChangeRequest in
            guard row.count == 4, let id = row[0], let state = row[1], let record = row[2], let created = row[3].flatMap({ Int64($0) })
            else {
                throw .unavailable("a change_requests row is not what the schema writes")
            }
            return StoredChangeRequest(id: id, state: state, record: Array(record.utf8), createdAtMillis: created)
        }
    }
}

/// A change request's transition as webhooks receive it: its account and its JSON (the `data` of
/// `change-request.<state>`).
public struct ChangeRequestEvent: Sendable {
    public var account: String
    public var data: [UInt8]

    public init(account: String, data: [UInt8]) {
        self.account = account
        self.data = data
    }
}

/// What the service asks of a store about change requests (each call one transaction).
public protocol ChangeRequestStore: Sendable {
    func changeRequests() async throws(StoreError) -> [StoredChangeRequest]
    /// Stores a new request, its audit entry and its webhook deliveries (`event`: the change's data) in one transaction.
    func create(changeRequest: StoredChangeRequest, audit: AuditEntry?, event: ChangeRequestEvent?) async throws(StoreError)
    /// Replaces a request still in state `expecting`, with its audit entry and webhook deliveries; false otherwise.
    func update(changeRequest: StoredChangeRequest, expecting: String, audit: AuditEntry?, event: ChangeRequestEvent?)
        async throws(StoreError)
        -> Bool
    func claim(changeRequest id: String, state: String, by claimer: String) async throws(StoreError) -> Bool
    /// The request `id` (one row read), nil when there is none.
    func changeRequest(id: String) async throws(StoreError) -> StoredChangeRequest?
    /// The approved requests due at `atMillis` (at most `limit`), the next `applyAt` and the count of requests per
    /// state, in one transaction (the schedule's clock): index reads, no record decoded.
    func dueChangeRequests(atMillis: Int64, limit: Int) async throws(StoreError) -> DueChangeRequests
    /// Deletes the requests that ended before `beforeMillis`, at most `limit`; how many went.
    func pruneChangeRequests(finishedBefore beforeMillis: Int64, limit: Int) async throws(StoreError) -> Int
    /// Replaces a request whose record is still `record`, with its audit entry and webhook deliveries; false
    /// otherwise (read it again and redo the step).
    func update(changeRequest: StoredChangeRequest, replacing record: [UInt8], audit: AuditEntry?, event: ChangeRequestEvent?)
        async throws(StoreError) -> Bool
}

extension StoreBackend {
    public func changeRequests() async throws(StoreError) -> [StoredChangeRequest] {
        try await transaction { (rows) throws(StoreError) in try rows.changeRequests() }
    }

    public func create(changeRequest: StoredChangeRequest, audit: AuditEntry?, event: ChangeRequestEvent?) async throws(StoreError) {
        try await transaction { (rows) throws(StoreError) in
            try rows.insert(changeRequest: changeRequest)
            try WriteRule.record(audit, version: nil, rows)
            if let event { try Outbox.enqueue(changeRequest: event.data, account: event.account, state: changeRequest.state, rows) }
        }
    }

    public func update(changeRequest: StoredChangeRequest, expecting: String, audit: AuditEntry?, event: ChangeRequestEvent?)
        async throws(StoreError) -> Bool
    {
        try await transaction { (rows) throws(StoreError) in
            guard try rows.update(changeRequest: changeRequest, expecting: expecting) else { return false }
            try WriteRule.record(audit, version: nil, rows)
            if let event { try Outbox.enqueue(changeRequest: event.data, account: event.account, state: changeRequest.state, rows) }
            return true
        }
    }

    public func claim(changeRequest id: String, state: String, by claimer: String) async throws(StoreError) -> Bool {
        try await transaction { (rows) throws(StoreError) in try rows.claim(changeRequest: id, state: state, by: claimer) }
    }

    public func changeRequest(id: String) async throws(StoreError) -> StoredChangeRequest? {
        try await transaction { (rows) throws(StoreError) in try rows.changeRequest(id: id) }
    }

    public func dueChangeRequests(atMillis: Int64, limit: Int) async throws(StoreError) -> DueChangeRequests {
        try await transaction { (rows) throws(StoreError) in
            DueChangeRequests(
                due: try rows.dueChangeRequests(atMillis: atMillis, limit: limit),
                nextApplyAtMillis: try rows.nextChangeRequestApplyAt(after: atMillis), counts: try rows.changeRequestCounts())
        }
    }

    public func pruneChangeRequests(finishedBefore beforeMillis: Int64, limit: Int) async throws(StoreError) -> Int {
        try await transaction { (rows) throws(StoreError) in try rows.pruneChangeRequests(finishedBefore: beforeMillis, limit: limit) }
    }

    public func update(changeRequest: StoredChangeRequest, replacing record: [UInt8], audit: AuditEntry?, event: ChangeRequestEvent?)
        async throws(StoreError) -> Bool
    {
        try await transaction { (rows) throws(StoreError) in
            guard try rows.update(changeRequest: changeRequest, replacing: record) else { return false }
            try WriteRule.record(audit, version: nil, rows)
            if let event { try Outbox.enqueue(changeRequest: event.data, account: event.account, state: changeRequest.state, rows) }
            return true
        }
    }
}
