import ContentHash
import Foundation
import TabAccess
import Testing

@Suite struct TokenCredentialTests {
    static let urlSafe = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    @Test func anIssuedSecretIsTskTheIdAnd32RandomBytesInURLSafeBase64() throws {
        let id = TokenID.generate()
        let secret = IssuedSecret(for: id)
        #expect(secret.token.hasPrefix("tsk_" + id.rawValue + "_"))
        #expect(secret.token.utf8.count == 4 + 16 + 1 + 43)
        let encoded = secret.token.dropFirst(21)
        #expect(encoded.utf8.allSatisfy(Self.urlSafe.contains))
        #expect(!encoded.contains("="))
        #expect(try #require(Base64.decodeURLSafe(encoded)).count == 32)
    }

    @Test func idsAndCursorsAreTheirTextInJSONAndOtherTextIsRefusedByName() throws {
        let id = TokenID.generate()
        let cursor = AuditCursor(after: 42)
        #expect(try JSONEncoder().encode(id) == JSONEncoder().encode(id.rawValue))
        #expect(try JSONDecoder().decode(AuditCursor.self, from: JSONEncoder().encode(cursor)) == cursor)
        do {
            _ = try JSONDecoder().decode(TokenID.self, from: Data(#""NOT-AN-ID""#.utf8))
            Issue.record("decoded an id from text that is none")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription == "'NOT-AN-ID' is not a token id")
        }
        do {
            _ = try JSONDecoder().decode(AuditCursor.self, from: Data(#""b2.x""#.utf8))
            Issue.record("decoded a cursor from text that is none")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription == "'b2.x' is not a cursor")
        }
    }

    @Test func theStoreKeepsTheSHA256OfTheWholeTokenText() {
        let secret = IssuedSecret(for: TokenID.generate())
        #expect(secret.hash.bytes == SHA256.hash(Array(secret.token.utf8)))
        #expect(SecretHash(hex: secret.hash.hex) == secret.hash)
        #expect(!secret.hash.description.contains(secret.token))
    }

    @Test func secretsAndIdsDoNotRepeat() {
        let ids = Set((0..<1000).map { _ in TokenID.generate() })
        #expect(ids.count == 1000)
        let id = TokenID.generate()
        let tokens = Set((0..<1000).map { _ in IssuedSecret(for: id).token })
        #expect(tokens.count == 1000)
    }

    /// 32 000 random bytes: every byte value turns up, and no value is far from its share (a broken generator, say
    /// one that repeats or zeroes words, fails this; a uniform one fails with negligible probability).
    @Test func randomBytesCoverEveryValueEvenly() {
        let bytes = SecureRandom.bytes(32_000)
        #expect(bytes.count == 32_000)
        var counts = [Int](repeating: 0, count: 256)
        for byte in bytes { counts[Int(byte)] += 1 }
        #expect(counts.min()! > 50)  // Expected 125 each; σ ≈ 11.
        #expect(counts.max()! < 200)
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(5).count == 5)
    }

    @Test func aPresentedTokenIsReadBackWithItsIdAndHash() throws {
        let secret = IssuedSecret(for: TokenID.generate())
        let presented = try #require(PresentedToken(secret.token))
        #expect(presented.id == secret.id)
        #expect(presented.hash.matches(secret.hash))
    }

    @Test(arguments: [
        "", "tsk_", "tsk_abcdefghijklmnop_", "tsk_abcdefghijklmnop_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",  // 42 characters
        "tsk_abcdefghijklmnop_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",  // 44 characters
        "tsk_abcdefghijklmnop_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",  // padding
        "tsk_abcdefghijklmnop_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+",  // standard alphabet
        "tsk_abcdefghijklmnop_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB",  // non-zero trailing bits
        "tsk_ABCDEFGHIJKLMNOP_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",  // upper-case id
        "tsk_abcdefghijklmno1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",  // 1 is not base32
        "tsk-abcdefghijklmnop_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "tsk_abcdefghijklmnop-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "TSK_abcdefghijklmnop_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ])
    func malformedTokensAreNotPresentedTokens(_ text: String) {
        #expect(PresentedToken(text) == nil)
    }

    @Test func theWellFormedNeighbourOfThoseIsAccepted() {
        #expect(PresentedToken("tsk_abcdefghijklmnop_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") != nil)
    }

    @Test func theAuthorizationFieldIsReadAsRFC6750Says() throws {
        let secret = IssuedSecret(for: TokenID.generate())
        #expect(BearerCredential(authorization: nil) == .none)
        #expect(BearerCredential(authorization: "Basic YWRtaW46YWRtaW4=") == .none)
        #expect(BearerCredential(authorization: "Bearer") == .none)
        #expect(BearerCredential(authorization: "Bearer " + secret.token) == .apiToken(try #require(PresentedToken(secret.token))))
        #expect(BearerCredential(authorization: "bearer  " + secret.token) == .apiToken(try #require(PresentedToken(secret.token))))
        #expect(BearerCredential(authorization: "Bearer tsk_short") == .malformed)
        #expect(BearerCredential(authorization: "Bearer    ") == .malformed)
        #expect(BearerCredential(authorization: "Bearer tsk_" + secret.token.dropFirst(4).dropLast()) == .malformed)
        // Bootstrap tokens are whatever the operator chose, so anything else is theirs to match.
        #expect(BearerCredential(authorization: "Bearer has space") == .opaque(SecretHash(of: "has space")))
        #expect(BearerCredential(authorization: "Bearer é:!") == .opaque(SecretHash(of: "é:!")))
        #expect(BearerCredential(authorization: "Bearer admin-secret") == .opaque(SecretHash(of: "admin-secret")))
        #expect(BearerCredential(authorization: "Bearer abc/+~.=") == .opaque(SecretHash(of: "abc/+~.=")))
    }

    @Test func constantTimeEqualityIsEquality() {
        #expect(ConstantTime.equal([], []))
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equal([1, 2], [1, 2, 0]))
        #expect(!ConstantTime.equal([0x80], [0x00]))
        #expect(!ConstantTime.equal(Array(repeating: 0, count: 256), []))
    }
}

@Suite struct Base64Tests {
    /// RFC 4648 §10.
    @Test func theRFC4648VectorsEncodeAndDecode() {
        let vectors = [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(Base64.decode(encoded) == Array(plain.utf8))
            let unpadded = String(encoded.prefix { $0 != "=" })
            #expect(Base64.encodeURLSafe(Array(plain.utf8)) == unpadded)
            #expect(Base64.decodeURLSafe(unpadded) == Array(plain.utf8))
        }
    }

    @Test func theTwoAlphabetsDifferOnlyInTheirLastTwoCharacters() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.encodeURLSafe(bytes) == "-_-_")
        #expect(Base64.decode("-_-_") == nil)
        #expect(Base64.decodeURLSafe("+/+/") == nil)
    }

    @Test(arguments: ["Zg", "Zg=", "Zg===", "Zh==", "Z===", "Zm9v!", "Zm 9v", "=Zm9", "Zm=v"])
    func malformedStandardBase64IsRefused(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }
}
