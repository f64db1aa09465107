import Foundation
import TabStore
import TabStorePostgres

/// A `--store` URL as given, the URL actually opened (with the password from a file and the client-side
/// deadlines added for PostgreSQL), and a form safe to log (password masked).
public struct StoreLocation: CustomStringConvertible, Sendable {
    /// What the store is opened with; may hold a password: never log it.
    public let url: String
    /// The URL with any password replaced by `***`.
    public let redacted: String

    public var description: String { redacted }

    /// Seconds libpq may take to connect (`connect_timeout`) and the server may spend on one statement.
    public static let connectTimeoutSeconds = 10
    public static let statementTimeoutMillis = 15_000

    public init(url given: String, environment: Environment) throws(ConfigurationError) {
        redacted = Self.redact(given)
        guard given.hasPrefix("postgres://") || given.hasPrefix("postgresql://") else {
            url = given
            return
        }
        var parameters: [String] = []
        if !given.contains("connect_timeout=") { parameters.append("connect_timeout=\(Self.connectTimeoutSeconds)") }
        if !given.contains("options=") { parameters.append("options=-c%20statement_timeout%3D\(Self.statementTimeoutMillis)") }
        if !given.contains("keepalives=") { parameters.append("keepalives=1&keepalives_idle=10&keepalives_interval=5&keepalives_count=3") }
        if let file = environment["TABSERVER_STORE_PASSWORD_FILE"] {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ConfigurationError("TABSERVER_STORE_PASSWORD_FILE=\(file) cannot be read")
            }
            let password = text.trimmingCharacters(in: .newlines)
            guard !password.isEmpty else { throw ConfigurationError("TABSERVER_STORE_PASSWORD_FILE=\(file) is empty") }
            parameters.append("password=" + (password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? password))
        }
        url = parameters.isEmpty ? given : given + (given.contains("?") ? "&" : "?") + parameters.joined(separator: "&")
    }

    /// `postgres://user:secret@host/db?password=x` → `postgres://user:***@host/db?password=***`.
    public static func redact(_ url: String) -> String {
        var text = url
        if let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].firstIndex(of: "@") {
            let userInfo = text[scheme.upperBound..<at]
            if let colon = userInfo.firstIndex(of: ":") { text.replaceSubrange(text.index(after: colon)..<at, with: "***") }
        }
        if let range = text.range(of: "password=") {
            let end = text[range.upperBound...].firstIndex(of: "&") ?? text.endIndex
            text.replaceSubrange(range.upperBound..<end, with: "***")
        }
        return text
    }
}

/// Opens the store a location names: `sqlite:PATH`, `memory:`, or `postgres://…`.
public func openAnyStore(_ location: StoreLocation) throws -> any TabStore {
    let url = location.url
    if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") { return try PostgresStore(url: url) }
    return try openStore(url: url)
}
