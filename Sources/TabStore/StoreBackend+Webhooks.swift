import Foundation
import TabAccess
import TabDelivery
import TabWebhooks

/// The webhook endpoints and their outbox (`GET|POST|DELETE /v1/webhooks…` and the delivery worker).
public protocol WebhookStore: Sendable {
    /// Stores a new webhook. - Throws: ``StoreError/conflict`` when its id is taken.
    func createWebhook(_ webhook: StoredWebhook, audit: AuditEntry?) async throws(StoreError)
    /// Every webhook, oldest first.
    func webhooks() async throws(StoreError) -> [StoredWebhook]
    /// One webhook, or nil.
    func webhook(id: String) async throws(StoreError) -> StoredWebhook?
    /// Deletes a webhook and its deliveries. - Throws: ``StoreError/notFound``.
    func deleteWebhook(id: String, audit: AuditEntry?) async throws(StoreError)
    /// Applies `edit` to the webhook `id` in one write transaction and returns the result. - Throws: ``StoreError/notFound``.
    func editWebhook(id: String, audit: AuditEntry?, _ edit: @escaping @Sendable (inout StoredWebhook) -> Void)
        async throws(StoreError)
        -> StoredWebhook
    /// A webhook's deliveries with event ids above `afterEvent`, oldest first, at most `limit`.
    func deliveries(webhookID: String, afterEvent: Int64, limit: Int) async throws(StoreError) -> [StoredDelivery]
    /// Makes a delivery pending again, due at `atMillis`. - Throws: ``StoreError/notFound``.
    func redeliver(webhookID: String, deliveryID: String, atMillis: Int64, audit: AuditEntry?) async throws(StoreError)
        -> StoredDelivery
    /// Claims up to `limit` pending deliveries due at `atMillis` of active webhooks, at most `perWebhook` of one
    /// webhook counting the `busy` attempts the caller has in flight for it: each is pushed `leaseMillis` into the
    /// future in the same transaction, so no other worker (or replica) takes it while it is being sent, and a worker
    /// that dies mid-attempt leaves it due again when the lease ends.
    func claimDueDeliveries(atMillis: Int64, leaseMillis: Int64, limit: Int, perWebhook: Int, busy: [String: Int])
        async throws(StoreError) -> [ClaimedDelivery]
    /// Deletes delivered and failed deliveries made before `beforeMillis` (`--webhook-retention`), at most `limit`.
    func pruneFinishedDeliveries(beforeMillis: Int64, limit: Int) async throws(StoreError) -> Int
    /// Records an attempt's outcome (`delivery` as `Delivery.record` left it); a `disableReason` marks its webhook
    /// inactive in the same transaction (a `410 Gone`).
    func recordAttempt(_ delivery: StoredDelivery, disableReason: String?) async throws(StoreError)
}

/// The rows of ``WebhookStore`` inside one write transaction; each backend implements them.
public protocol WebhookRows {
    func webhooks() throws(StoreError) -> [StoredWebhook]
    /// Inserts or replaces a webhook.
    func save(_ webhook: StoredWebhook) throws(StoreError)
    /// Deletes a webhook and its deliveries; false when there was none.
    func deleteWebhook(id: String) throws(StoreError) -> Bool
    /// The highest event id any delivery carries (0 when none).
    func lastEventID() throws(StoreError) -> Int64
    /// Inserts a new delivery.
    func insert(_ delivery: StoredDelivery) throws(StoreError)
    /// Updates a delivery's state (never its payload).
    func update(_ delivery: Delivery) throws(StoreError)
    func delivery(id: String) throws(StoreError) -> StoredDelivery?
    func deliveries(webhookID: String, afterEvent: Int64, limit: Int) throws(StoreError) -> [StoredDelivery]
    /// Pending deliveries of active webhooks due at `atMillis`, at most `perWebhook` of each, soonest first;
    /// PostgreSQL locks them (`FOR UPDATE SKIP LOCKED`), so that concurrent claimers take different rows.
    func dueDeliveries(atMillis: Int64, perWebhook: Int, limit: Int) throws(StoreError) -> [StoredDelivery]
    /// Deletes at most `limit` delivered or failed deliveries made before `beforeMillis`; returns how many.
    func pruneFinishedDeliveries(beforeMillis: Int64, limit: Int) throws(StoreError) -> Int
}

extension StoreBackend {
    public func createWebhook(_ webhook: StoredWebhook, audit: AuditEntry?) async throws(StoreError) {
        try await transaction { (rows) throws(StoreError) in
            guard try !rows.webhooks().contains(where: { $0.id == webhook.id }) else { throw .conflict }
            try rows.save(webhook)
            try WriteRule.record(audit, version: nil, rows)
        }
    }

    public func webhooks() async throws(StoreError) -> [StoredWebhook] {
        try await transaction { (rows) throws(StoreError) in try rows.webhooks() }
    }

    public func webhook(id: String) async throws(StoreError) -> StoredWebhook? {
        try await transaction { (rows) throws(StoreError) in try rows.webhooks().first { $0.id == id } }
    }

    public func deleteWebhook(id: String, audit: AuditEntry?) async throws(StoreError) {
        try await transaction { (rows) throws(StoreError) in
            guard try rows.deleteWebhook(id: id) else { throw .notFound }
            try WriteRule.record(audit, version: nil, rows)
        }
    }

    public func editWebhook(
        id: String, audit: AuditEntry?, _ edit: @escaping @Sendable (inout StoredWebhook) -> Void
    ) async throws(StoreError) -> StoredWebhook {
        try await transaction { (rows) throws(StoreError) -> StoredWebhook in
            guard var webhook = try rows.webhooks().first(where: { $0.id == id }) else { throw .notFound }
            edit(&webhook)
            webhook.id = id
            try rows.save(webhook)
            try WriteRule.record(audit, version: nil, rows)
            return webhook
        }
    }

    public func deliveries(webhookID: String, afterEvent: Int64, limit: Int) async throws(StoreError) -> [StoredDelivery] {
        try await transaction { (rows) throws(StoreError) in try rows.deliveries(webhookID: webhookID, afterEvent: afterEvent, limit: limit)
        }
    }

    public func redeliver(
        webhookID: String, deliveryID: String, atMillis: Int64, audit: AuditEntry?
    ) async throws(StoreError) -> StoredDelivery {
        try await transaction { (rows) throws(StoreError) -> StoredDelivery in
            guard var stored = try rows.delivery(id: deliveryID), stored.delivery.webhookID == webhookID else { throw .notFound }
            stored.delivery.redeliver(at: Date(millis: atMillis))
            try rows.update(stored.delivery)
            try WriteRule.record(audit, version: nil, rows)
            return stored
        }
    }

    public func claimDueDeliveries(atMillis: Int64, leaseMillis: Int64, limit: Int, perWebhook: Int, busy: [String: Int])
        async throws(StoreError) -> [ClaimedDelivery]
    {
        try await transaction { (rows) throws(StoreError) -> [ClaimedDelivery] in
            // Rows of busy webhooks may come first and be skipped: fetch enough to fill `limit` past them.
            let skippable = busy.values.reduce(0) { $0 + min($1, perWebhook) }
            let due = try rows.dueDeliveries(atMillis: atMillis, perWebhook: perWebhook, limit: limit + skippable)
            guard !due.isEmpty else { return [] }
            let webhooks = Dictionary(try rows.webhooks().map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var claimed: [ClaimedDelivery] = []
            var inFlight = busy
            for var stored in due where claimed.count < limit {
                guard let webhook = webhooks[stored.delivery.webhookID] else { continue }
                guard inFlight[webhook.id, default: 0] < perWebhook else { continue }
                inFlight[webhook.id, default: 0] += 1
                var leased = stored.delivery
                leased.nextAttemptAt = Date(millis: atMillis + leaseMillis)
                try rows.update(leased)
                stored.delivery = leased
                claimed.append(ClaimedDelivery(delivery: stored, webhook: webhook))
            }
            return claimed
        }
    }

    public func pruneFinishedDeliveries(beforeMillis: Int64, limit: Int) async throws(StoreError) -> Int {
        try await transaction { (rows) throws(StoreError) in try rows.pruneFinishedDeliveries(beforeMillis: beforeMillis, limit: limit) }
    }

    public func recordAttempt(_ delivery: StoredDelivery, disableReason: String?) async throws(StoreError) {
        try await transaction { (rows) throws(StoreError) in
            guard try rows.delivery(id: delivery.delivery.id) != nil else { return }  // its webhook was deleted meanwhile
            try rows.update(delivery.delivery)
            if let disableReason, var webhook = try rows.webhooks().first(where: { $0.id == delivery.delivery.webhookID }) {
                webhook.active = false
                webhook.disabledReason = disableReason
                try rows.save(webhook)
            }
        }
    }

    /// Runs `body` as one write transaction on the store's thread, with its deadline (the webhooks', pointers' and
    /// rollouts' calls).
    func transaction<R: Sendable>(_ body: @escaping @Sendable (any StoreRows) throws(StoreError) -> R) async throws(StoreError) -> R {
        try await executor.run { () throws(StoreError) in try self.writeTransaction(body) }
    }
}

/// The outbox half of the write rule: inside the change's transaction, one pending delivery per active webhook
/// that wants the change, with the exact payload every attempt will send. The change and its deliveries commit
/// together or not at all.
enum Outbox {
    static func enqueue(layout record: StoredVersion, environment: String, _ rows: any StoreRows) throws(StoreError) {
        let event = try? WebhookEvent(
            kind: .layout, account: record.account, timestamp: Date(millis: record.createdAtMillis),
            data: ChangeEventData.layout(record, environment: environment))
        try enqueue(event, atMillis: record.createdAtMillis, rows)
    }

    static func enqueue(strings record: StoredStrings, environment: String, _ rows: any StoreRows) throws(StoreError) {
        let event = try? WebhookEvent(
            kind: .strings, account: nil, timestamp: Date(millis: record.createdAtMillis),
            data: ChangeEventData.strings(record, environment: environment))
        try enqueue(event, atMillis: record.createdAtMillis, rows)
    }

    /// A rollout's change (`rollout.<state>`), its data the `event: rollout` of `/v1/events`.
    static func enqueue(_ rollout: RolloutEvent, _ rows: any StoreRows) throws(StoreError) {
        let now = rows.clock.unixMillis
        let event = try? WebhookEvent(
            kind: .rollout, account: rollout.account, rolloutState: rollout.state.rawValue, timestamp: Date(millis: now), data: rollout.json
        )
        try enqueue(event, atMillis: now, rows)
    }

    /// A change request's transition (`change-request.<state>`), its data the `event: change-request` of `/v1/events`.
    static func enqueue(changeRequest data: [UInt8], account: String, state: String, _ rows: any StoreRows) throws(StoreError) {
        let now = rows.clock.unixMillis
        let event = try? WebhookEvent(kind: .changeRequest, account: account, rolloutState: state, timestamp: Date(millis: now), data: data)
        try enqueue(event, atMillis: now, rows)
    }

    /// A revocation's change (`layout.revoked` or `layout.unrevoked`), its data the `event: revoke` of `/v1/events`.
    static func enqueue(revocation: StoredRevocation, revoked: Bool, data: [UInt8], _ rows: any StoreRows) throws(StoreError) {
        let now = revocation.changedAtMillis
        let event = try? WebhookEvent(
            kind: .revoke, account: revocation.account, rolloutState: revoked ? "revoked" : "unrevoked", timestamp: Date(millis: now),
            data: data)
        try enqueue(event, atMillis: now, rows)
    }

    /// A promotion (`promote`), its data the `event: promote` of `/v1/events`.
    static func enqueue(
        promotion record: StoredVersion, from: String, to: String, author: String, atMillis now: Int64, _ rows: any StoreRows
    ) throws(StoreError) {
        let event = try? WebhookEvent(
            kind: .promote, account: record.account, timestamp: Date(millis: now),
            data: ChangeEventData.promotion(record, from: from, to: to, author: author, atMillis: now))
        try enqueue(event, atMillis: now, rows)
    }

    private static func enqueue(_ event: WebhookEvent?, atMillis: Int64, _ rows: any StoreRows) throws(StoreError) {
        guard let event else { throw .unavailable("a change event's data is not a JSON object") }  // ChangeEventData writes one
        let wanting = try rows.webhooks().filter { $0.active && $0.subscription?.wants(event) == true }
        guard !wanting.isEmpty else { return }
        let eventID = try rows.lastEventID() + 1
        let body = event.body
        for webhook in wanting {
            let delivery = Delivery(
                id: WebhookSignature.newMessageID(), webhookID: webhook.id, eventID: eventID, type: event.type, at: Date(millis: atMillis))
            try rows.insert(StoredDelivery(delivery: delivery, payload: body))
        }
    }
}

extension WebhookStore {
    /// ``claimDueDeliveries(atMillis:leaseMillis:limit:perWebhook:busy:)`` with nothing in flight and no limit per webhook.
    public func claimDueDeliveries(atMillis: Int64, leaseMillis: Int64, limit: Int) async throws(StoreError) -> [ClaimedDelivery] {
        try await claimDueDeliveries(atMillis: atMillis, leaseMillis: leaseMillis, limit: limit, perWebhook: limit, busy: [:])
    }

    /// ``createWebhook(_:audit:)`` without an audit entry (stores written outside a request: tests, `migrate`).
    public func createWebhook(_ webhook: StoredWebhook) async throws(StoreError) { try await createWebhook(webhook, audit: nil) }
    /// ``deleteWebhook(id:audit:)`` without an audit entry.
    public func deleteWebhook(id: String) async throws(StoreError) { try await deleteWebhook(id: id, audit: nil) }
    /// ``editWebhook(id:audit:_:)`` without an audit entry.
    public func editWebhook(id: String, _ edit: @escaping @Sendable (inout StoredWebhook) -> Void) async throws(StoreError)
        -> StoredWebhook
    { try await editWebhook(id: id, audit: nil, edit) }
    /// ``redeliver(webhookID:deliveryID:atMillis:audit:)`` without an audit entry.
    public func redeliver(webhookID: String, deliveryID: String, atMillis: Int64) async throws(StoreError) -> StoredDelivery {
        try await redeliver(webhookID: webhookID, deliveryID: deliveryID, atMillis: atMillis, audit: nil)
    }
}
