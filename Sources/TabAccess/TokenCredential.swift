import ContentHash

/// A token's public id: 16 characters of lower-case base32 (80 random bits), shown in lists, audit entries and
/// `DELETE /v1/tokens/{id}`. It is part of every secret made for the token, so a presented token names the one
/// stored record to compare it with.
public struct TokenID: Hashable, Sendable, TextCodable {
    /// The characters of an id.
    public static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
    /// The length of an id in characters.
    public static let length = 16

    /// The id's text.
    public let rawValue: String

    /// The id `text`, or nil when it is not 16 characters of `a-z2-7`.
    public init?(_ text: some StringProtocol) {
        guard text.utf8.count == Self.length, text.utf8.allSatisfy({ Self.alphabet.contains($0) }) else { return nil }
        rawValue = String(text)
    }

    /// A new random id.
    public static func generate() -> TokenID {
        let characters = SecureRandom.bytes(length).map { alphabet[Int($0 & 31)] }
        return TokenID(String(decoding: characters, as: UTF8.self))!  // 16 characters of the alphabet by construction.
    }

    public var description: String { rawValue }

    public static let textKind = "a token id"
}

/// The SHA-256 of a token's whole text: all the store keeps of a secret. SHA-256 is right here (not a slow
/// password hash) because the secret is 256 random bits, not something a person chose.
public struct SecretHash: Hashable, Sendable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// The hash of `token`'s UTF-8 bytes.
    public init(of token: some StringProtocol) { bytes = SHA256.hash(Array(token.utf8)) }

    /// A stored hash read back in lower-case hex, or nil when `hex` is not 64 hex digits.
    public init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes = [UInt8]()
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// Lower-case hex, for the store.
    public var hex: String { SHA256.hex(bytes) }

    public var description: String { hex }

    /// Whether `other` is this hash, in constant time.
    public func matches(_ other: SecretHash) -> Bool { ConstantTime.equal(bytes, other.bytes) }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}

/// A newly made secret, to show once and forget: `tsk_<id>_<43 characters of URL-safe base64>` (32 random bytes).
/// The `tsk_` prefix lets secret scanners recognise a leaked token; the id lets the server find its record.
public struct IssuedSecret: Sendable {
    /// The prefix of every token this server makes.
    public static let prefix = "tsk_"
    /// Random bytes in a secret.
    public static let secretByteCount = 32

    /// The token's id.
    public let id: TokenID
    /// The whole token as the client will send it. Never log or store it.
    public let token: String
    /// What the store keeps.
    public let hash: SecretHash

    /// A new secret for the token `id`, from the system's CSPRNG.
    public init(for id: TokenID) {
        self.id = id
        token = Self.prefix + id.rawValue + "_" + Base64.encodeURLSafe(SecureRandom.bytes(Self.secretByteCount))
        hash = SecretHash(of: token)
    }
}

/// A token as a client presented it: its id and the hash of what was sent (the text itself is not kept).
public struct PresentedToken: Sendable, Equatable {
    /// The id the token names.
    public let id: TokenID
    /// The hash of the presented text, to compare with the stored ones.
    public let hash: SecretHash

    /// The token `text` if it has this server's form (`tsk_`, an id, `_`, 43 characters of URL-safe base64 that
    /// decode to 32 bytes), else nil.
    public init?(_ text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        let prefix = Array(IssuedSecret.prefix.utf8)
        let secretLength = 43
        guard utf8.count == prefix.count + TokenID.length + 1 + secretLength, utf8.starts(with: prefix) else { return nil }
        let idEnd = prefix.count + TokenID.length
        guard utf8[idEnd] == UInt8(ascii: "_"),
            let id = TokenID(String(decoding: utf8[prefix.count..<idEnd], as: UTF8.self)),
            let secret = Base64.decodeURLSafe(String(decoding: utf8[(idEnd + 1)...], as: UTF8.self)),
            secret.count == IssuedSecret.secretByteCount
        else { return nil }
        self.id = id
        hash = SecretHash(of: text)
    }
}

/// What an `Authorization` header carries, as far as bearer tokens go (RFC 6750 §2.1).
public enum BearerCredential: Sendable, Equatable {
    /// No `Authorization` header, or one of another scheme: the request has no credentials.
    case none
    /// `Bearer` and a value of this server's token form.
    case apiToken(PresentedToken)
    /// `Bearer` and nothing, or a value that starts with `tsk_` but is not a well-formed token: always invalid.
    case malformed
    /// `Bearer` and any other value: only a bootstrap token (`TABSERVER_ADMIN_TOKEN…`, any bytes an operator chose)
    /// can match it.
    case opaque(SecretHash)

    /// The credential in an `Authorization` field value: `Bearer` (any case), one or more spaces, the value.
    public init(authorization: String?) {
        guard let authorization else {
            self = .none
            return
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            self = .none
            return
        }
        let value = parts[1].drop { $0 == " " }
        if let token = PresentedToken(value) {
            self = .apiToken(token)
        } else if value.isEmpty || value.hasPrefix(IssuedSecret.prefix) {
            self = .malformed
        } else {
            self = .opaque(SecretHash(of: value))
        }
    }
}
