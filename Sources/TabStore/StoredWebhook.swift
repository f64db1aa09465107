import Foundation
import TabAccess
import TabTime
import TabWebhooks

/// A webhook as the store keeps it (`webhooks`): where it delivers, what it wants, its signing secrets (the
/// current one and, for 24 h after a rotation, the one it replaced) and whether it is active.
public struct StoredWebhook: Sendable, Equatable {
    /// `wh_` and 128 random bits.
    public var id: String
    /// The URL as given (checked by `WebhookURL` and the address policy when it was made).
    public var url: String
    /// The event kinds wanted (`layout`, `strings`, `rollout`, `promote`).
    public var events: [String]
    /// The account globs wanted (`*` for all).
    public var accounts: [String]
    /// The current secret, `whsec_…` (kept as text: deliveries are signed with it).
    public var secret: String
    /// The secret a rotation replaced, and when it stops signing.
    public var previousSecret: String?
    public var previousUntilMillis: Int64?
    /// False once a receiver answered `410 Gone`; `disabledReason` says why.
    public var active: Bool
    public var disabledReason: String?
    public var createdAtMillis: Int64
    /// The name behind the token that made it.
    public var createdBy: String?

    public init(
        id: String, url: String, events: [String], accounts: [String], secret: String, previousSecret: String? = nil,
        previousUntilMillis: Int64? = nil, active: Bool = true, disabledReason: String? = nil, createdAtMillis: Int64, createdBy: String?
    ) {
        self.id = id
        self.url = url
        self.events = events
        self.accounts = accounts
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousUntilMillis = previousUntilMillis
        self.active = active
        self.disabledReason = disabledReason
        self.createdAtMillis = createdAtMillis
        self.createdBy = createdBy
    }

    /// A new webhook id: `wh_` and 128 random bits, URL-safe.
    public static func newID() -> String { "wh_" + WebhookSignature.newMessageID().dropFirst("msg_".count) }

    /// What it subscribes to; nil when a stored glob or event no longer reads (never written so).
    public var subscription: WebhookSubscription? {
        let kinds = events.compactMap(WebhookEvent.Kind.init(rawValue:))
        let globs = accounts.compactMap { try? AccountGlob($0) }
        guard kinds.count == events.count, globs.count == accounts.count, !globs.isEmpty else { return nil }
        return WebhookSubscription(events: Set(kinds), accounts: globs)
    }

    /// The secrets that sign a delivery at `now` (the previous one only during its overlap).
    public func keyring() -> WebhookKeyring? {
        guard let current = WebhookSecret(secret) else { return nil }
        guard let previousSecret, let until = previousUntilMillis, let previous = WebhookSecret(previousSecret) else {
            return WebhookKeyring(current: current)
        }
        return WebhookKeyring(current: current, previous: (previous, Date(millis: until)))
    }
}

/// One outbox row (`webhook_deliveries`): the delivery's state and the exact bytes every attempt sends.
public struct StoredDelivery: Sendable, Equatable {
    public var delivery: Delivery
    /// The signed body, written with the change.
    public var payload: [UInt8]

    public init(delivery: Delivery, payload: [UInt8]) {
        self.delivery = delivery
        self.payload = payload
    }
}

/// A due delivery claimed by one worker, with the webhook it goes to.
public struct ClaimedDelivery: Sendable, Equatable {
    public var delivery: StoredDelivery
    public var webhook: StoredWebhook

    public init(delivery: StoredDelivery, webhook: StoredWebhook) {
        self.delivery = delivery
        self.webhook = webhook
    }
}

extension Date {
    /// The instant `millis` milliseconds after 1970-01-01 UTC.
    public init(millis: Int64) { self.init(timeIntervalSince1970: TimeInterval(millis) / 1000) }

    /// Milliseconds since 1970-01-01 UTC, rounded down (as ``TimeSource/unixMillis``).
    public var millis: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
}

extension TimeSource {
    /// The wall-clock instant now as a Foundation `Date`, to the millisecond (what TabAccess and TabWebhooks take).
    public var date: Date { Date(millis: unixMillis) }
}
