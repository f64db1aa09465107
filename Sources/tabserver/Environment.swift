import ArgumentParser
import Foundation
import Logging

/// The process environment, read only by the executable.
struct Environment {
    private let values = ProcessInfo.processInfo.environment

    subscript(name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    /// An integer variable; a value that is not one is a usage error.
    func integer(_ name: String) throws -> Int? {
        guard let text = self[name] else { return nil }
        guard let value = Int(text) else { throw ValidationError("\(name)=\(text) is not an integer") }
        return value
    }
}

/// Admin tokens from `TABSERVER_ADMIN_TOKEN` or `TABSERVER_ADMIN_TOKENS_FILE` (`name:token` lines), or one
/// random token printed once on standard error.
enum AdminTokens {
    static func load(environment: Environment, logger: Logger) throws -> [(name: String, token: String)] {
        var tokens: [(name: String, token: String)] = []
        if let token = environment["TABSERVER_ADMIN_TOKEN"] { tokens.append(("admin", token)) }
        if let path = environment["TABSERVER_ADMIN_TOKENS_FILE"] {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("TABSERVER_ADMIN_TOKENS_FILE=\(path) cannot be read")
            }
            for (number, line) in text.split(separator: "\n").enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                guard let colon = trimmed.firstIndex(of: ":"), colon != trimmed.startIndex, trimmed.index(after: colon) != trimmed.endIndex
                else {
                    throw ValidationError("\(path):\(number + 1): expected name:token")
                }
                tokens.append((String(trimmed[..<colon]), String(trimmed[trimmed.index(after: colon)...])))
            }
        }
        if tokens.isEmpty {
            var bytes = [UInt8](repeating: 0, count: 24)
            let random = FileHandle(forReadingAtPath: "/dev/urandom")
            if let data = try random?.read(upToCount: 24) { bytes = [UInt8](data) }
            let token = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            tokens.append(("admin", token))
            FileHandle.standardError.write(Data("tabserver: no admin token configured; this run's token is: \(token)\n".utf8))
        }
        logger.info("admin tokens: \(tokens.count) configured (\(tokens.map(\.name).joined(separator: ", ")))")
        return tokens
    }
}
