import Foundation
import Logging
import MicroHTTPD
import Synchronization
import TabAccess
import TabStore
import TabTime

/// Who is changing something, and from where: set around a changing route's work (``Router/serve(_:started:)``) so that
/// the handler's store write carries its audit entry into the change's own transaction.
struct AuditContext: Sendable {
    @TaskLocal static var current: AuditContext?

    let actor: String
    let tokenID: TokenID?
    let address: String
    let method: String
    let path: String
    let requestID: String
    /// What the entry is dated with (the audit log's).
    let clock: TimeSource

    /// The entry of a change: `action` on `account` answered with `status` (the store adds the version made).
    func entry(action: String, account: String?, status: Int) -> AuditEntry {
        AuditEntry(
            at: clock.date, actor: actor, tokenID: tokenID, address: address, method: method, path: path,
            action: action, account: account, status: status, requestID: requestID)
    }
}

/// Refusals waiting to be written: coalesced in memory per address, status and minute (``AuditEntry/coalescingKey``)
/// and written at most once a second, so that a flood of refused requests costs one store write per second and one
/// entry per address and minute, never one per request.
final class RefusalBuffer: Sendable {
    /// Distinct keys held between writes; refusals beyond are counted in the log line of the next write.
    static let capacity = 4096
    private let pending = Mutex<(entries: [String: AuditEntry], dropped: Int)>(([:], 0))

    /// Adds `entry`; true when the buffer was empty (the caller schedules a write).
    func add(_ entry: AuditEntry) -> Bool {
        pending.withLock { state in
            let wasEmpty = state.entries.isEmpty
            guard let key = entry.coalescingKey else { return wasEmpty }
            if state.entries[key] != nil {
                state.entries[key]?.count += 1
            } else if state.entries.count < Self.capacity {
                state.entries[key] = entry
            } else {
                state.dropped += 1
            }
            return wasEmpty
        }
    }

    /// Everything held, and how many refusals did not fit; the buffer is empty afterwards.
    func take() -> (entries: [AuditEntry], dropped: Int) {
        pending.withLock { state in
            let taken = (state.entries.values.sorted { $0.at < $1.at }, state.dropped)
            state = ([:], 0)
            return taken
        }
    }
}

/// What a refusal's audit entry keeps of its request (address, method, path), taken while the request is at hand.
struct RefusalEntryMaker: Sendable {
    let grant: Grant?
    let address: String
    let method: String
    let path: String
    /// What the entry is dated with.
    let clock: TimeSource

    init(_ addresses: ClientAddresses, _ request: borrowing HTTPRequest, grant: Grant?, clock: TimeSource) {
        self.grant = grant
        self.clock = clock
        address = addresses.address(of: request)
        method = request.method.token
        path = request.path
    }

    /// The entry of `refusal` about `account` in `environment`, now.
    func entry(_ refusal: AccessRefusal, account: String?, environment: String? = nil) -> AuditEntry {
        AuditEntry.refusal(
            refusal, grant: grant, at: clock.date, address: address, method: method, path: path, account: account,
            environment: environment)
    }
}

/// The audit log as the service writes it: a change's entry rides in the change's own transaction (``AuditContext``);
/// refusals (401, 403) are buffered, coalesced and written within a second (``RefusalBuffer``); entries past the
/// retention or the row budget are pruned in the background.
final class AuditLog: Sendable {
    let store: any AccessStore
    /// Whose address an entry records.
    let addresses: ClientAddresses
    let metrics: Metrics
    let logger: Logger
    /// What entries are dated with, and the retention measured from.
    let clock: TimeSource
    private let refusals = RefusalBuffer()

    init(store: any AccessStore, addresses: ClientAddresses, metrics: Metrics, logger: Logger, clock: TimeSource) {
        self.store = store
        self.clock = clock
        self.addresses = addresses
        self.metrics = metrics
        self.logger = logger
    }

    /// The context of a changing request by `grant`.
    func context(_ request: borrowing HTTPRequest, grant: Grant, requestID: String) -> AuditContext {
        AuditContext(
            actor: grant.name, tokenID: grant.tokenID, address: addresses.address(of: request), method: request.method.token,
            path: request.path, requestID: requestID, clock: clock)
    }

    /// Records a refused management request (401, 403): buffered, coalesced, written within a second.
    func refuse(_ refusal: AccessRefusal, grant: Grant?, _ request: borrowing HTTPRequest, account: String?) {
        buffer(RefusalEntryMaker(addresses, request, grant: grant, clock: clock).entry(refusal, account: account))
    }

    /// 403 `insufficient_scope` (logged and audited): what the request would make or touch reaches past `grant`.
    func refuseBeyondGrant(_ what: String, grant: Grant, _ request: borrowing HTTPRequest) -> Problem {
        let refusal = AccessRefusal.insufficientScope(.admin, .beyondGrant(what))
        logger.warning("access refused", metadata: ["token": "\(grant.name)", "reason": "\(refusal.description)"])
        refuse(refusal, grant: grant, request, account: nil)
        return .refused(refusal)
    }

    /// Buffers a refusal's entry (``refuse(_:grant:_:account:)``; ``RefusalEntryMaker`` for refusals decided after the
    /// request is gone, as `POST /v1/alerts` decides each rollback).
    func buffer(_ entry: AuditEntry) {
        guard refusals.add(entry) else { return }
        Task { [weak self] in
            try? await Task.sleep(for: .seconds(1))
            await self?.writeRefusals()
        }
    }

    /// Writes the buffered refusals (each adds to its key's entry in the store).
    func writeRefusals() async {
        let (entries, dropped) = refusals.take()
        for entry in entries {
            do throws(StoreError) {
                try await store.appendAudit(entry)
                metrics.auditRefusalWrites.add()
            } catch {
                logger.error("writing an audit entry failed: \(error)")
            }
        }
        if dropped > 0 {
            logger.warning("audit: \(dropped) refusals beyond \(RefusalBuffer.capacity) addresses a second were not recorded")
        }
    }

    /// Deletes entries older than `retentionDays` or beyond the newest `maxRows`, in batches, every minute while the log
    /// lives (a flood of refusals between two runs adds at most 60 written keys a second, ``RefusalBuffer``).
    func pruneInTheBackground(retentionDays: Int, maxRows: Int) {
        let retention = Int64(retentionDays) * 86_400_000
        let rows = Int64(maxRows)
        Task { [weak self] in
            while true {
                do {  // the log is held only while it prunes, never across the sleep
                    guard let log = self else { return }
                    await log.prune(olderThanMillis: retention, keepingNewest: rows)
                }
                try? await Task.sleep(for: .seconds(60))
            }
        }
    }

    /// Deletes entries older than `age` milliseconds or beyond the newest `rows`, 500 at a time (at most 50,000 a call).
    func prune(olderThanMillis age: Int64, keepingNewest rows: Int64) async {
        var pruned = 0
        for _ in 0..<100 {
            let deleted: Int
            do throws(StoreError) {
                deleted = try await store.pruneAudit(beforeMillis: clock.unixMillis - age, keepingNewest: rows, limit: 500)
            } catch {
                logger.error("pruning the audit log failed: \(error)")
                return
            }
            pruned += deleted
            metrics.auditPruned.add(deleted)
            if deleted < 500 { break }
        }
        if pruned > 0 { logger.info("audit: \(pruned) entries older than \(age / 86_400_000) days or beyond the newest \(rows) pruned") }
    }
}
