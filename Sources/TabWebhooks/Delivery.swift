import Foundation
import TabAccess

/// One event's delivery to one webhook, as the outbox keeps it and `GET /v1/webhooks/{id}/deliveries` lists it.
public struct Delivery: Sendable, Equatable, Encodable {
    /// Where a delivery stands.
    public enum State: String, Sendable, Equatable, Codable {
        /// Waiting for its next attempt at `nextAttemptAt`.
        case pending
        /// A 2xx came back.
        case delivered
        /// The schedule ran out, or the receiver answered `410 Gone`.
        case failed
    }

    /// The message id, sent as `webhook-id` on every attempt.
    public let id: String
    /// The webhook it goes to.
    public let webhookID: String
    /// The event it carries (its sequence number).
    public let eventID: Int64
    /// The event's `type`.
    public let type: String
    /// Attempts made so far.
    public var attempts: Int
    /// Where it stands.
    public var state: State
    /// The status of the last answer, if one came.
    public var lastStatus: Int?
    /// Why the last attempt got no answer, if it got none.
    public var lastError: String?
    /// When the next attempt is due; nil once delivered or failed.
    public var nextAttemptAt: Date?
    /// When the delivery was made (with its event).
    public let at: Date

    /// A new pending delivery, due at once.
    public init(id: String, webhookID: String, eventID: Int64, type: String, at: Date) {
        self.init(
            id: id, webhookID: webhookID, eventID: eventID, type: type, attempts: 0, state: .pending, lastStatus: nil, lastError: nil,
            nextAttemptAt: at, at: at)
    }

    /// A delivery as read back from the store.
    public init(
        id: String, webhookID: String, eventID: Int64, type: String, attempts: Int, state: State, lastStatus: Int?, lastError: String?,
        nextAttemptAt: Date?, at: Date
    ) {
        self.id = id
        self.webhookID = webhookID
        self.eventID = eventID
        self.type = type
        self.attempts = attempts
        self.state = state
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.at = at
    }

    /// Records the answer to an attempt made at `now` and returns what follows (the caller disables the webhook
    /// on `.disableWebhook`).
    public mutating func record(_ answer: DeliveryAnswer, at now: Date) -> DeliveryStep {
        attempts += 1
        switch answer {
        case .status(let status):
            lastStatus = status
            lastError = nil
        case .noAnswer(let reason):
            lastStatus = nil
            lastError = reason
        }
        let step = RetrySchedule.next(after: attempts, answer: answer)
        switch step {
        case .delivered:
            state = .delivered
            nextAttemptAt = nil
        case .retry(let seconds):
            state = .pending
            nextAttemptAt = now.addingTimeInterval(TimeInterval(seconds))
        case .failed, .disableWebhook:
            state = .failed
            nextAttemptAt = nil
        }
        return step
    }

    /// `POST …/deliveries/{d}/redeliver`: pending again, due at `now`. Attempts keep counting, so a redelivery of
    /// a failed delivery that fails again is failed again (no new round of the schedule).
    public mutating func redeliver(at now: Date) {
        state = .pending
        nextAttemptAt = now
    }

    enum CodingKeys: String, CodingKey {
        case id, webhookID = "webhookId", eventID = "eventId", type, attempts, state, lastStatus, lastError, nextAttemptAt, at
    }

    /// The fields of `GET …/deliveries`, absent values as null and times in RFC 3339.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(webhookID, forKey: .webhookID)
        try container.encode(eventID, forKey: .eventID)
        try container.encode(type, forKey: .type)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(state, forKey: .state)
        try container.encode(lastStatus, forKey: .lastStatus)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(nextAttemptAt.map(RFC3339.string(from:)), forKey: .nextAttemptAt)
        try container.encode(RFC3339.string(from: at), forKey: .at)
    }
}
