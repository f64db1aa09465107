import Foundation

#if canImport(CryptoKit)
    import CryptoKit
#else
    import Crypto
#endif

/// The Ed25519 public keys an app pins (docs/rollouts.md, "Signed layouts"): with them, a ``TabClient`` shows a layout or follows a
/// manifest only when its `Tabs-Signature` verifies with one of them, whether it came from the network, the disk cache
/// or the bundle. Pin the next key as well before the server switches to it (docs/client.md, "Signed layouts").
///
/// Verification is CryptoKit's on Apple platforms and swift-crypto's (the same API) on Linux; nothing here is
/// cryptography of our own.
public struct SigningKeys: Sendable, Hashable {
    /// Each key's raw 32 bytes by its key id (lowercase hex of the first 8 bytes of SHA-256 of those bytes).
    let keys: [String: Data]

    /// Keys given as base64 of their 32 raw bytes (`publicKey` in `GET /v1/keys`).
    /// - Throws: ``TabClientError/invalidSigningKey(_:)`` for an empty list or a value that is not such a key.
    public init(base64 keys: [String]) throws(TabClientError) {
        guard !keys.isEmpty else { throw .invalidSigningKey("no keys: pin at least one, or pass no SigningKeys") }
        var byID: [String: Data] = [:]
        for (index, text) in keys.enumerated() {
            guard let raw = Data(base64Encoded: text), raw.count == 32 else {
                throw .invalidSigningKey("key \(index) is not base64 of 32 bytes (an Ed25519 public key)")
            }
            do {
                _ = try Curve25519.Signing.PublicKey(rawRepresentation: raw)
            } catch {
                throw .invalidSigningKey("key \(index) is not an Ed25519 public key: \(error)")
            }
            byID[Self.keyID(raw)] = raw
        }
        self.keys = byID
    }

    /// The keys of a `GET /v1/keys` document: `{"keys": [{"kid", "alg": "Ed25519", "publicKey"}]}`. Fetch it once,
    /// over a channel you trust, and ship it in the app; fetching it at run time from the server it protects pins nothing.
    /// - Throws: ``TabClientError/invalidSigningKey(_:)`` when it is not such a document, a `kid` does not match its
    ///   key, or an `alg` is not `Ed25519`.
    public init(keysDocument: Data) throws(TabClientError) {
        struct Document: Decodable {
            struct Key: Decodable {
                var kid: String
                var alg: String
                var publicKey: String
            }
            var keys: [Key]
        }
        let document: Document
        do {
            document = try JSONLimits.decode(Document.self, from: keysDocument)
        } catch {
            throw .invalidSigningKey("not a /v1/keys document: \(CompiledLayout.describe(error))")
        }
        for (index, key) in document.keys.enumerated() where key.alg != "Ed25519" {
            throw .invalidSigningKey("/keys/\(index)/alg is \(key.alg), not Ed25519")
        }
        try self.init(base64: document.keys.map(\.publicKey))
        for (index, key) in document.keys.enumerated() where keys[key.kid] == nil {
            throw .invalidSigningKey("/keys/\(index)/kid \(key.kid) is not the id of its publicKey")
        }
    }

    /// The ids of the pinned keys, sorted.
    public var keyIDs: [String] { keys.keys.sorted() }

    /// What a signature covers: a `…/tabs` answer or a `…/tabs/manifest` answer.
    enum Kind: String, Sendable {
        case layout, manifest
    }

    /// The key id of a raw public key: lowercase hex of the first 8 bytes of its SHA-256.
    static func keyID(_ raw: Data) -> String {
        SHA256.hash(data: raw).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The bytes signed: `tabs-signature-v1`, kind, account and environment, each ended by a newline, then the body.
    static func message(kind: Kind, account: String, environment: String, body: Data) -> Data {
        Data("tabs-signature-v1\n\(kind.rawValue)\n\(account)\n\(environment)\n".utf8) + body
    }

    /// Checks that `signature` is one of the pinned keys' signature of `body`.
    /// - Throws: ``TabClientError/invalidSignature(_:)``: missing, unknown key id, not base64, or not valid.
    func verify(_ signature: Signature?, kind: Kind, account: String, environment: String, body: Data) throws(TabClientError) {
        guard let signature else { throw .invalidSignature("the \(kind.rawValue) is not signed (no Tabs-Signature)") }
        guard let raw = keys[signature.keyID] else {
            throw .invalidSignature(
                "the \(kind.rawValue) is signed by key \(signature.keyID), which is not pinned (\(keyIDs.joined(separator: ", ")))")
        }
        guard let bytes = Data(base64Encoded: signature.value) else {
            throw .invalidSignature("the \(kind.rawValue)'s signature is not base64")
        }
        let valid: Bool
        do {
            let key = try Curve25519.Signing.PublicKey(rawRepresentation: raw)
            valid = key.isValidSignature(bytes, for: Self.message(kind: kind, account: account, environment: environment, body: body))
        } catch {
            valid = false
        }
        guard valid else {
            throw .invalidSignature(
                "the \(kind.rawValue)'s signature by key \(signature.keyID) does not verify (account \(account), environment \(environment))"
            )
        }
    }
}

/// A signature as `Tabs-Signature` carries it (`keyid="K", sig="S"`) and as a bundle or cache file keeps it
/// (`"keyid"`, `"sig"`).
struct Signature: Sendable, Hashable {
    var keyID: String
    /// Base64 of the 64 signature bytes.
    var value: String

    init(keyID: String, value: String) {
        self.keyID = keyID
        self.value = value
    }

    /// Parses `keyid="K", sig="S"`; nil for anything else (then the answer counts as unsigned).
    init?(header: String?) {
        guard let header else { return nil }
        var fields: [String: String] = [:]
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[1].count >= 2, pair[1].hasPrefix("\""), pair[1].hasSuffix("\"") else { return nil }
            fields[pair[0].lowercased()] = String(pair[1].dropFirst().dropLast())
        }
        guard let keyID = fields["keyid"], let value = fields["sig"] else { return nil }
        self.init(keyID: keyID, value: value)
    }
}

/// A layout's exact bytes with their signature, as `…/tabs/bundle` entries and cache files carry them:
/// `{"body": base64, "keyid", "sig"}`.
public struct SignedBody: Sendable, Hashable, Codable {
    /// Base64 of the identity bytes of the answer.
    public var body: String
    public var keyid: String
    public var sig: String

    public init(body: String, keyid: String, sig: String) {
        self.body = body
        self.keyid = keyid
        self.sig = sig
    }

    var bytes: Data? { Data(base64Encoded: body) }
    var signature: Signature { Signature(keyID: keyid, value: sig) }

    init(body: Data, signature: Signature) {
        self.init(body: body.base64EncodedString(), keyid: signature.keyID, sig: signature.value)
    }
}
