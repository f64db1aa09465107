import TabWebhooks

/// ``WebhookRows`` on SQLite (inside `BEGIN IMMEDIATE`: one claimer at a time, so no row locks are needed).
extension SQLiteRows {
    /// Cells of the shared SQL (webhooks, pointers, rollouts) as SQLite values.
    static func bind(_ cells: [WebhookSQL.Cell]) -> [SQLiteValue] {
        cells.map { cell in
            switch cell {
            case .text(let text): text.map { .text($0) } ?? .null
            case .int(let number): number.map { .int64($0) } ?? .null
            case .bytes(let bytes): .blob(bytes)
            }
        }
    }

    private func deliveryRows(_ sql: String, _ parameters: [SQLiteValue]) throws(StoreError) -> [StoredDelivery] {
        try db.query(sql, parameters) { (row) throws(StoreError) -> StoredDelivery in
            try WebhookSQL.delivery((0..<10).map { row.text($0) }, payload: row.blob(10))
        }
    }

    func webhooks() throws(StoreError) -> [StoredWebhook] {
        try db.query(WebhookSQL.selectWebhooks, []) { (row) throws(StoreError) -> StoredWebhook in
            try WebhookSQL.webhook((0..<11).map { row.text($0) })
        }
    }

    func save(_ webhook: StoredWebhook) throws(StoreError) { try db.run(WebhookSQL.upsertWebhook, Self.bind(WebhookSQL.cells(webhook))) }

    func deleteWebhook(id: String) throws(StoreError) -> Bool {
        guard try webhooks().contains(where: { $0.id == id }) else { return false }
        try db.run(WebhookSQL.deleteDeliveriesOfWebhook, [.text(id)])
        try db.run(WebhookSQL.deleteWebhook, [.text(id)])
        return true
    }

    func lastEventID() throws(StoreError) -> Int64 { try db.query(WebhookSQL.lastEventID, []) { $0.int64(0) }.first ?? 0 }

    func insert(_ delivery: StoredDelivery) throws(StoreError) {
        try db.run(WebhookSQL.insertDelivery, Self.bind(WebhookSQL.cells(delivery, atMillis: clock.unixMillis)))
    }

    func update(_ delivery: Delivery) throws(StoreError) {
        try db.run(WebhookSQL.updateDelivery, Self.bind(WebhookSQL.updateCells(delivery, atMillis: clock.unixMillis)))
    }

    func delivery(id: String) throws(StoreError) -> StoredDelivery? { try deliveryRows(WebhookSQL.selectDelivery, [.text(id)]).first }

    func deliveries(webhookID: String, afterEvent: Int64, limit: Int) throws(StoreError) -> [StoredDelivery] {
        try deliveryRows(WebhookSQL.selectDeliveries, [.text(webhookID), .int64(afterEvent), .int(limit)])
    }

    func dueDeliveries(atMillis: Int64, perWebhook: Int, limit: Int) throws(StoreError) -> [StoredDelivery] {
        try deliveryRows(WebhookSQL.selectDue, [.int64(atMillis), .int(perWebhook), .int(limit)])
    }

    func pruneFinishedDeliveries(beforeMillis: Int64, limit: Int) throws(StoreError) -> Int {
        try db.run(WebhookSQL.pruneFinished, [.int64(beforeMillis), .int(limit)])
        return try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0
    }
}
