import Testing

@testable import TabLayout

/// `.strings` files as Xcode and editors leave them (Fixtures/strings; the binary ones written by Python's
/// plistlib, an independent writer of Apple's format).
@Suite struct StringsFileTests {
    @Test func aBinaryPropertyListStringsFileIsRead() throws {
        let table = try StringsTable.read(try Fixtures.bytes("strings/Localizable.binary.strings"))
        #expect(
            table.entries == [
                "HOME_TAB": "Accueil", "NEWS_TAB": "Actualités", "EMOJI": "Réglages ⚙️ 𝄞", "QUOTE": "Top \"News\"\nsecond line",
                "EMPTY": "",
            ])
    }

    @Test func aBinaryPropertyListThatIsNotADictionaryOfTextIsRefusedSayingWhere() throws {
        #expect(throws: LayoutError.self) { try StringsTable.read(try Fixtures.bytes("strings/NotAStringsDictionary.binary.strings")) }
        let numberValue = try Fixtures.bytes("strings/NumberValue.binary.strings")
        do {
            _ = try StringsTable.read(numberValue)
            Issue.record("a number value was accepted")
        } catch {
            #expect(error.diagnostics.map(\.pointer) == ["/COUNT"])
            #expect(error.diagnostics.first?.message == "must be a string, found an integer")
        }
    }

    @Test func aFileEndingInsideACommentKeepsTheEntriesBeforeItWithAWarning() throws {
        let (table, warnings) = try StringsTable.readReporting(try Fixtures.bytes("strings/EndsInsideComment.strings"))
        #expect(table.entries == ["HOME_TAB": "Accueil", "NEWS_TAB": "Actualités"])
        #expect(warnings.count == 1)
        #expect(warnings.first?.line == 5)
        #expect(warnings.first?.message.contains("ends inside the /* comment") == true)
        #expect(try StringsTable.read(try Fixtures.bytes("strings/EndsInsideComment.strings")) == table)
    }

    @Test func aFileEndingInsideACommentInTheMiddleOfAnEntryIsStillRefused() throws {
        let cut = try Fixtures.bytes("strings/EndsInsideCommentMidEntry.strings")
        do {
            _ = try StringsTable.read(cut)
            Issue.record("an entry cut by a comment was accepted")
        } catch {
            #expect(error.diagnostics.first?.line == 2)
            #expect(error.diagnostics.first?.message == ".strings: unterminated /* comment")
        }
    }

    @Test func aCompleteFileHasNoWarning() throws {
        let (table, warnings) = try StringsTable.readReporting(Array("/* a */ \"A\" = \"a\"; // b\n".utf8))
        #expect(table.entries == ["A": "a"] && warnings.isEmpty)
    }
}
