import ContentHash
import Foundation
import TabAccess
import TabWebhooks
import Testing

@Suite struct HMACTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let key: [UInt8]
        let data: [UInt8]
        let mac: String
        var testDescription: String { name }
    }

    /// RFC 4231 §4.2–4.8 (HMAC-SHA-256 rows). Case 5's MAC is truncated to 128 bits, as the RFC gives it.
    static let vectors = [
        Vector(
            name: "1", key: [UInt8](repeating: 0x0B, count: 20), data: Array("Hi There".utf8),
            mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        Vector(
            name: "2", key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8),
            mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        Vector(
            name: "3", key: [UInt8](repeating: 0xAA, count: 20), data: [UInt8](repeating: 0xDD, count: 50),
            mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        Vector(
            name: "4", key: Array(1...25), data: [UInt8](repeating: 0xCD, count: 50),
            mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        Vector(
            name: "5", key: [UInt8](repeating: 0x0C, count: 20), data: Array("Test With Truncation".utf8),
            mac: "a3b6167473100ee06e0c796c2955552b"),
        Vector(
            name: "6", key: [UInt8](repeating: 0xAA, count: 131),
            data: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        Vector(
            name: "7", key: [UInt8](repeating: 0xAA, count: 131),
            data: Array(
                "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."
                    .utf8),
            mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test(arguments: vectors)
    func rfc4231TestCasesGiveTheirMACs(_ vector: Vector) {
        let mac = SHA256.hex(HMACSHA256.authenticationCode(key: vector.key, message: vector.data))
        #expect(mac.hasPrefix(vector.mac))
        #expect(mac.count == 64)
    }

    /// Keys of exactly one block are used as they are; one byte more and they are hashed: the two paths differ.
    @Test func aKeyOfOneBlockIsNotHashedAndALongerOneIs() {
        let block = [UInt8](repeating: 0x42, count: 64)
        let longer = block + [0x42]
        #expect(
            HMACSHA256.authenticationCode(key: longer, message: []) == HMACSHA256.authenticationCode(key: SHA256.hash(longer), message: []))
        #expect(
            HMACSHA256.authenticationCode(key: block, message: []) != HMACSHA256.authenticationCode(key: SHA256.hash(block), message: []))
    }
}

@Suite struct StandardWebhooksTests {
    static let example = (
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: Int64(1_614_265_330),
        body: #"{"test": 2432232314}"#, signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )

    @Test func theSpecificationsExampleIsReproducedExactly() throws {
        let secret = try #require(WebhookSecret(Self.example.secret))
        #expect(secret.key.count == 24)
        let signed = WebhookSignature(
            id: Self.example.id, timestamp: Self.example.timestamp, body: Array(Self.example.body.utf8), secrets: [secret])
        #expect(signed.signature == Self.example.signature)
        #expect(signed.headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(signed.headers.map(\.value) == [Self.example.id, "1614265330", Self.example.signature])
    }

    @Test func theExampleVerifiesWithinToleranceOnly() throws {
        let secret = try #require(WebhookSecret(Self.example.secret))
        let body = Array(Self.example.body.utf8)
        func verify(at seconds: Int64, signature: String = Self.example.signature, body: [UInt8] = Array(Self.example.body.utf8))
            throws(WebhookSignature.VerificationError)
        {
            try WebhookSignature.verify(
                id: Self.example.id, timestamp: String(Self.example.timestamp), signature: signature, body: body, secrets: [secret],
                now: Date(timeIntervalSince1970: TimeInterval(seconds)))
        }
        try verify(at: Self.example.timestamp)
        try verify(at: Self.example.timestamp + 300)
        try verify(at: Self.example.timestamp - 300)
        #expect(throws: WebhookSignature.VerificationError.timestampOutsideTolerance(seconds: 301)) {
            try verify(at: Self.example.timestamp + 301)
        }
        #expect(throws: WebhookSignature.VerificationError.timestampOutsideTolerance(seconds: -301)) {
            try verify(at: Self.example.timestamp - 301)
        }
        #expect(throws: WebhookSignature.VerificationError.noMatchingSignature) {
            try verify(at: Self.example.timestamp, body: body + [0x20])
        }
        #expect(throws: WebhookSignature.VerificationError.noMatchingSignature) {
            try verify(at: Self.example.timestamp, signature: "v2," + Self.example.signature.dropFirst(3))
        }
        // Unknown versions and junk beside a good signature are skipped, as receivers do.
        try verify(at: Self.example.timestamp, signature: "v1a,xyz v1,!!! " + Self.example.signature)
        #expect(throws: WebhookSignature.VerificationError.missingHeader("webhook-signature")) {
            try WebhookSignature.verify(id: "x", timestamp: "1", signature: nil, body: [], secrets: [secret], now: Date())
        }
        #expect(throws: WebhookSignature.VerificationError.invalidTimestamp("+1614265330")) {
            try WebhookSignature.verify(
                id: Self.example.id, timestamp: "+1614265330", signature: Self.example.signature, body: body, secrets: [secret], now: Date()
            )
        }
    }

    @Test func duringARotationBothSecretsSignAndEitherVerifies() throws {
        let old = WebhookSecret.generate()
        let new = WebhookSecret.generate()
        let body = Array(#"{"type":"layout.published"}"#.utf8)
        let signed = WebhookSignature(id: "msg_1", timestamp: 1_800_000_000, body: body, secrets: [new, old])
        let parts = signed.signature.split(separator: " ")
        #expect(parts.count == 2)
        #expect(parts.allSatisfy { $0.hasPrefix("v1,") })
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for secrets in [[old], [new], [old, new]] {
            try WebhookSignature.verify(
                id: "msg_1", timestamp: "1800000000", signature: signed.signature, body: body, secrets: secrets, now: now)
        }
        #expect(throws: WebhookSignature.VerificationError.noMatchingSignature) {
            try WebhookSignature.verify(
                id: "msg_1", timestamp: "1800000000", signature: signed.signature, body: body, secrets: [WebhookSecret.generate()], now: now
            )
        }
        #expect(throws: WebhookSignature.VerificationError.noMatchingSignature) {
            try WebhookSignature.verify(
                id: "msg_2", timestamp: "1800000000", signature: signed.signature, body: body, secrets: [old], now: now)
        }
    }

    @Test func secretsAreWhsecAndBase64Of24To64RandomBytes() throws {
        let secret = WebhookSecret.generate()
        #expect(secret.text.hasPrefix("whsec_"))
        #expect(secret.key.count == 32)
        #expect(WebhookSecret(secret.text) == secret)
        #expect(!secret.description.contains(Base64.encode(secret.key)))
        #expect(WebhookSecret.generate(byteCount: 8).key.count == 24)
        #expect(WebhookSecret.generate(byteCount: 100).key.count == 64)
        #expect(WebhookSecret.generate() != WebhookSecret.generate())
        for bad in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",
            "whsec_" + Base64.encode([UInt8](repeating: 1, count: 23)),
            "whsec_" + Base64.encode([UInt8](repeating: 1, count: 65)), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS-",
        ] {
            #expect(WebhookSecret(bad) == nil, "\(bad)")
        }
        #expect(WebhookSecret("whsec_" + Base64.encode([UInt8](repeating: 1, count: 64))) != nil)
    }

    @Test func messageIdsAreMsgAndUnique() {
        let ids = Set((0..<1000).map { _ in WebhookSignature.newMessageID() })
        #expect(ids.count == 1000)
        #expect(ids.allSatisfy { $0.hasPrefix("msg_") && $0.count == 26 })
    }
}

@Suite struct WebhookKeyringTests {
    @Test func aRotatedSecretSignsBesideTheNewOneFor24HoursThenStops() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let first = WebhookSecret.generate()
        var keyring = WebhookKeyring(current: first)
        #expect(keyring.signingSecrets(at: start) == [first])
        let second = keyring.rotate(at: start)
        #expect(second != first)
        #expect(keyring.signingSecrets(at: start) == [second, first])
        #expect(keyring.signingSecrets(at: start.addingTimeInterval(86_399)) == [second, first])
        #expect(keyring.signingSecrets(at: start.addingTimeInterval(86_400)) == [second])

        let body = Array("{}".utf8)
        let signed = WebhookSignature(
            id: "msg_r", timestamp: 1_800_000_100, body: body, secrets: keyring.signingSecrets(at: start.addingTimeInterval(100)))
        for receiverSecret in [first, second] {
            try WebhookSignature.verify(
                id: "msg_r", timestamp: "1800000100", signature: signed.signature, body: body, secrets: [receiverSecret],
                now: start.addingTimeInterval(100))
        }

        let third = keyring.rotate(at: start.addingTimeInterval(60))
        #expect(keyring.signingSecrets(at: start.addingTimeInterval(60)) == [third, second])
    }
}
