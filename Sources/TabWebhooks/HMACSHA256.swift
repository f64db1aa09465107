import ContentHash

/// HMAC-SHA256 (RFC 2104 with SHA-256 as H, B = 64, L = 32), over ContentHash's SHA-256.
public enum HMACSHA256 {
    /// SHA-256's block size in bytes.
    static let blockSize = 64

    /// The 32-byte authentication code of `message` under `key`. A key longer than the block is hashed first and
    /// a shorter one padded with zeros (RFC 2104 §2).
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > blockSize ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: blockSize - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256.hash(block.map { $0 ^ 0x5C } + inner)
    }
}
