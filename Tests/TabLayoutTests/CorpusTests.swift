import Testing

@testable import TabLayout

/// The readers and JSON Patch against public corpora written by others (Fixtures/corpora/README.md says where
/// each comes from and under which licence).
@Suite struct CorpusTests {
    /// JSONTestSuite's y_ cases must read and its n_ cases must not (i_ cases, which RFC 8259 leaves to the
    /// implementation, are not vendored). Two y_ cases are refused on purpose: a layout refuses a repeated key
    /// (RFC 8259 §4 says names SHOULD be unique; docs/layout-format.md makes it MUST).
    @Test func jsonTestSuiteParsing() throws {
        let folder = "corpora/JSONTestSuite/test_parsing"
        let names = try Fixtures.names(folder)
        let refusedOnPurpose: Set<String> = ["y_object_duplicated_key.json", "y_object_duplicated_key_and_value.json"]
        var checked = (accepted: 0, refused: 0)
        for name in names where name.hasPrefix("y_") || name.hasPrefix("n_") {
            let bytes = try Fixtures.bytes(folder + "/" + name)
            let outcome = Result { () throws(LayoutError) in try JSONReader.read(bytes) }
            if name.hasPrefix("y_") && !refusedOnPurpose.contains(name) {
                if case .failure(let error) = outcome { Issue.record("\(name) should read: \(error)") }
                checked.accepted += 1
            } else {
                if case .success = outcome { Issue.record("\(name) should be refused") }
                checked.refused += 1
            }
        }
        // The whole corpus ran (a missing folder would otherwise pass with nothing checked).
        #expect(checked.accepted == 93 && checked.refused == 190)
    }

    @Test func jsonTestSuiteDuplicateKeysAreRefusedWithTheirPointer() throws {
        let bytes = try Fixtures.bytes("corpora/JSONTestSuite/test_parsing/y_object_duplicated_key.json")
        #expect(throws: LayoutError.self) { try JSONReader.read(bytes) }
        do {
            _ = try JSONReader.read(bytes)
        } catch {
            #expect(error.diagnostics.first?.pointer == "/a" && error.diagnostics.first?.message.contains("duplicate key") == true)
        }
    }

    /// Every case of json-patch-tests (tests.json and spec_tests.json, the RFC 6902 appendix): a case with
    /// `expected` gives that document, a case with `error` fails. Disabled cases are the two whose operation
    /// repeats a member (`"op"` twice): this reader refuses them before any patching, which is checked too.
    @Test(arguments: ["tests.json", "spec_tests.json"])
    func jsonPatchTests(file: String) throws {
        let cases = try Self.topLevelElements(try Fixtures.bytes("corpora/json-patch-tests/" + file))
        #expect(cases.count > 15)
        var ran = 0
        for raw in cases {
            let testCase: SourceNode
            do {
                testCase = try JSONReader.read(raw)
            } catch {
                // Only the disabled "duplicate ops" cases may fail to read, and for that reason.
                let text = String(decoding: raw, as: UTF8.self)
                #expect(text.contains("\"disabled\": true") && error.description.contains("duplicate key 'op'"), "\(text)")
                continue
            }
            if case .bool(true) = testCase["disabled"]?.value { continue }
            let comment: String
            if case .string(let text) = testCase["comment"]?.value {
                comment = text
            } else {
                comment = String(decoding: raw.prefix(200), as: UTF8.self)
            }
            guard let doc = testCase["doc"], let patch = testCase["patch"] else {
                Issue.record("a case without doc or patch: \(comment)")
                continue
            }
            ran += 1
            let outcome = Result { () throws(LayoutError) in try JSONPatch.apply(patch, to: doc) }
            if let expected = testCase["expected"] {
                switch outcome {
                case .success(let result): #expect(Self.jsonEqual(result, expected), "\(comment): \(result.jsonText())")
                case .failure(let error): Issue.record("\(comment): \(error)")
                }
            } else if testCase["error"] != nil {
                if case .success(let result) = outcome { Issue.record("\(comment) should fail, gave \(result.jsonText())") }
            }
        }
        #expect(ran > 10)
    }

    /// RFC 7396 Appendix A, every example.
    @Test(arguments: [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ])
    func rfc7396AppendixA(target: String, patch: String, result: String) throws {
        let merged = JSONPatch.mergePatch(try JSONReader.read(Array(target.utf8)), try JSONReader.read(Array(patch.utf8)))
        #expect(Self.jsonEqual(merged, try JSONReader.read(Array(result.utf8))), "\(merged.jsonText())")
    }

    // MARK: Helpers

    /// JSON equality: members in any order, numbers by value, lines ignored.
    static func jsonEqual(_ a: SourceNode, _ b: SourceNode) -> Bool {
        switch (a.value, b.value) {
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { jsonEqual($0, $1) }
        case (.dictionary(let x), .dictionary(let y)):
            return x.count == y.count && x.allSatisfy { member in y.contains { $0.key == member.key && jsonEqual($0.node, member.node) } }
        case (.integer(let x), .real(let y)), (.real(let y), .integer(let x)): return Double(x) == y
        default: return a.value == b.value
        }
    }

    /// The bytes of each element of a top-level JSON array, split by nesting depth outside strings (so that one
    /// case the reader refuses does not hide the others).
    static func topLevelElements(_ bytes: [UInt8]) throws -> [[UInt8]] {
        var elements: [[UInt8]] = []
        var depth = 0
        var inString = false
        var escaped = false
        var start: Int?
        for (i, byte) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth == 2 { start = i }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if depth == 2, let first = start { elements.append(Array(bytes[first...i])) }
                depth -= 1
            default: break
            }
        }
        return elements
    }
}
