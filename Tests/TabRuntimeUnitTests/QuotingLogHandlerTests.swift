import Logging
import Testing

@testable import TabRuntime

/// Log lines cannot be forged by the names and reasons clients choose (docs/security.md, review 4, finding 8).
@Suite struct QuotingLogHandlerTests {
    @Test func aValueThatLooksLikeAFieldIsQuoted() {
        #expect(QuotingLogHandler.quoted("ops") == "ops")
        #expect(QuotingLogHandler.quoted("ops address=203.0.113.9") == #""ops address=203.0.113.9""#)
        #expect(QuotingLogHandler.quoted(#"a"b"#) == #""a\"b""#)
        #expect(QuotingLogHandler.quoted("") == #""""#)
    }

    @Test func controlAndBidiCharactersAreWrittenAsEscapes() {
        #expect(QuotingLogHandler.quoted("x\ny") == #""x\u{a}y""#)
        #expect(QuotingLogHandler.quoted("ab\u{202E}cd") == #""ab\u{202e}cd""#)
        #expect(QuotingLogHandler.escaped("reason\r\nlevel=critical") == #"reason\u{d}\u{a}level=critical"#)
        #expect(QuotingLogHandler.escaped(#"a\b"#) == #"a\\b"#)
    }

    @Test func metadataSetOnTheHandlerIsQuotedToo() {
        var handler = QuotingLogHandler.standardError(label: "test")
        handler[metadataKey: "name"] = "a b"
        #expect(handler[metadataKey: "name"] == .string(#""a b""#))
    }
}
