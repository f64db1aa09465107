/// The rollout bucket of an install, as the server computes it (docs/rollouts.md, "Who gets the candidate") and as
/// GrowthBook's SDKs do: `fnv1a32(decimal(fnv1a32(seed + installId))) mod 10000`, FNV-1a 32 bits over the string's
/// UTF-16 code units (each whole 16-bit unit XORed in; for ASCII the same as over its bytes). An install gets a
/// rollout's candidate while `bucket < percent × 100`. Pure: the same answer on every device and on the server.
public enum Bucket {
    /// The bucket, 0 to 9999, of `installID` in the rollout whose seed is `seed`.
    public static func of(installID: String, seed: String) -> Int {
        Int(fnv1a32(String(fnv1a32(seed + installID))) % 10000)
    }

    /// FNV-1a, 32 bits, over the UTF-16 code units of `text`.
    static func fnv1a32(_ text: String) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for unit in text.utf16 {
            hash ^= UInt32(unit)
            hash &*= 16_777_619
        }
        return hash
    }
}
