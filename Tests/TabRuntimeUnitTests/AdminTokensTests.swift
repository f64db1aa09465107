import Foundation
import Testing

@testable import TabRuntime

/// The tokens file: `name:token` lines, LF or CRLF, trimmed; anything malformed is refused with its line.
@Suite struct AdminTokensTests {
    @Test func crlfAndLfFilesGiveTheSameTokensTrimmed() throws {
        let lf = "# operators\nalice: alice-token-0123456789\n\nbob:bob-token-01234567890 \n"
        let crlf = lf.replacingOccurrences(of: "\n", with: "\r\n")
        for text in [lf, crlf] {
            let tokens = try AdminTokens.parse(text, file: "tokens")
            #expect(tokens.map(\.name) == ["alice", "bob"])
            #expect(tokens.map(\.token) == ["alice-token-0123456789", "bob-token-01234567890"])
        }
    }

    @Test(arguments: [
        ("alice:alice-token-0123456789\nbob:alice-token-0123456789\n", "tokens:2: the same token as line 1"),
        ("alice:alice-token-0123456789\r\nalice:other-token-0123456789\r\n", "tokens:2: 'alice' has a token on line 1 already"),
        ("\r\nno colon here\r\n", "tokens:2: expected name:token"),
        ("alice:short\n", "tokens:1: an admin token needs at least 16 characters (got 5)"),
    ])
    func malformedFilesAreRefusedWithTheirLine(text: String, message: String) {
        #expect(throws: ConfigurationError.self) { try AdminTokens.parse(text, file: "tokens") }
        do {
            _ = try AdminTokens.parse(text, file: "tokens")
        } catch {
            #expect("\(error)" == message)
        }
    }
}
