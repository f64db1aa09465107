import TabTime
import Testing

@testable import TabLayout

@Suite struct EncodingTests {
    @Test func sha256MatchesKnownVectors() {
        #expect(SHA256.hex(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(SHA256.hex(SHA256.hash(long)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func strongETagDependsOnEveryByte() {
        let a = EntityTag.strong(for: Array("{\"a\":1}".utf8))
        #expect(a == EntityTag.strong(for: Array("{\"a\":1}".utf8)))
        #expect(a != EntityTag.strong(for: Array("{\"a\":2}".utf8)))
        #expect(a.hasPrefix("\"") && a.hasSuffix("\"") && !a.hasPrefix("W/"))
    }

    @Test func httpDatesRoundTrip() {
        let date = Timestamp(unixSeconds: 784_111_777)
        #expect(date.httpDate == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(date.rfc3339Seconds == "1994-11-06T08:49:37Z")
        #expect(Timestamp(unixSeconds: -62_135_596_800).rfc3339Seconds == "0001-01-01T00:00:00Z")
    }

    @Test func appVersionsCompareNumerically() throws {
        let v = { (s: String) throws -> AppVersion in try #require(AppVersion(s)) }
        #expect(try v("2.10") > v("2.9"))
        #expect(try v("2") == v("2.0.0"))
        #expect(try v("3.0.1") > v("3"))
        #expect(AppVersion("2.x") == nil && AppVersion("") == nil && AppVersion("1.2.3.4.5") == nil)
        #expect(try v("1.2.3.4").components == [1, 2, 3, 4] && v("999999999").components == [999_999_999])
        for bad in ["1..2", ".1", "1.", "1234567890", "+1", "-1", " 1", "1 ", "\u{FF11}", "1.2.3.4.", "٣"] {
            #expect(AppVersion(bad) == nil, "\(bad)")
        }
    }
}
