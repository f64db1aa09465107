import Foundation
import TabJSON

/// A token's (or webhook's) `accounts` entry: a `Glob` whose literal characters are those of account names
/// (`[A-Za-z0-9._-]`) and whose one wildcard is `*` (only `*`: docs/security.md, "Scoped API tokens"), 1 to 128 characters. `*` alone, the default, is every
/// account; only it gives access to what belongs to no account (global strings tables).
public struct AccountGlob: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Every account.
    public static let all = AccountGlob(validated: "*")

    /// The glob.
    public let glob: Glob

    /// Why a text is not an account glob, said for a problem+json `errors` entry.
    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        /// The text refused.
        public let text: String
        public var description: String {
            "'\(text)' is not an account glob: 1 to 128 characters of A-Z, a-z, 0-9, '.', '_', '-', with '*' "
                + "(any run of characters) as the only wildcard"
        }
    }

    /// The account glob `text`.
    /// - Throws: `Invalid` when `text` is empty, longer than 128 characters, or holds another character.
    public init(_ text: String) throws(Invalid) {
        guard (1...128).contains(text.utf8.count), text.utf8.allSatisfy(Self.isAllowed) else { throw Invalid(text: text) }
        glob = Glob(text)
    }

    private init(validated text: String) { glob = Glob(text) }

    /// Whether the glob names `account`.
    public func matches(_ account: some StringProtocol) -> Bool { glob.matches(account) }

    /// The most globs one token or webhook may list: each request matches against all of them.
    public static let maximumCount = 64

    /// The `accounts` member of a token or webhook body (`/accounts`): a non-empty array of at most
    /// ``maximumCount`` globs, every problem added to `errors` at its pointer.
    public static func list(from value: Any, errors: inout [FieldError]) -> [AccountGlob] {
        guard let list = value as? [Any], !list.isEmpty else {
            errors.append(FieldError(pointer: "/accounts", message: "accounts must be a non-empty array of globs"))
            return []
        }
        guard list.count <= maximumCount else {
            errors.append(FieldError(pointer: "/accounts", message: "at most \(maximumCount) account globs, not \(list.count)"))
            return []
        }
        var globs: [AccountGlob] = []
        for (index, item) in list.enumerated() {
            guard let text = item as? String else {
                errors.append(FieldError(pointer: "/accounts/\(index)", message: "an account glob is a string"))
                continue
            }
            do throws(Invalid) {
                globs.append(try AccountGlob(text))
            } catch {
                errors.append(FieldError(pointer: "/accounts/\(index)", message: error.description))
            }
        }
        return globs
    }

    /// Whether every account `other` names is one this glob names too. Sound because an account glob's only
    /// wildcard is `*` and `*` is never a literal: when this glob matches `other`'s text, each `*` of that text is
    /// swallowed by one of this glob's stars, which swallow whatever the `*` stands for just as well.
    public func encloses(_ other: AccountGlob) -> Bool { glob.matches(other.glob.pattern) }

    /// Whether the glob names every account.
    public var isAll: Bool { glob.matchesEverything }

    public var description: String { glob.pattern }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(glob.pattern)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "*")
    }
}
