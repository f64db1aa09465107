/// Comparison whose duration does not depend on where two secrets differ.
public enum ConstantTime {
    /// Whether `a` and `b` are equal, looking at every byte of both whatever they hold. Only the lengths can
    /// leak, and the values compared here (digests, signatures) have a public, fixed length.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference: UInt8 = 0
        let length = max(a.count, b.count)
        for index in 0..<length {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            difference |= x ^ y
        }
        return difference == 0 && a.count == b.count
    }
}
