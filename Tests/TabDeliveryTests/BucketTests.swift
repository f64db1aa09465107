import Foundation
import Testing

@testable import TabDelivery

/// The bucket formula of docs/rollouts.md ("Who gets the candidate"), checked against the contract's vectors
/// (`Clients/conformance/bucket-vectors.json`), GrowthBook's published vectors and by distribution.
@Suite struct BucketTests {
    /// FNV-1a 32-bit reference values (Fowler, Noll and Vo's test suite).
    @Test func fnv1aMatchesTheReferenceValues() {
        #expect(Bucket.fnv1a32("".utf8) == 0x811c_9dc5)
        #expect(Bucket.fnv1a32("a".utf8) == 0xe40c_292c)
        #expect(Bucket.fnv1a32("foobar".utf8) == 0xbf9c_f968)
    }

    /// GrowthBook's shared SDK test cases (`cases.json`, spec version 0.7.1, as growthbook-python ships it in `tests/`):
    /// the `hash` cases of version 2, `[seed, value, 2, expected]`. Version 2 is
    /// `(fnv1a32(decimal(fnv1a32(seed + value))) % 10000) / 10000`, so its fraction has at most four decimals and
    /// times 10,000 it is exactly our bucket (0.0505 → 505, 0.124 → 1240).
    @Test(arguments: [
        ("seed", "a", 0.0505), ("seed", "b", 0.2696), ("foo", "ab", 0.2575), ("foo", "def", 0.2019),
        ("89123klj", "8952klfjas09ujkasdf", 0.124), ("90850943850283058242805", "123", 0.7516),
        ("()**(%$##$%#$#", "___)((*\":&", 0.0128),
    ])
    func bucketIsGrowthBookHashVersion2TimesTenThousand(seed: String, value: String, fraction: Double) {
        #expect(Bucket.of(installID: value, seed: seed) == Int((fraction * 10_000).rounded()))
    }

    /// The vectors docs/rollouts.md publishes, read from the one file both clients' tests read too.
    @Test func bucketMatchesTheVectorsOfTheContract() throws {
        let vectors = try BucketVector.contract()
        // The file's own claim: five vectors, the last two not ASCII (a UTF-8 byte hash would miss them).
        #expect(vectors.count >= 5)
        #expect(vectors.contains { !$0.installId.unicodeScalars.allSatisfy(\.isASCII) })
        for vector in vectors {
            #expect(Bucket.of(installID: vector.installId, seed: vector.seed) == vector.bucket, "\(vector)")
            #expect(install(vector.installId).bucket(seed: vector.seed) == vector.bucket, "\(vector)")
        }
    }

    /// The hash runs over UTF-16 code units, as GrowthBook's SDKs hash a string (`charCodeAt`): a non-ASCII id hashes
    /// its units (an emoji's two surrogates), not its UTF-8 bytes; an ASCII id hashes the same either way.
    @Test func bucketHashesUTF16CodeUnits() {
        let id = "café-☕📱"
        let expected = Bucket.fnv1a32(String(Bucket.fnv1a32(Array("s".utf16) + Array(id.utf16))).utf8) % 10_000
        #expect(Bucket.of(installID: id, seed: "s") == Int(expected))
        let bytes = Bucket.fnv1a32(String(Bucket.fnv1a32(Array("s".utf8) + Array(id.utf8))).utf8) % 10_000
        #expect(Int(bytes) != Int(expected), "UTF-8 bytes would give another bucket")
        #expect(Bucket.fnv1a32("install-42".utf16) == Bucket.fnv1a32("install-42".utf8))
    }

    @Test func hundredThousandRandomInstallsSplitWithinOnePercentOfEachPercent() {
        let seed = "jack:production:7"
        let buckets = (0..<100_000).map { _ in Bucket.of(installID: UUID().uuidString.lowercased(), seed: seed) }
        #expect(buckets.allSatisfy { (0..<10_000).contains($0) })
        for share in [1.0, 5, 10, 25, 50, 75, 99.5] {
            let inside = buckets.filter { percent(share).covers(bucket: $0) }.count
            let measured = Double(inside) / 1000  // percent of 100,000
            #expect(abs(measured - share) <= 1, "\(share)%: \(measured)% of installs")
        }
    }

    /// Raising the percent only adds installs: whoever is covered at p is covered at every p' ≥ p.
    @Test func membershipIsMonotoneInThePercent() {
        let buckets = (0..<2_000).map { Bucket.of(installID: "install-\($0)", seed: "monotone") }
        var previous = Set<Int>()
        for basisPoints in stride(from: 0, through: 10_000, by: 125) {
            let share = Percent(basisPoints: basisPoints)!
            let members = Set(buckets.indices.filter { share.covers(bucket: buckets[$0]) })
            #expect(previous.isSubset(of: members), "someone left the share at \(share)%")
            previous = members
        }
        #expect(previous.count == buckets.count)
    }

    @Test func percentHoldsHundredthsAndRefusesFinerOrOutOfRange() {
        #expect(Percent(5)?.basisPoints == 500)
        #expect(Percent(0.5)?.basisPoints == 50)
        #expect(Percent(0.29)?.basisPoints == 29)
        #expect(Percent(12.345) == nil)
        #expect(Percent(-1) == nil)
        #expect(Percent(100.01) == nil)
        #expect(Percent(.nan) == nil)
        #expect(["\(percent(5))", "\(percent(0.5))", "\(percent(12.25))", "\(percent(0.05))"] == ["5", "0.5", "12.25", "0.05"])
        #expect(!Percent.zero.covers(bucket: 0))
        #expect(Percent.all.covers(bucket: 9_999))
    }

    @Test func installIDsAreAtMost128CharactersWithoutControlCharacters() throws {
        #expect(try InstallID.parse(String(repeating: "é", count: 128))?.text.count == 128)
        #expect(try InstallID.parse("") == nil)
        let long = failure { try InstallID.parse(String(repeating: "x", count: 129)) }
        #expect(long?.status == 400)
        #expect(long?.description.contains("129") == true)
        let control = failure { try InstallID.parse("abc\u{7}") }
        #expect(control?.status == 400)
        #expect(control?.description.contains("U+0007") == true)
        #expect(failure { try InstallID.parse("abc\u{85}") }?.status == 400)
    }

    @Test func aControlCharacterIsWhatUnicodeCallsOne() {
        let disagreeing = (0...0x10FFFF).lazy.compactMap(Unicode.Scalar.init).filter {
            InstallID.isControl($0) != ($0.properties.generalCategory == .control)
        }
        #expect(disagreeing.first == nil)
    }
}
