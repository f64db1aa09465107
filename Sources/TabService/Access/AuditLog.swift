import Foundation
import MicroHTTPD
import Synchronization
import TabAccess
import TabStore

/// Who is changing something, and from where: set around a changing route's work (``TabService/serve(_:)``) so that
/// the handler's store write carries its audit entry into the change's own transaction.
struct AuditContext: Sendable {
    @TaskLocal static var current: AuditContext?

    let actor: String
    let tokenID: TokenID?
    let address: String
    let method: String
    let path: String
    let requestID: String

    /// The entry of a change: `action` on `account` answered with `status` (the store adds the version made).
    func entry(action: String, account: String?, status: Int) -> AuditEntry {
        AuditEntry(
            at: Date(), actor: actor, tokenID: tokenID, address: address, method: method, path: path,
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

    init(_ service: TabService, _ request: borrowing HTTPRequest, grant: Grant?) {
        self.grant = grant
        address = service.clientAddress(request)
        method = request.method.token
        path = request.path
    }

    /// The entry of `refusal` about `account` in `environment`, now.
    func entry(_ refusal: AccessRefusal, account: String?, environment: String? = nil) -> AuditEntry {
        AuditEntry.refusal(
            refusal, grant: grant, at: Date(), address: address, method: method, path: path, account: account,
            environment: environment)
    }
}

extension TabService {
    /// The context of a changing request by `grant`.
    func auditContext(_ request: borrowing HTTPRequest, grant: Grant, requestID: String) -> AuditContext {
        AuditContext(
            actor: grant.name, tokenID: grant.tokenID, address: clientAddress(request), method: request.method.token,
            path: request.path, requestID: requestID)
    }

    /// Records a refused management request (401, 403): buffered, coalesced, written within a second.
    func auditRefusal(_ refusal: AccessRefusal, grant: Grant?, _ request: borrowing HTTPRequest, account: String?) {
        bufferRefusal(RefusalEntryMaker(self, request, grant: grant).entry(refusal, account: account))
    }

    /// Buffers a refusal's entry (``auditRefusal(_:grant:_:account:)``; ``RefusalEntryMaker`` for refusals decided
    /// after the request is gone, as `POST /v1/alerts` decides each rollback).
    func bufferRefusal(_ entry: AuditEntry) {
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

    /// `GET /v1/audit?after=&limit=&account=&actor=`: oldest first, only the entries the token may read.
    func auditRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let query: AuditQuery
        do throws(InvalidFields) {
            let names = ["after", "limit", "account", "actor"]
            query = try AuditQuery(parameters: names.compactMap { name in request.query(name).map { (name, $0) } })
        } catch {
            return .response(Self.invalidFields(error, what: "audit query", kind: .badRequest))
        }
        let grant = match.grant
        return .deferred {
            var readable: [AuditEntry] = []
            var after = query.after?.afterID ?? 0
            var examined = 0
            // Entries the token may not read are skipped; more are fetched until the page (and one more) is full, or
            // until a page's worth of work is done: then the page ends there and `next` continues after the last row
            // examined, so that a narrow token's page costs a bounded read, never a walk of the whole log.
            let batchSize = max(query.limit + 1, 200)
            while readable.count <= query.limit {
                let batch: [AuditEntry]
                do throws(StoreError) {
                    batch = try await self.store.audit(afterID: after, limit: batchSize, account: query.account, actor: query.actor)
                } catch {
                    return self.storeProblem(error)
                }
                examined += batch.count
                for entry in batch {
                    after = entry.id
                    if grant?.mayRead(entry) ?? true { readable.append(entry) }
                    if readable.count > query.limit { break }
                }
                guard batch.count == batchSize else { break }
                if examined >= AuditQuery.maximumExamined, readable.count <= query.limit {
                    return Self.tokenJSON(200, AuditPage(entries: readable, next: AuditCursor(after: after)))
                }
            }
            return Self.tokenJSON(200, AuditPage(fetched: readable, limit: query.limit))
        }
    }

    /// Deletes entries older than the retention or beyond the row budget, in batches, every minute while the service
    /// lives (a flood of refusals between two runs adds at most 60 written keys a second, ``RefusalBuffer``).
    func pruneAuditInTheBackground() {
        let retention = Int64(configuration.auditRetentionDays) * 86_400_000
        let rows = Int64(configuration.auditMaxRows)
        Task { [weak self] in
            while true {
                do {  // the service is held only while it prunes, never across the sleep
                    guard let service = self else { return }
                    await service.pruneAudit(olderThanMillis: retention, keepingNewest: rows)
                }
                try? await Task.sleep(for: .seconds(60))
            }
        }
    }

    /// Deletes entries older than `age` milliseconds or beyond the newest `rows`, 500 at a time (at most 50,000 a call).
    func pruneAudit(olderThanMillis age: Int64, keepingNewest rows: Int64) async {
        var pruned = 0
        for _ in 0..<100 {
            let deleted: Int
            do throws(StoreError) {
                deleted = try await store.pruneAudit(beforeMillis: currentTimeMillis() - age, keepingNewest: rows, limit: 500)
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
