import HeaderFields
import Testing

@Suite struct EntityTagTests {
    let current = EntityTag(opaque: "abc")

    func weak(_ lines: [String], _ tag: EntityTag? = nil) -> Bool {
        withLines(lines) { EntityTagList.matchesWeakly($0, current: tag ?? current) }
    }

    func strong(_ lines: [String], _ tag: EntityTag? = nil) -> Bool {
        withLines(lines) { EntityTagList.matchesStrongly($0, current: tag ?? current) }
    }

    @Test func ifNoneMatchComparesWeakly() {
        #expect(weak(["\"abc\""]))
        #expect(weak(["W/\"abc\""]))
        #expect(weak(["*"]))
        #expect(weak(["\"x\", \"abc\""]))
        #expect(weak(["\"x\",W/\"abc\""]))
        #expect(weak(["\"x\"", "\"abc\""]))
        #expect(weak(["\"abc\""], EntityTag(opaque: "abc", isWeak: true)))
        #expect(!weak(["\"abcd\""]))
        #expect(!weak(["\"ab\""]))
        #expect(!weak(["\"ABC\""]))
        #expect(!weak(["abc"]))
        #expect(!weak(["w/\"abc\""]))
        #expect(!weak([""]))
        #expect(!weak([]))
        #expect(!weak(["\"abc"]))
        #expect(!weak(["\"x, \"abc\""]), "an unterminated tag swallows the rest of its line")
        #expect(weak(["\"a,b\""], EntityTag(opaque: "a,b")))
    }

    /// Apache mod_deflate's `DeflateAlterETag AddSuffix` (the default) turns `"abc"` into `"abc-gzip"`; clients behind
    /// it revalidate with that, and must get 304 while `"abc"` is current.
    @Test func ifNoneMatchTakesModDeflateSuffixAsTheSameRepresentation() {
        #expect(weak(["\"abc-gzip\""]))
        #expect(weak(["W/\"abc-gzip\""]))
        #expect(weak(["\"x\", \"abc-gzip\""]))
        #expect(!weak(["\"abc-gzip-gzip\""]))
        #expect(!weak(["\"abcd-gzip\""]))
        #expect(!weak(["\"abc-br\""]))
        #expect(!weak(["\"abc-GZIP\""]))
        #expect(!strong(["\"abc-gzip\""]))
    }

    @Test func ifMatchComparesStrongly() {
        #expect(strong(["\"abc\""]))
        #expect(strong(["*"]))
        #expect(strong(["\"x\", \"abc\""]))
        #expect(strong(["\"x\"", " \"abc\" "]))
        #expect(!strong(["W/\"abc\""]))
        #expect(!strong(["\"abc\""], EntityTag(opaque: "abc", isWeak: true)))
        #expect(!strong(["\"abcd\""]))
        #expect(!strong([]))
    }

    @Test func etagFieldsParseAndPrint() {
        #expect(EntityTag("\"abc\"") == EntityTag(opaque: "abc"))
        #expect(EntityTag("W/\"abc\"") == EntityTag(opaque: "abc", isWeak: true))
        #expect(EntityTag("W/\"abc\"")?.field == "W/\"abc\"")
        #expect(EntityTag("\"\"")?.opaque == [])
        #expect(EntityTag("abc") == nil)
        #expect(EntityTag("\"a\"b\"") == nil)
        #expect(EntityTag("\"abc") == nil)
        #expect(EntityTag("\"") == nil)
    }
}
