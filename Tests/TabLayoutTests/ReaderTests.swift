import Testing

@testable import TabLayout

@Suite struct ReaderTests {
    @Test func stringsFilesWithCommentsEscapesAndUTF16() throws {
        let text = #"""
            /* block
               comment */
            "A" = "Top \"News\""; // trailing
            "B" = "line\nbreak \U00e9";
            C = "bare key";
            """#
        let table = try StringsTable.read(Array(text.utf8))
        #expect(table.entries == ["A": #"Top "News""#, "B": "line\nbreak é", "C": "bare key"])
        var utf16: [UInt8] = [0xFF, 0xFE]
        for unit in #""HOME_TAB" = "Accueil";"#.utf16 { utf16 += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        #expect(try StringsTable.read(utf16).entries == ["HOME_TAB": "Accueil"])
        #expect(try StringsTable.read(Array(#"{"A":"a"}"#.utf8)).entries == ["A": "a"])
    }

    @Test func stringsErrorsHaveLines() {
        do {
            _ = try StringsTable.read(Array("\"A\" = \"a\";\n\"B\" = \"b\"\n".utf8))
            Issue.record("a missing ';' should fail")
        } catch {
            #expect(error.diagnostics.first?.line == 3)
        }
    }

    @Test func jsonReaderKeepsLinesAndEscapes() throws {
        let node = try JSONReader.read(Array("{\n\"a\": \"\\u00e9\\ud83d\\ude00\",\n\"b\": [1, 2.5, -3e2, true, null]\n}".utf8))
        #expect(node["a"]?.value == .string("é😀"))
        #expect(node["a"]?.line == 2)
        #expect(
            node["b"]?.value
                == .array([
                    .init(.integer(1), line: 3), .init(.real(2.5), line: 3), .init(.real(-300), line: 3), .init(.bool(true), line: 3),
                    .init(.null, line: 3),
                ]))
    }

    @Test(arguments: [
        (#"{"a":{"b":1,"b":2}}"#, "/a/b", "duplicate key 'b'"),
        (#"{"tabs":[{"id":"x"},{"id":tru}]}"#, "/tabs/1/id", "invalid literal"),
        (#"{"a/b":[0,1,{"c~d":"\q"}]}"#, "/a~1b/2/c~0d", "invalid escape"),
        (#"{"a":[1 2]}"#, "/a/0", "',' or ']' was expected"),
        (#"{"a":1 "b":2}"#, "/a", "',' or '}' was expected"),
        ("{\"a\":\"é\u{1}\"}", "/a", "control character"),
        (#"{"a":1} x"#, "", "unexpected content"),
        (#"[[[{"k":"#, "/0/0/0/k", "unexpected end of input"),
    ])
    func jsonReaderErrorsPointAtTheValue(source: String, pointer: String, message: String) {
        do {
            _ = try JSONReader.read(Array(source.utf8))
            Issue.record("\(source) should not read")
        } catch {
            #expect(error.diagnostics.count == 1)
            #expect(error.diagnostics.first?.pointer == pointer, "\(source)")
            #expect(error.diagnostics.first?.message.contains(message) == true, "\(error)")
        }
    }

    @Test func xmlReaderHandlesDeclarationDoctypeCommentsAndCDATA() throws {
        let source = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <!-- a comment -->
            <plist version="1.0">
            <dict>
                <key>a</key><string><![CDATA[<b>]]> &amp; &#233;</string>
                <key>n</key><integer>-7</integer>
                <key>t</key><true/>
                <key>e</key><string/>
            </dict>
            </plist>
            """
        let node = try XMLPlistReader.read(Array(source.utf8))
        #expect(node["a"]?.value == .string("<b> & é"))
        #expect(node["a"]?.line == 6)
        #expect(node["n"]?.value == .integer(-7))
        #expect(node["t"]?.value == .bool(true))
        #expect(node["e"]?.value == .string(""))
    }

    @Test func jsonPatchAndMergePatch() throws {
        let document = try JSONReader.read(Array(##"{"tabs":[{"id":"a"}],"appearance":{"height":60,"tintColor":"#000000"}}"##.utf8))
        let ops = try JSONReader.read(
            Array(
                #"[{"op":"add","path":"/tabs/-","value":{"id":"b"}},{"op":"test","path":"/tabs/0/id","value":"a"},{"op":"remove","path":"/appearance/height"}]"#
                    .utf8))
        let patched = try JSONPatch.apply(ops, to: document)
        #expect(patched.jsonText().contains(#""id": "b""#))
        #expect(patched["appearance"]?["height"] == nil)
        let failing = try JSONReader.read(Array(#"[{"op":"test","path":"/tabs/0/id","value":"z"}]"#.utf8))
        #expect(throws: LayoutError.self) { try JSONPatch.apply(failing, to: document) }
        let merged = JSONPatch.mergePatch(
            document, try JSONReader.read(Array(##"{"appearance":{"height":null,"tintColor":"#FFFFFF"}}"##.utf8)))
        #expect(merged["appearance"]?["height"] == nil)
        #expect(merged["appearance"]?["tintColor"]?.value == .string("#FFFFFF"))
    }
}
