import Foundation
import Testing

@testable import TabJSON

@Suite struct CanonicalJSONTests {
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

    @Test func nullIsWrittenAsNullWhereverItStands() {
        let value: JSONValue = .object(["b": .null, "a": .array([.null, .integer(1)])])
        #expect(String(decoding: CanonicalJSON.encode(value), as: UTF8.self) == #"{"a":[null,1],"b":null}"#)
    }

    /// The answers that gained members later (`next`, a token's `id`) write them after the others, each group sorted.
    @Test func trailingMembersFollowTheOthersEachGroupSorted() {
        let bytes = CanonicalJSON.encode(
            object: ["versions": .array([]), "account": .string("a")], trailing: ["next": .null, "id": .string("t1")])
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"account":"a","versions":[],"id":"t1","next":null}"#)
        #expect(CanonicalJSON.encode(object: ["a": .integer(1)], trailing: [:]) == CanonicalJSON.encode(.object(["a": .integer(1)])))
        #expect(String(decoding: CanonicalJSON.encode(object: [:], trailing: ["n": .null]), as: UTF8.self) == #"{"n":null}"#)
    }

    @Test func parseTellsNullBooleansIntegersAndReals() throws {
        let value = try #require(JSONValue.parse(Data(#"{"n":null,"t":true,"one":1,"five":5.0,"half":0.5,"s":"a/b","l":[1]}"#.utf8)))
        #expect(
            value
                == .object([
                    "n": .null, "t": .bool(true), "one": .integer(1), "five": .real(5), "half": .real(0.5), "s": .string("a/b"),
                    "l": .array([.integer(1)]),
                ]))
        #expect(JSONValue.parse(Data("{".utf8)) == nil)
        #expect(JSONValue.null.kind == "null" && JSONValue.real(1).kind == "a number")
    }

    @Test func theEncoderSortsMembersAndLeavesSlashesAlone() throws {
        struct Answer: Encodable {
            let type = "application/json"
            let author = "a"
        }
        #expect(String(decoding: try JSONEncoder.sorted.encode(Answer()), as: UTF8.self) == #"{"author":"a","type":"application/json"}"#)
    }
}

@Suite struct FieldErrorTests {
    @Test func aFieldErrorNamesItsLineWhenKnownAndTheWholeAsItsCallerSays() {
        #expect(FieldError(pointer: "/tabs/0", line: 3, message: "bad").description == "3: /tabs/0: bad")
        #expect(FieldError(pointer: "", message: "not JSON").description == "(document): not JSON")
        #expect(FieldError(pointer: "", message: "not JSON").described(whole: "(body)") == "(body): not JSON")
        #expect(FieldError(pointer: "/a", message: "m").described(whole: "") == "/a: m")
    }

    @Test func pointerTokensAreEscaped() {
        #expect(FieldError.escape("a/b~c") == "a~1b~0c")
    }
}
