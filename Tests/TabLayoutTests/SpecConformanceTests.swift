import Foundation
import Testing

@testable import TabLayout

/// Each reader against its format's own specification: XML 1.0, Apple's property lists (files written by
/// Python's plistlib, Fixtures/plistlib/generate.py), Foundation's `.strings` escapes, RFC 6901.
@Suite struct SpecConformanceTests {
    private func xml(_ body: String) -> [UInt8] {
        Array(#"<?xml version="1.0" encoding="UTF-8"?>"#.utf8) + Array("<plist version=\"1.0\">\(body)</plist>".utf8)
    }

    private func failure(_ read: () throws(LayoutError) -> SourceNode) -> FieldError? {
        do {
            _ = try read()
            return nil
        } catch {
            return error.diagnostics.first
        }
    }

    // MARK: XML 1.0

    /// §2.11: CR LF and a lone CR become LF before anything else reads the text; `&#13;` still gives a CR.
    @Test func xmlLineEndsAreNormalisedFirst() throws {
        let source =
            "<?xml version=\"1.0\"?>\r\n<plist>\r<dict>\r\n<key>a</key><string>one\r\ntwo\rthree&#13;four</string>\r\n"
            + "<key>b</key><integer>1</integer></dict></plist>\r\n"
        let node = try XMLPlistReader.read(Array(source.utf8))
        #expect(node["a"]?.value == .string("one\ntwo\nthree\rfour"))
        // Lines count the normalised ends: <key>a</key> is on line 4 (CR LF, CR, CR LF before it).
        #expect(node["a"]?.line == 4)
        #expect(node["b"]?.line == 7)
    }

    /// §4.3.3 / Appendix F: UTF-16 with a byte order mark, both byte orders (plistlib's output re-encoded, CR LF ends).
    @Test(arguments: ["utf16le.xml.plist", "utf16be.xml.plist"])
    func utf16XMLPlistsWithAByteOrderMarkAreRead(file: String) throws {
        let bytes = try Fixtures.bytes("plistlib/" + file)
        let node = try XMLPlistReader.read(bytes)
        #expect(node["k"]?.value == .string("é😀"))
        #expect(try LayoutSource.readTree(bytes, format: .xmlPlist)["k"]?.value == .string("é😀"))
        // Undeclared (application/octet-stream, or a file given to the CLI): recognised as XML by its byte order mark.
        #expect(SourceFormat.detect(bytes) == .xmlPlist)
        #expect(try LayoutSource.readTree(bytes)["k"]?.value == .string("é😀"))
    }

    @Test func utf16WithALoneSurrogateIsAnError() {
        // FF FE, "<", then a lone high surrogate D800.
        let bytes: [UInt8] = [0xFF, 0xFE, 0x3C, 0x00, 0x00, 0xD8]
        #expect(failure { () throws(LayoutError) in try XMLPlistReader.read(bytes) }?.message.contains("UTF-16") == true)
    }

    /// §2.2 and §4.1: characters XML cannot hold are refused, literal or as references.
    @Test(arguments: ["&#1;", "&#0;", "&#xFFFE;", "&#xD800;", "a\u{1}b", "\u{FFFF}"])
    func xmlForbiddenCharactersAreRefused(text: String) {
        let diagnostic = failure { () throws(LayoutError) in
            try XMLPlistReader.read(xml("<dict><key>k</key><string>\(text)</string></dict>"))
        }
        #expect(diagnostic?.pointer == "/k", "\(String(describing: diagnostic))")
    }

    // MARK: Property lists written by plistlib

    @Test func plistlibLayoutReadsTheSameInXMLAndBinary() throws {
        let fromXML = try XMLPlistReader.read(try Fixtures.bytes("plistlib/layout.xml.plist"))
        let fromBinary = try BinaryPlistReader.read(try Fixtures.bytes("plistlib/layout.bplist"))
        #expect(CorpusTests.jsonEqual(fromXML, fromBinary))
        let tab = fromBinary["tabs"].flatMap { node -> SourceNode? in
            if case .array(let tabs) = node.value { return tabs.first }
            return nil
        }
        #expect(tab?["title"]?.value == .string("Accueil été 😀"))
        #expect(tab?["params"]?["blob"]?.value == .data([0x00, 0x01, 0xFE, 0xFF]))
        #expect(tab?["params"]?["zoom"]?.value == .real(1.5))
        #expect(tab?["params"]?["count"]?.value == .integer(-3))
        #expect(fromXML["x-note"]?.value == .string("tab\there\nnewline"))
        // And it is a valid layout.
        #expect(try LayoutSource.parse(try Fixtures.bytes("plistlib/layout.bplist")).tabs.map(\.id) == ["home", "news"])
    }

    /// Binary dates keep their fraction of a second; the years 0001 and 9999 are dates like any other.
    @Test func binaryPlistDatesKeepFractionsAndTheWholeCalendar() throws {
        let node = try BinaryPlistReader.read(try Fixtures.bytes("plistlib/dates.bplist"))
        #expect(node["fraction"]?.value == .date("2024-02-29T12:00:00.25Z"))
        #expect(node["last"]?.value == .date("9999-12-31T23:59:59Z"))
        #expect(node["first"]?.value == .date("0001-01-01T00:00:00Z"))
    }

    @Test func referenceDatesRoundToTheMicrosecondAndRefuseWhatRFC3339CannotWrite() {
        #expect(ReferenceDate.iso8601(secondsSince2001: 0) == "2001-01-01T00:00:00Z")
        #expect(ReferenceDate.iso8601(secondsSince2001: -0.5) == "2000-12-31T23:59:59.5Z")
        #expect(ReferenceDate.iso8601(secondsSince2001: 0.000_000_4) == "2001-01-01T00:00:00Z")
        #expect(ReferenceDate.iso8601(secondsSince2001: 1.999_999_9) == "2001-01-01T00:00:02Z")
        #expect(ReferenceDate.iso8601(secondsSince2001: 252_423_993_600) == nil)  // 10000-01-01
        #expect(ReferenceDate.iso8601(secondsSince2001: .nan) == nil)
    }

    @Test func xmlDatesKeepTheirFraction() throws {
        let node = try XMLPlistReader.read(xml("<dict><key>d</key><date>2024-02-29T12:00:00.250Z</date></dict>"))
        #expect(node["d"]?.value == .date("2024-02-29T12:00:00.250Z"))
    }

    /// Decision: a layout keeps 64-bit signed integers exactly and refuses wider ones with a clear error; it never
    /// wraps 2^63…2^64−1 to negative numbers.
    @Test func integersBeyond64BitsAreRefusedNeverWrapped() throws {
        let fits = try BinaryPlistReader.read(try Fixtures.bytes("plistlib/int-fits.bplist"))
        #expect(fits["max"]?.value == .integer(.max))
        #expect(fits["min"]?.value == .integer(.min))
        #expect(fits["minusOne"]?.value == .integer(-1))
        for file in ["int-too-big.bplist", "int-2-63.bplist", "int-too-big.xml.plist"] {
            let bytes = try Fixtures.bytes("plistlib/" + file)
            let diagnostic = failure { () throws(LayoutError) in try LayoutSource.readTree(bytes) }
            #expect(diagnostic?.pointer == "/big", "\(file)")
            #expect(
                diagnostic?.message.contains("outside the integers a layout keeps exactly") == true,
                "\(file): \(String(describing: diagnostic))")
        }
        let json = failure { () throws(LayoutError) in try JSONReader.read(Array(#"{"big":18446744073709551615}"#.utf8)) }
        #expect(json?.pointer == "/big" && json?.message.contains("outside the integers") == true)
        #expect(
            try JSONReader.read(Array("[-9223372036854775808, 9223372036854775807]".utf8)).value
                == .array([.init(.integer(.min), line: 1), .init(.integer(.max), line: 1)]))
    }

    // MARK: .strings as Foundation reads them

    @Test func stringsEscapesAreFoundations() throws {
        let text = #"""
            "controls" = "\n\r\t";
            "octal" = "\101\102\60\0121";
            "nextstep" = "\200\240\251\341\375";
            "unicode" = "\U00e9\U20AC";
            "short" = "\U41!";
            "pair" = "\UD83D\UDE00";
            "other" = "\"\\\'\u\
            ";
            """#
        let table = try StringsTable.read(Array(text.utf8))
        #expect(table.entries["controls"] == "\n\r\t")
        // Three octal digits at most: \0121 is \012 (LF) then "1".
        #expect(table.entries["octal"] == "AB0\n1")
        // Above \177, octal names NeXTSTEP characters; Foundation's own NeXTSTEP decoder is the oracle.
        let nextStep = String(data: Data([0o200, 0o240, 0o251, 0o341, 0o375]), encoding: .nextstep)
        #expect(nextStep != nil && table.entries["nextstep"] == nextStep)
        #expect(table.entries["unicode"] == "é€")
        #expect(table.entries["short"] == "A!")
        #expect(table.entries["pair"] == "😀")
        // Any other escaped character is itself (a backslash before a newline too): \u is "u" for Foundation.
        #expect(table.entries["other"] == "\"\\'u\n")
    }

    /// `\a \b \f \v` are read as Foundation reads them (U+0007, U+0008, U+000C, U+000B); no XML property list can
    /// carry those characters, so the table is then refused, naming the character at the key's pointer.
    @Test(arguments: [("a", "U+0007"), ("b", "U+0008"), ("f", "U+000C"), ("v", "U+000B"), ("1", "U+0001"), ("U1F", "U+001F")])
    func stringsControlEscapesAreDecodedThenRefused(escape: String, name: String) {
        do {
            _ = try StringsTable.read(Array("\"K\" = \"x\\\(escape)\";".utf8))
            Issue.record("\\\(escape) should be refused")
        } catch {
            #expect(error.diagnostics.first?.pointer == "/K")
            #expect(error.diagnostics.first?.message.contains(name) == true, "\(error)")
        }
    }

    @Test(arguments: [#""a" = "\UD83D";"#, #""a" = "\UDE00";"#, #""a" = "\UD83Dx";"#, #""a" = "\377";"#, #""a" = "\1";"#])
    func stringsEscapesThatNameNoServableCharacterAreRefused(source: String) {
        #expect(throws: LayoutError.self) { try StringsTable.read(Array(source.utf8)) }
    }

    @Test func legacyOldStyleDictionaryFormIsRead() throws {
        let text = """
            // an old-style property list
            {
                "HOME" = "Accueil";
                BARE_KEY = bare.value;
                "SAME";
            }
            """
        #expect(try StringsTable.read(Array(text.utf8)).entries == ["HOME": "Accueil", "BARE_KEY": "bare.value", "SAME": "SAME"])
        #expect(try StringsTable.read(Array("{}".utf8)).entries == [:])
        #expect(try StringsTable.read(Array(#"{ "a" : "b" }"#.utf8)).entries == ["a": "b"])  // JSON
        #expect(throws: LayoutError.self) { try StringsTable.read(Array(#"{ "a" = "b"; "#.utf8)) }
        #expect(throws: LayoutError.self) { try StringsTable.read(Array(#"{ "a" = "b"; } "c" = "d";"#.utf8)) }
        #expect(throws: LayoutError.self) { try StringsTable.read(Array(#"{ "a" = { "b" = "c"; }; }"#.utf8)) }
    }

    /// A real-world shape: Xcode's generated Localizable.strings, UTF-16 LE with a BOM and comments per entry.
    @Test func xcodeStyleLocalizableStrings() throws {
        let text = """
            /* No comment provided by engineer. */
            "Cancel" = "Annuler";

            /* Title of the \\"More\\" tab */
            "MORE_TAB" = "Plus…";

            /* %@ is a name */
            "WELCOME_%@" = "Bienvenue, %@ !";
            """
        var bytes: [UInt8] = [0xFF, 0xFE]
        for unit in text.utf16 { bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        #expect(try StringsTable.read(bytes).entries == ["Cancel": "Annuler", "MORE_TAB": "Plus…", "WELCOME_%@": "Bienvenue, %@ !"])
    }

    // MARK: RFC 6901

    @Test(arguments: ["/tabs/01", "/tabs/00", "/tabs/+1", "/tabs/-0", "/tabs/1a", "/tabs/ 1"])
    func jsonPointerIndicesWithLeadingZerosOrSignsAreRefused(path: String) throws {
        let document = try JSONReader.read(Array(#"{"tabs":["a","b","c"]}"#.utf8))
        for op in [#""op":"replace","value":"x""#, #""op":"remove""#, #""op":"test","value":"b""#, #""op":"add","value":"x""#] {
            let patch = try JSONReader.read(Array(#"[{\#(op),"path":"\#(path)"}]"#.utf8))
            #expect(throws: LayoutError.self, "\(op) \(path)") { try JSONPatch.apply(patch, to: document) }
        }
        let valid = try JSONReader.read(
            Array(#"[{"op":"test","path":"/tabs/0","value":"a"},{"op":"replace","path":"/tabs/1","value":"x"}]"#.utf8))
        #expect(
            try JSONPatch.apply(valid, to: document)["tabs"]?.value
                == .array([.init(.string("a"), line: 1), .init(.string("x"), line: 1), .init(.string("c"), line: 1)]))
    }

    // MARK: The XML plist writer

    /// A CR is written `&#13;` (a literal one would come back as LF) and a character XML cannot hold becomes U+FFFD:
    /// Python's plistlib (expat underneath: an independent XML parser) reads the output back.
    @Test func xmlWriterOutputIsWellFormedAndRoundTrips() throws {
        let value = JSONValue.object(["cr": .string("a\rb\r\nc"), "bad": .string("x\u{1}y\u{FFFF}z"), "ok": .string("<&>\t\n é😀")])
        let bytes = PropertyListXML.encode(value)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("&#1;") && !text.unicodeScalars.contains { !XMLCharacters.isAllowed($0) })
        // Our own reader, which refuses what XML forbids, reads it back.
        let node = try XMLPlistReader.read(bytes)
        #expect(node["cr"]?.value == .string("a\rb\r\nc"))
        #expect(node["bad"]?.value == .string("x\u{FFFD}y\u{FFFD}z"))
        #expect(node["ok"]?.value == .string("<&>\t\n é😀"))
        // And an independent one.
        let decoded = try Self.python(
            "import plistlib,sys,json; sys.stdout.write(json.dumps(plistlib.loads(sys.stdin.buffer.read()), sort_keys=True))", input: bytes)
        #expect(decoded == #"{"bad": "x\ufffdy\ufffdz", "cr": "a\rb\r\nc", "ok": "<&>\t\n \u00e9\ud83d\ude00"}"#)
    }

    /// Layouts and strings tables refuse what an XML plist cannot carry, at the value's pointer.
    @Test func unservableCharactersAreRefusedAtValidation() throws {
        let layout = Fixtures.diagnostics(#"{"tabs":[{"title":"A\u0001","rootViewController":"A","params":{"k\u0002":"v"}}]}"#)
        #expect(Set(layout.map(\.pointer)) == ["/tabs/0/title", "/tabs/0/params/k\u{2}"])
        #expect(layout.allSatisfy { $0.message.contains("cannot be served in an XML property list") })
        do {
            _ = try StringsTable.read(Array(#"{"A":"x\u0007"}"#.utf8))
            Issue.record("a JSON strings table with U+0007 should be refused")
        } catch {
            #expect(error.diagnostics.first?.pointer == "/A")
        }
        do {
            _ = try StringsTable.read(Array("\"A\" = \"ok\";\n\"B\" = \"\\a\";".utf8))
            Issue.record("a .strings table with \\a should be refused")
        } catch {
            #expect(error.diagnostics.first?.pointer == "/B" && error.diagnostics.first?.line == 2)
        }
    }

    /// Runs python3 with `script`, `input` on its standard input; its standard output. Bounded by a deadline.
    static func python(_ script: String, input: [UInt8]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            Issue.record("python3 did not finish within 30 s")
        }
        #expect(process.terminationStatus == 0)
        return String(decoding: output, as: UTF8.self)
    }
}
