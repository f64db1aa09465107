/// Which of 10,000 buckets an install falls in for a rollout: the published formula, so that a client or a data
/// team can reproduce who got what.
///
/// `bucket = fnv1a32(decimal(fnv1a32(seed + installId))) mod 10000`: FNV-1a with 32 bits over the UTF-16 code units
/// of the seed followed by the install id (each whole 16-bit unit XORed in, as GrowthBook's SDKs hash a JavaScript
/// string: `charCodeAt`), that hash written in decimal (ASCII digits, no sign, no leading zeros) and hashed again,
/// modulo 10,000. This is GrowthBook's hash version 2 before its division by 10,000 (`hash(seed, value, 2)` =
/// `bucket / 10000`), for every string: ASCII ids hash as their UTF-8 bytes would, others (`é`, emoji) do not.
public enum Bucket {
    /// The number of buckets; a percent `p` covers buckets `0 ..< p × 100`.
    public static let count = 10_000

    /// The bucket of `installID` under `seed`, in `0 ..< 10_000`.
    public static func of(installID: String, seed: String) -> Int {
        let first = fnv1a32(seed.utf16, then: installID.utf16)
        let second = fnv1a32(String(first).utf16, then: EmptyCollection<UInt16>())
        return Int(second % UInt32(count))
    }

    /// FNV-1a, 32 bits (offset basis 2166136261, prime 16777619), over `units` (bytes, or UTF-16 code units).
    public static func fnv1a32<Units: Sequence>(_ units: Units) -> UInt32 where Units.Element: FixedWidthInteger {
        fnv1a32(units, then: EmptyCollection<Units.Element>())
    }

    /// FNV-1a over `first` followed by `second`, without concatenating them.
    static func fnv1a32<First: Sequence, Second: Sequence>(_ first: First, then second: Second) -> UInt32
    where First.Element: FixedWidthInteger, Second.Element: FixedWidthInteger {
        var hash: UInt32 = 2_166_136_261
        for unit in first {
            hash = (hash ^ UInt32(unit)) &* 16_777_619
        }
        for unit in second {
            hash = (hash ^ UInt32(unit)) &* 16_777_619
        }
        return hash
    }
}
