import Foundation
import Logging

/// The process environment, read only by the executable.
public struct Environment {
    public init() {}

    private let values = ProcessInfo.processInfo.environment

    public subscript(name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    /// An integer variable; a value that is not one is a usage error.
    public func integer(_ name: String) throws(ConfigurationError) -> Int? {
        guard let text = self[name] else { return nil }
        guard let value = Int(text) else { throw ConfigurationError("\(name)=\(text) is not an integer") }
        return value
    }

    /// A comma-separated list variable's items, trimmed, empty ones left out: none when it is not set.
    public func list(_ name: String) -> [String] {
        (self[name] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// Admin tokens from `TABSERVER_ADMIN_TOKEN` or `TABSERVER_ADMIN_TOKENS_FILE` (`name:token` lines), or one
/// random token printed once on standard error.
public enum AdminTokens {
    /// Tokens shorter than this are refused at start: a short token can be guessed.
    public static let minimumLength = 16

    public static func load(environment: Environment, logger: Logger) throws(ConfigurationError) -> [(name: String, token: String)] {
        var tokens: [(name: String, token: String)] = []
        if let token = environment["TABSERVER_ADMIN_TOKEN"] {
            try check(token, where: "TABSERVER_ADMIN_TOKEN")
            tokens.append(("admin", token))
        }
        if let path = environment["TABSERVER_ADMIN_TOKENS_FILE"] {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError("TABSERVER_ADMIN_TOKENS_FILE=\(path) cannot be read")
            }
            tokens += try parse(text, file: path)
        }
        if tokens.isEmpty {
            // The system's CSPRNG (getrandom(2) on Linux).
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<24).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let token = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            tokens.append(("admin", token))
            FileHandle.standardError.write(Data("tabserver: no admin token configured; this run's token is: \(token)\n".utf8))
        }
        var seen: Set<String> = []
        for (name, token) in tokens where !seen.insert(token).inserted {
            throw ConfigurationError("the token of '\(name)' is given twice: every person needs a token of their own")
        }
        logger.info("admin tokens: \(tokens.count) configured (\(tokens.map(\.name).joined(separator: ", ")))")
        return tokens
    }

    /// `name:token` lines (LF or CRLF); blank lines and `#` comments skipped; spaces around name and token
    /// trimmed. A malformed line, a short token, or a token or name given twice is an error naming the line.
    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> [(name: String, token: String)] {
        var tokens: [(name: String, token: String)] = []
        var names: [String: Int] = [:]
        var seen: [String: Int] = [:]
        // Swift reads "\r\n" as one Character: split on every newline kind, so CRLF files work as LF files do.
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else { throw ConfigurationError("\(file):\(number): expected name:token") }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let token = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !token.isEmpty else { throw ConfigurationError("\(file):\(number): expected name:token") }
            try check(token, where: "\(file):\(number)")
            if let first = seen[token] { throw ConfigurationError("\(file):\(number): the same token as line \(first)") }
            if let first = names[name] { throw ConfigurationError("\(file):\(number): '\(name)' has a token on line \(first) already") }
            seen[token] = number
            names[name] = number
            tokens.append((name, token))
        }
        return tokens
    }

    private static func check(_ token: String, where place: String) throws(ConfigurationError) {
        guard token.count >= minimumLength else {
            throw ConfigurationError("\(place): an admin token needs at least \(minimumLength) characters (got \(token.count))")
        }
        guard token.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw ConfigurationError("\(place): an admin token is visible ASCII without spaces")
        }
    }
}
