import Foundation

/// A webhook's secrets: the current one, and after a rotation the previous one for 24 hours, during which
/// deliveries carry a signature by each (receivers switch keys without missing a delivery).
public struct WebhookKeyring: Sendable, Equatable {
    /// How long a replaced secret keeps signing.
    public static let overlapSeconds: TimeInterval = 24 * 3600

    /// The secret made last.
    public private(set) var current: WebhookSecret
    /// The secret it replaced and when that stops signing; nil when there is none.
    public private(set) var previous: (secret: WebhookSecret, until: Date)?

    /// A keyring holding `current` (and `previous` until `until`, as read back from the store).
    public init(current: WebhookSecret, previous: (secret: WebhookSecret, until: Date)? = nil) {
        self.current = current
        self.previous = previous
    }

    /// `POST /v1/webhooks/{id}/rotate-secret`: a new current secret; the old one signs for 24 h more. A previous
    /// secret still in its overlap is dropped (two rotations within a day keep the two newest).
    public mutating func rotate(at now: Date) -> WebhookSecret {
        let new = WebhookSecret.generate()
        previous = (current, now.addingTimeInterval(Self.overlapSeconds))
        current = new
        return new
    }

    /// The secrets that sign a delivery at `now`, the current first.
    public func signingSecrets(at now: Date) -> [WebhookSecret] {
        guard let previous, previous.until > now else { return [current] }
        return [current, previous.secret]
    }

    public static func == (a: WebhookKeyring, b: WebhookKeyring) -> Bool {
        a.current == b.current && a.previous?.secret == b.previous?.secret && a.previous?.until == b.previous?.until
    }
}
