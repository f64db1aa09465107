import Foundation

/// What a signature covers (docs/rollouts.md, "Signed layouts"): the answer of `…/tabs` or of `…/tabs/manifest`.
public enum SignedKind: String, Sendable {
    case layout, manifest
}

/// The configured signing keys: the first signs, every one is listed in `GET /v1/keys` (so that apps can pin the
/// next key before the server switches to it).
public struct Signer: Sendable {
    public let keys: [SigningKey]

    /// Nil when `keys` is empty (nothing is signed).
    public init?(keys: [SigningKey]) {
        guard !keys.isEmpty else { return nil }
        self.keys = keys
    }

    /// The bytes signed: `tabs-signature-v1`, kind, account and environment, each ended by a newline, then the
    /// identity (decoded) body.
    public static func message(kind: SignedKind, account: String, environment: String, body: [UInt8]) -> [UInt8] {
        Array("tabs-signature-v1\n\(kind.rawValue)\n\(account)\n\(environment)\n".utf8) + body
    }

    /// The signature of an answer by the first key: its key id and the base64 (padded) signature.
    public func sign(kind: SignedKind, account: String, environment: String, body: [UInt8]) -> (keyID: String, signature: String) {
        let key = keys[0]
        let signature = key.sign(Self.message(kind: kind, account: account, environment: environment, body: body))
        return (key.keyID, Data(signature).base64EncodedString())
    }

    /// The value of `Tabs-Signature`: `keyid="K", sig="S"`.
    public func header(kind: SignedKind, account: String, environment: String, body: [UInt8]) -> String {
        let (keyID, signature) = sign(kind: kind, account: account, environment: environment, body: body)
        return "keyid=\"\(keyID)\", sig=\"\(signature)\""
    }

    /// Whether `header` (a `Tabs-Signature` value) is a valid signature of these bytes by one of the keys.
    public func verifies(_ header: String, kind: SignedKind, account: String, environment: String, body: [UInt8]) -> Bool {
        var fields: [String: String] = [:]
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[1].count >= 2, pair[1].hasPrefix("\""), pair[1].hasSuffix("\"") else { return false }
            fields[pair[0]] = String(pair[1].dropFirst().dropLast())
        }
        guard let key = keys.first(where: { $0.keyID == fields["keyid"] }),
            let signature = fields["sig"].flatMap({ Data(base64Encoded: $0) })
        else { return false }
        return key.privateKey.publicKey.isValidSignature(
            signature, for: Self.message(kind: kind, account: account, environment: environment, body: body))
    }

    /// The body of `GET /v1/keys`: `{"keys":[{"alg":"Ed25519","kid":…,"publicKey":…}]}`, members sorted.
    public var keysDocument: [UInt8] {
        let entries = keys.map { key in
            "{\"alg\":\"Ed25519\",\"kid\":\"\(key.keyID)\",\"publicKey\":\"\(Data(key.publicKey).base64EncodedString())\"}"
        }
        return Array("{\"keys\":[\(entries.joined(separator: ","))]}".utf8)
    }
}
