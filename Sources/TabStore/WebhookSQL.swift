import Foundation
import TabWebhooks

/// The webhook tables' SQL, once for SQLite and PostgreSQL (`?` placeholders; ``numbered(_:)`` gives
/// PostgreSQL's `$1…`), and their rows as text cells (numbers in decimal) plus the payload's bytes.
public enum WebhookSQL {
    /// A value bound to a statement.
    public enum Cell: Sendable, Equatable {
        case text(String?)
        case int(Int64?)
        case bytes([UInt8])
    }

    static let webhookColumns =
        "id, url, events, accounts, secret, previous_secret, previous_until_ms, active, disabled_reason, created_at_ms, created_by"
    static let deliveryColumns =
        "id, webhook_id, event_id, type, attempts, state, last_status, last_error, next_attempt_ms, at_ms, payload"

    public static let selectWebhooks = "SELECT \(webhookColumns) FROM webhooks ORDER BY created_at_ms, id"
    public static let upsertWebhook = """
        INSERT INTO webhooks (\(webhookColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO UPDATE SET url = excluded.url, events = excluded.events, accounts = excluded.accounts,
        secret = excluded.secret, previous_secret = excluded.previous_secret, previous_until_ms = excluded.previous_until_ms,
        active = excluded.active, disabled_reason = excluded.disabled_reason
        """
    public static let deleteDeliveriesOfWebhook = "DELETE FROM webhook_deliveries WHERE webhook_id = ?"
    public static let deleteWebhook = "DELETE FROM webhooks WHERE id = ?"
    public static let lastEventID = "SELECT COALESCE(MAX(event_id), 0) FROM webhook_deliveries"
    public static let insertDelivery =
        "INSERT INTO webhook_deliveries (\(deliveryColumns), updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    public static let updateDelivery = """
        UPDATE webhook_deliveries SET attempts = ?, state = ?, last_status = ?, last_error = ?, next_attempt_ms = ?, updated_at_ms = ?
        WHERE id = ?
        """
    public static let selectDelivery = "SELECT \(deliveryColumns) FROM webhook_deliveries WHERE id = ?"
    public static let selectDeliveries =
        "SELECT \(deliveryColumns) FROM webhook_deliveries WHERE webhook_id = ? AND event_id > ? ORDER BY event_id LIMIT ?"
    /// Due deliveries, at most `?` (the second parameter) of each webhook, soonest first; PostgreSQL appends
    /// `FOR UPDATE SKIP LOCKED` (allowed on the outer query, which has no window function).
    public static let selectDue = """
        SELECT \(deliveryColumns) FROM webhook_deliveries WHERE id IN (
            SELECT id FROM (
                SELECT id, ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY next_attempt_ms, event_id) AS n
                FROM webhook_deliveries
                WHERE state = 'pending' AND next_attempt_ms <= ? AND webhook_id IN (SELECT id FROM webhooks WHERE active = 1)
            ) AS ranked WHERE n <= ?)
        ORDER BY next_attempt_ms, event_id LIMIT ?
        """
    /// Deletes at most `?` (the second) delivered or failed deliveries made before `?` (the first), never the one with
    /// the highest event id (the next event's id follows it).
    public static let pruneFinished = """
        DELETE FROM webhook_deliveries WHERE id IN (
            SELECT id FROM webhook_deliveries
            WHERE state IN ('delivered', 'failed') AND at_ms < ?
            AND event_id < (SELECT MAX(event_id) FROM webhook_deliveries)
            ORDER BY at_ms LIMIT ?)
        """

    /// `sql` with its `?` placeholders numbered `$1`, `$2`, … (none of these statements has `?` elsewhere).
    public static func numbered(_ sql: String) -> String {
        var out = ""
        var n = 0
        for character in sql {
            if character == "?" {
                n += 1
                out += "$\(n)"
            } else {
                out.append(character)
            }
        }
        return out
    }

    public static func cells(_ w: StoredWebhook) -> [Cell] {
        [
            .text(w.id), .text(w.url), .text(w.events.joined(separator: " ")), .text(w.accounts.joined(separator: " ")), .text(w.secret),
            .text(w.previousSecret), .int(w.previousUntilMillis), .int(w.active ? 1 : 0), .text(w.disabledReason),
            .int(w.createdAtMillis), .text(w.createdBy),
        ]
    }

    /// The cells of a new delivery (`insertDelivery`), its row written at `millis`.
    public static func cells(_ stored: StoredDelivery, atMillis millis: Int64) -> [Cell] {
        let d = stored.delivery
        return [
            .text(d.id), .text(d.webhookID), .int(d.eventID), .text(d.type), .int(Int64(d.attempts)), .text(d.state.rawValue),
            .int(d.lastStatus.map(Int64.init)), .text(d.lastError), .int(d.nextAttemptAt?.millis), .int(d.at.millis),
            .bytes(stored.payload), .int(millis),
        ]
    }

    /// The cells of `updateDelivery`, the row updated at `millis`.
    public static func updateCells(_ d: Delivery, atMillis millis: Int64) -> [Cell] {
        [
            .int(Int64(d.attempts)), .text(d.state.rawValue), .int(d.lastStatus.map(Int64.init)), .text(d.lastError),
            .int(d.nextAttemptAt?.millis), .int(millis), .text(d.id),
        ]
    }

    /// A `webhooks` row read as text cells.
    public static func webhook(_ cells: [String?]) throws(StoreError) -> StoredWebhook {
        let row = TextCells(cells: cells, row: "webhook row")
        return StoredWebhook(
            id: try row.required(0), url: try row.required(1), events: try row.required(2).split(separator: " ").map(String.init),
            accounts: try row.required(3).split(separator: " ").map(String.init), secret: try row.required(4), previousSecret: cells[5],
            previousUntilMillis: cells[6].flatMap { Int64($0) }, active: try row.number(7) != 0, disabledReason: cells[8],
            createdAtMillis: try row.number(9), createdBy: cells[10])
    }

    /// A `webhook_deliveries` row: its first ten columns as text cells, and the payload.
    public static func delivery(_ cells: [String?], payload: [UInt8]) throws(StoreError) -> StoredDelivery {
        let row = TextCells(cells: cells, row: "delivery row")
        guard let state = Delivery.State(rawValue: try row.required(5)) else { throw .unavailable("delivery row: unknown state") }
        let delivery = Delivery(
            id: try row.required(0), webhookID: try row.required(1), eventID: try row.number(2), type: try row.required(3),
            attempts: Int(try row.number(4)),
            state: state, lastStatus: cells[6].flatMap { Int($0) }, lastError: cells[7],
            nextAttemptAt: cells[8].flatMap { Int64($0) }.map { Date(millis: $0) }, at: Date(millis: try row.number(9)))
        return StoredDelivery(delivery: delivery, payload: payload)
    }
}
