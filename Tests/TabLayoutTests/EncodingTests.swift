import TabTime
import Testing

@testable import TabLayout

@Suite struct EncodingTests {
    @Test func canonicalJSONSortsKeysByUTF8Bytes() {
        let value: JSONValue = .object(["a": .integer(1), "_x": .integer(2), "A": .integer(3), "é": .integer(4), "b/c": .string("d/e")])
        #expect(String(decoding: CanonicalJSON.encode(value), as: UTF8.self) == #"{"A":3,"_x":2,"a":1,"b/c":"d/e","é":4}"#)
    }

    @Test func canonicalJSONWritesIntegralRealsWithoutFraction() {
        #expect(String(decoding: CanonicalJSON.encode(.array([.real(2), .real(2.5), .real(-0.125)])), as: UTF8.self) == "[2,2.5,-0.125]")
    }

    @Test func canonicalJSONWritesIntegersAsSwiftDoes() {
        for n: Int64 in [0, 7, -1, 10, 1_000_000, .max, .min, .min + 1, 1_234_567_890_123_456_789] {
            #expect(String(decoding: CanonicalJSON.encode(.integer(n)), as: UTF8.self) == String(n))
        }
    }

    @Test func keyOrderIsByteOrderEvenWhereUnicodeOrderDiffers() {
        // Swift's `<` compares normalized text ("éa" < "e\u{301}x", as "éa" < "éx"); the canonical order is the
        // UTF-8 bytes' (65 CC 81 78 < C3 A9 61).
        let value: JSONValue = .object(["éa": .integer(1), "e\u{301}x": .integer(2), "\u{1F600}": .integer(3), "z": .integer(4)])
        #expect("éa" < "e\u{301}x")
        #expect(String(decoding: CanonicalJSON.encode(value), as: UTF8.self) == "{\"e\u{301}x\":2,\"z\":4,\"éa\":1,\"\u{1F600}\":3}")
    }

    @Test func canonicalJSONEscapesControlCharactersAndQuotes() {
        #expect(String(decoding: CanonicalJSON.encode(.string("a\"b\\c\n\u{01}")), as: UTF8.self) == #""a\"b\\c\n\u0001""#)
    }

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
