import Foundation
import TabAccess

/// The three headers of a Standard Webhooks delivery and how they are made and checked: `webhook-id`,
/// `webhook-timestamp` (Unix seconds) and `webhook-signature`, which is `v1,` and the base64 HMAC-SHA256 of
/// `{id}.{timestamp}.{body}` for each current secret, space-separated (two while a secret rotates).
public struct WebhookSignature: Sendable, Equatable {
    /// The message id, the same on every attempt of one delivery.
    public let id: String
    /// The attempt's time in Unix seconds.
    public let timestamp: Int64
    /// The `webhook-signature` value.
    public let signature: String

    /// The headers for sending `body` as message `id` at `timestamp`, signed with every one of `secrets` (the
    /// newest first).
    public init(id: String, timestamp: Int64, body: [UInt8], secrets: [WebhookSecret]) {
        self.id = id
        self.timestamp = timestamp
        let content = Self.signedContent(id: id, timestamp: timestamp, body: body)
        signature = secrets.map { "v1," + Base64.encode(HMACSHA256.authenticationCode(key: $0.key, message: content)) }
            .joined(separator: " ")
    }

    /// The headers as name and value, in the order they are sent.
    public var headers: [(name: String, value: String)] {
        [("webhook-id", id), ("webhook-timestamp", String(timestamp)), ("webhook-signature", signature)]
    }

    /// What is signed: `{id}.{timestamp}.{body}`.
    static func signedContent(id: String, timestamp: Int64, body: [UInt8]) -> [UInt8] {
        Array("\(id).\(timestamp).".utf8) + body
    }

    /// A new message id: `msg_` and 128 random bits in URL-safe base64.
    public static func newMessageID() -> String { "msg_" + Base64.encodeURLSafe(SecureRandom.bytes(16)) }

    /// Why a delivery does not verify.
    public enum VerificationError: Error, Sendable, Equatable {
        /// `webhook-id`, `webhook-timestamp` or `webhook-signature` is absent.
        case missingHeader(String)
        /// `webhook-timestamp` is not a whole number of seconds.
        case invalidTimestamp(String)
        /// The timestamp is further than the tolerance from now (a replay, or a wrong clock).
        case timestampOutsideTolerance(seconds: Int64)
        /// No `v1,` signature in the header matches any of the secrets.
        case noMatchingSignature
    }

    /// Checks a received delivery as a receiver does: the timestamp within `tolerance` seconds of `now` (either
    /// side, default 5 minutes), and at least one `v1` signature in the header equal, in constant time, to one made
    /// with one of `secrets`. Other versions and malformed entries in the header are skipped.
    /// - Throws: `VerificationError`.
    public static func verify(
        id: String?, timestamp: String?, signature: String?, body: [UInt8], secrets: [WebhookSecret], now: Date,
        tolerance: Int64 = 300
    ) throws(VerificationError) {
        guard let id else { throw .missingHeader("webhook-id") }
        guard let timestamp else { throw .missingHeader("webhook-timestamp") }
        guard let signature else { throw .missingHeader("webhook-signature") }
        guard let seconds = Int64(timestamp), timestamp.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .invalidTimestamp(timestamp)
        }
        let skew = Int64(now.timeIntervalSince1970.rounded(.down)) - seconds
        guard abs(skew) <= tolerance else { throw .timestampOutsideTolerance(seconds: skew) }
        let content = signedContent(id: id, timestamp: seconds, body: body)
        let expected = secrets.map { HMACSHA256.authenticationCode(key: $0.key, message: content) }
        var matched = false
        for entry in signature.split(separator: " ") {
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1", let presented = Base64.decode(parts[1]) else { continue }
            for code in expected where ConstantTime.equal(code, presented) { matched = true }
        }
        guard matched else { throw .noMatchingSignature }
    }
}
