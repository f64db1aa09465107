import TabAccess

/// A webhook's signing secret as Standard Webhooks writes it: `whsec_` and the standard base64 of 24 to 64
/// random bytes. The key for HMAC is the decoded bytes, not the text.
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible {
    /// The prefix of every secret.
    public static let prefix = "whsec_"
    /// The key lengths the specification allows.
    public static let keyLengths = 24...64

    /// The HMAC key.
    public let key: [UInt8]

    /// A new secret of `byteCount` bytes (default 32) from the system's CSPRNG.
    public static func generate(byteCount: Int = 32) -> WebhookSecret {
        WebhookSecret(key: SecureRandom.bytes(min(max(byteCount, keyLengths.lowerBound), keyLengths.upperBound)))
    }

    /// The secret `text` (`whsec_…`), or nil unless it is the prefix and canonical base64 of 24 to 64 bytes.
    public init?(_ text: some StringProtocol) {
        guard text.hasPrefix(Self.prefix), let key = Base64.decode(text.dropFirst(Self.prefix.count)),
            Self.keyLengths.contains(key.count)
        else { return nil }
        self.key = key
    }

    private init(key: [UInt8]) { self.key = key }

    /// `whsec_` and the base64 key: the form shown once to the webhook's owner and kept in the store.
    public var text: String { Self.prefix + Base64.encode(key) }

    /// Never the key: secrets do not belong in logs.
    public var description: String { "whsec_…(\(key.count) bytes)" }
}
