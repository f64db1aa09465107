import TabStore
import TabWebhooks

/// ``WebhookRows`` on PostgreSQL. Writers hold the store's advisory lock already; the claim also locks the rows it
/// takes (`FOR UPDATE SKIP LOCKED`), so that claimers on every replica take different deliveries whatever else
/// serializes them.
extension PGRows {
    /// Cells of the shared SQL (webhooks, pointers, rollouts) as PostgreSQL parameters.
    static func bind(_ cells: [WebhookSQL.Cell]) -> [PGValue] {
        cells.map { cell in
            switch cell {
            case .text(let text): .optional(text)
            case .int(let number): .optional(number.map { String($0) })
            case .bytes(let bytes): .bytes(bytes)
            }
        }
    }

    /// Runs shared SQL written with `?` placeholders.
    func run(_ sql: String, _ parameters: [PGValue]) throws(StoreError) -> [[PGValue]] {
        try db.execute(WebhookSQL.numbered(sql), parameters)
    }

    private func deliveryRows(_ sql: String, _ parameters: [PGValue]) throws(StoreError) -> [StoredDelivery] {
        try run(sql, parameters).map { (row) throws(StoreError) -> StoredDelivery in
            try WebhookSQL.delivery(row.prefix(10).map(\.text), payload: row.count > 10 ? row[10].bytea : [])
        }
    }

    func webhooks() throws(StoreError) -> [StoredWebhook] {
        try run(WebhookSQL.selectWebhooks, []).map { (row) throws(StoreError) -> StoredWebhook in try WebhookSQL.webhook(row.map(\.text)) }
    }

    func save(_ webhook: StoredWebhook) throws(StoreError) { _ = try run(WebhookSQL.upsertWebhook, Self.bind(WebhookSQL.cells(webhook))) }

    func deleteWebhook(id: String) throws(StoreError) -> Bool {
        guard try webhooks().contains(where: { $0.id == id }) else { return false }
        _ = try run(WebhookSQL.deleteDeliveriesOfWebhook, [.text(id)])
        _ = try run(WebhookSQL.deleteWebhook, [.text(id)])
        return true
    }

    func lastEventID() throws(StoreError) -> Int64 { Int64(try run(WebhookSQL.lastEventID, []).first?.first?.text ?? "0") ?? 0 }

    func insert(_ delivery: StoredDelivery) throws(StoreError) {
        _ = try run(WebhookSQL.insertDelivery, Self.bind(WebhookSQL.cells(delivery, atMillis: clock.unixMillis)))
    }

    func update(_ delivery: Delivery) throws(StoreError) {
        _ = try run(WebhookSQL.updateDelivery, Self.bind(WebhookSQL.updateCells(delivery, atMillis: clock.unixMillis)))
    }

    func delivery(id: String) throws(StoreError) -> StoredDelivery? { try deliveryRows(WebhookSQL.selectDelivery, [.text(id)]).first }

    func deliveries(webhookID: String, afterEvent: Int64, limit: Int) throws(StoreError) -> [StoredDelivery] {
        try deliveryRows(WebhookSQL.selectDeliveries, [.text(webhookID), .text(String(afterEvent)), .text(String(limit))])
    }

    func dueDeliveries(atMillis: Int64, perWebhook: Int, limit: Int) throws(StoreError) -> [StoredDelivery] {
        try deliveryRows(
            WebhookSQL.selectDue + " FOR UPDATE SKIP LOCKED", [.text(String(atMillis)), .text(String(perWebhook)), .text(String(limit))])
    }

    func pruneFinishedDeliveries(beforeMillis: Int64, limit: Int) throws(StoreError) -> Int {
        let sql = "WITH pruned AS (\(WebhookSQL.pruneFinished) RETURNING 1) SELECT count(*) FROM pruned"
        return Int(try run(sql, [.text(String(beforeMillis)), .text(String(limit))]).first?.first?.text ?? "0") ?? 0
    }
}
