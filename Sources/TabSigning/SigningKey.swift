import Crypto
import Foundation
import SwiftASN1

/// An Ed25519 private key that signs layouts and manifests (docs/rollouts.md, "Signed layouts"), read from PKCS#8 PEM as
/// `openssl genpkey -algorithm ed25519` writes it.
public struct SigningKey: Sendable {
    /// RFC 8410's object identifier of Ed25519.
    static let ed25519: ASN1ObjectIdentifier = [1, 3, 101, 112]

    let privateKey: Curve25519.Signing.PrivateKey
    /// Lowercase hex of the first 8 bytes of SHA-256 of the 32-byte public key.
    public let keyID: String
    /// The 32 raw bytes of the public key.
    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }

    init(_ privateKey: Curve25519.Signing.PrivateKey) {
        self.privateKey = privateKey
        self.keyID = Self.keyID(publicKey: Array(privateKey.publicKey.rawRepresentation))
    }

    /// A new random key (`tabserver keys generate`).
    public static func generate() -> SigningKey { SigningKey(Curve25519.Signing.PrivateKey()) }

    /// The key id of a 32-byte Ed25519 public key.
    public static func keyID(publicKey: [UInt8]) -> String {
        SHA256.hash(data: publicKey).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The key in a PEM document (`-----BEGIN PRIVATE KEY-----`, PKCS#8, RFC 5958 and RFC 8410).
    /// - Parameter file: named in the error.
    /// - Throws: ``SigningKeyError`` saying what the text is instead.
    public init(pem text: String, file: String) throws(SigningKeyError) {
        let document: PEMDocument
        do {
            document = try PEMDocument(pemString: text)
        } catch {
            throw .notPEM(file: file)
        }
        guard document.discriminator == "PRIVATE KEY" else { throw .notPKCS8(file: file, found: document.discriminator) }
        let seed: [UInt8]
        do {
            seed = try Self.seed(pkcs8: document.derBytes)
        } catch let error as SigningKeyError {
            throw error.naming(file)
        } catch {
            throw .malformed(file: file, reason: "\(error)")
        }
        do {
            self.init(try Curve25519.Signing.PrivateKey(rawRepresentation: seed))
        } catch {
            throw .malformed(file: file, reason: "the key is not 32 bytes")
        }
    }

    /// Reads the PEM file at `path`.
    public static func load(path: String) throws(SigningKeyError) -> SigningKey {
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable(file: path) }
        return try SigningKey(pem: String(decoding: data, as: UTF8.self), file: path)
    }

    /// A warning naming `path` and its mode when a group or others may read or write the key file (a key anyone on
    /// the machine can read signs for them too); nil when only its owner may, or when its mode cannot be read.
    public static func exposure(path: String) -> String? {
        guard let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int,
            mode & 0o077 != 0
        else { return nil }
        return "the signing key \(path) has mode \(String(mode & 0o7777, radix: 8)): a group or others may read it; chmod 600 it"
    }

    /// The 32-byte seed inside a PKCS#8 `OneAsymmetricKey` whose algorithm is Ed25519.
    private static func seed(pkcs8 der: [UInt8]) throws -> [UInt8] {
        let root = try DER.parse(der)
        return try DER.sequence(root, identifier: .sequence) { nodes in
            _ = try Int(derEncoded: &nodes)  // version 0 (v1) or 1 (v2, with the public key)
            let algorithm = try DER.sequence(try nodes.next().orThrow(), identifier: .sequence) { inner in
                let algorithm = try ASN1ObjectIdentifier(derEncoded: &inner)
                while inner.next() != nil {}  // parameters (an EC key's curve): only the algorithm is judged
                return algorithm
            }
            guard algorithm == ed25519 else { throw SigningKeyError.notEd25519(file: "", algorithm: "\(algorithm)") }
            let wrapped = try ASN1OctetString(derEncoded: &nodes)
            while nodes.next() != nil {}  // [0] attributes, [1] public key: not needed
            let inner = try ASN1OctetString(derEncoded: try DER.parse(Array(wrapped.bytes)))
            return Array(inner.bytes)
        }
    }

    /// This key as PKCS#8 PEM, as `openssl genpkey -algorithm ed25519` writes it.
    public var pem: String {
        var serializer = DER.Serializer()
        // Cannot fail: every value is well formed and the serializer only appends to memory.
        try! serializer.appendConstructedNode(identifier: .sequence) { coder in
            try coder.serialize(0)
            try coder.appendConstructedNode(identifier: .sequence) { try $0.serialize(Self.ed25519) }
            var seed = DER.Serializer()
            try seed.serialize(ASN1OctetString(contentBytes: ArraySlice(privateKey.rawRepresentation)))
            try coder.serialize(ASN1OctetString(contentBytes: ArraySlice(seed.serializedBytes)))
        }
        return PEMDocument(type: "PRIVATE KEY", derBytes: serializer.serializedBytes).pemString + "\n"
    }

    /// The Ed25519 signature of `message`.
    func sign(_ message: [UInt8]) -> [UInt8] {
        // BoringSSL's Ed25519 signing does not fail for a valid key.
        Array(try! privateKey.signature(for: message))
    }
}

extension Optional {
    fileprivate func orThrow() throws -> Wrapped {
        guard let self else { throw SigningKeyError.malformed(file: "", reason: "the key ends early") }
        return self
    }
}

/// Why a signing key could not be used; each names the file.
public enum SigningKeyError: Error, Equatable, CustomStringConvertible {
    case unreadable(file: String)
    case notPEM(file: String)
    case notPKCS8(file: String, found: String)
    case notEd25519(file: String, algorithm: String)
    case malformed(file: String, reason: String)

    func naming(_ file: String) -> SigningKeyError {
        switch self {
        case .unreadable: .unreadable(file: file)
        case .notPEM: .notPEM(file: file)
        case .notPKCS8(_, let found): .notPKCS8(file: file, found: found)
        case .notEd25519(_, let algorithm): .notEd25519(file: file, algorithm: algorithm)
        case .malformed(_, let reason): .malformed(file: file, reason: reason)
        }
    }

    public var description: String {
        switch self {
        case .unreadable(let file): "signing key \(file): cannot be read"
        case .notPEM(let file): "signing key \(file): not a PEM document (write one with `tabserver keys generate --out FILE`)"
        case .notPKCS8(let file, let found):
            "signing key \(file): a PEM '\(found)', not a PKCS#8 'PRIVATE KEY' (openssl genpkey -algorithm ed25519 writes one)"
        case .notEd25519(let file, let algorithm):
            "signing key \(file): an algorithm \(algorithm) key, not Ed25519 (1.3.101.112)"
        case .malformed(let file, let reason): "signing key \(file): a malformed PKCS#8 key (\(reason))"
        }
    }
}
