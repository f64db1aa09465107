/// Bytes from the operating system's cryptographically secure random number generator, for secrets and ids.
///
/// This is `SystemRandomNumberGenerator`, chosen over calling `getrandom(2)` ourselves because it *is* that call:
/// on Linux the standard library fills it with `getrandom(2)` (blocking only until the kernel's pool is first
/// seeded, falling back to `/dev/urandom` on kernels without the system call) and traps rather than return weak
/// bytes; on Apple platforms it is `arc4random_buf(3)`. Either way no C, no shim, and no seedable generator that a
/// test could swap in by mistake.
public enum SecureRandom {
    /// `count` bytes from the system's CSPRNG.
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + 7)
        while bytes.count < count {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return Array(bytes.prefix(count))
    }
}
