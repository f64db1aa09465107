import TabWebhooks
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `IPAddress` against the C library's `inet_pton(3)` over many generated texts: the same texts are addresses,
/// with the same bytes. (`inet_pton`, unlike `inet_aton`, takes only dotted decimal for IPv4.)
@Suite struct IPAddressDifferentialTests {
    /// A small deterministic generator (SplitMix64), so a failure can be replayed.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func pton(_ text: String) -> [UInt8]? {
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        return nil
    }

    static let seeds = [
        "::", "::1", "1::", "1:2:3:4:5:6:7:8", "::ffff:10.0.0.1", "64:ff9b::127.0.0.1", "fe80::1", "2001:db8::1:0:0:1",
        "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4", "127.0.0.1", "255.255.255.255", "0.0.0.0", "10.20.30.40",
    ]
    static let alphabet = Array("0123456789abcdefABCDEF:.:.g ")

    /// A seed with a few characters replaced, inserted or removed.
    static func mutate(_ text: String, using generator: inout SplitMix) -> String {
        var characters = Array(text)
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let position = characters.isEmpty ? 0 : Int.random(in: 0..<characters.count, using: &generator)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0 where !characters.isEmpty: characters[position] = alphabet.randomElement(using: &generator)!
            case 1: characters.insert(alphabet.randomElement(using: &generator)!, at: position)
            default: if !characters.isEmpty { characters.remove(at: position) }
            }
        }
        return String(characters)
    }

    @Test func parsingAgreesWithInetPton() {
        var generator = SplitMix(state: 2026)
        var compared = 0
        var addresses = 0
        for _ in 0..<20_000 {
            let seed = Self.seeds.randomElement(using: &generator)!
            let text = Self.mutate(seed, using: &generator)
            let expected = Self.pton(text)
            #expect(IPAddress(text)?.bytes == expected, "\(text.debugDescription)")
            compared += 1
            if expected != nil { addresses += 1 }
        }
        #expect(compared == 20_000)
        #expect(addresses > 2000, "too few valid addresses generated to compare: \(addresses)")
    }

    @Test func printedFormsReadBackToTheSameBytes() {
        var generator = SplitMix(state: 7)
        for _ in 0..<5000 {
            // Random addresses with runs of zero groups, so `::` lands everywhere.
            var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for group in 0..<8 where Bool.random(using: &generator) { bytes[2 * group] = 0; bytes[2 * group + 1] = 0 }
            let address = IPAddress(bytes: bytes)!
            #expect(Self.pton(address.description) == bytes, "\(address)")
            #expect(IPAddress(address.description) == address)
        }
    }
}
