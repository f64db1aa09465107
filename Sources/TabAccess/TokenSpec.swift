import Foundation
import TabJSON

/// A request body refused field by field (422), every problem found, nothing changed.
public struct InvalidFields: Error, Sendable, Equatable, CustomStringConvertible {
    /// Every problem, in the order of the fields.
    public let errors: [FieldError]

    /// A refusal listing `errors`.
    public init(errors: [FieldError]) { self.errors = errors }

    public var description: String { errors.map { $0.described(whole: "") }.joined(separator: "; ") }
}

/// A validated `POST /v1/tokens` body: `{"name", "scopes", "accounts"?, "environments"?, "expiresAt"?}`.
public struct TokenSpec: Sendable, Equatable {
    /// 1 to 128 characters.
    public let name: String
    /// At least one.
    public let scopes: Set<Scope>
    /// At least one; `["*"]` when not given.
    public let accounts: [AccountGlob]
    /// Nil (all) when not given; else at least one configured environment.
    public let environments: Set<String>?
    /// In the future; nil never expires.
    public let expiresAt: Date?

    /// Reads and checks `body` (JSON) at `now`, against the environments the server has.
    /// - Throws: `InvalidFields` with every problem: not a JSON object, a name missing, empty or over 128
    ///   characters, scopes missing, empty or unknown, a bad account glob, an unknown environment, `expiresAt` not
    ///   RFC 3339 or not in the future, or a field this body does not have.
    public init(json body: [UInt8], environments known: [String], now: Date) throws(InvalidFields) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw InvalidFields(errors: [FieldError(pointer: "", message: "the body must be a JSON object")])
        }
        var errors: [FieldError] = []
        for key in object.keys.sorted() where !["name", "scopes", "accounts", "environments", "expiresAt"].contains(key) {
            errors.append(FieldError(pointer: "/" + FieldError.escape(key), message: "unknown field"))
        }

        let name = object["name"] as? String
        let nameIsValid = name.map { (1...128).contains($0.count) && !$0.unicodeScalars.contains(where: \.properties.isControlLike) }
        if nameIsValid != true {
            errors.append(
                FieldError(
                    pointer: "/name",
                    message: "name must be a string of 1 to 128 characters, none of them controls or bidi and other format characters"))
        }

        var scopes = Set<Scope>()
        if let list = object["scopes"] as? [Any], !list.isEmpty {
            for (index, item) in list.enumerated() {
                if let text = item as? String, let scope = Scope(rawValue: text) {
                    scopes.insert(scope)
                } else {
                    errors.append(
                        FieldError(pointer: "/scopes/\(index)", message: "'\(item)' is not a scope (\(Scope.names))"))
                }
            }
        } else {
            errors.append(FieldError(pointer: "/scopes", message: "scopes must be a non-empty array of \(Scope.names)"))
        }

        var accounts: [AccountGlob] = [.all]
        if let value = object["accounts"] { accounts = AccountGlob.list(from: value, errors: &errors) }

        var environments: Set<String>?
        if let value = object["environments"] {
            if let list = value as? [Any], !list.isEmpty {
                environments = []
                for (index, item) in list.enumerated() {
                    if let text = item as? String, known.contains(text) {
                        environments?.insert(text)
                    } else {
                        let message = "'\(item)' is not an environment (\(known.joined(separator: ", ")))"
                        errors.append(FieldError(pointer: "/environments/\(index)", message: message))
                    }
                }
            } else {
                errors.append(FieldError(pointer: "/environments", message: "environments must be a non-empty array"))
            }
        }

        var expiresAt: Date?
        if let value = object["expiresAt"], !(value is NSNull) {
            if let text = value as? String, let date = RFC3339.date(from: text) {
                if date > now {
                    expiresAt = date
                } else {
                    errors.append(FieldError(pointer: "/expiresAt", message: "expiresAt must be in the future"))
                }
            } else {
                errors.append(FieldError(pointer: "/expiresAt", message: "expiresAt must be an RFC 3339 date-time"))
            }
        }

        guard errors.isEmpty, let name else { throw InvalidFields(errors: errors) }
        self.name = name
        self.scopes = scopes
        self.accounts = accounts
        self.environments = environments
        self.expiresAt = expiresAt
    }
}

/// A validated `POST /v1/tokens/{id}/rotate` body: `{"overlap"?: ISO 8601 duration}`, at most 7 days.
public struct RotationSpec: Sendable, Equatable {
    /// The longest overlap.
    public static let maximumOverlap: TimeInterval = 7 * 86_400

    /// How long the old secrets stay valid; zero (the default) retires them at once, as after a leak.
    public let overlap: TimeInterval

    /// Reads and checks `body`; an empty body is `{}`.
    /// - Throws: `InvalidFields` when it is not a JSON object, or `overlap` is not an ISO 8601 duration of at most
    ///   7 days.
    public init(json body: [UInt8]) throws(InvalidFields) {
        guard !body.isEmpty else {
            overlap = 0
            return
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw InvalidFields(errors: [FieldError(pointer: "", message: "the body must be a JSON object")])
        }
        guard let value = object["overlap"] else {
            overlap = 0
            return
        }
        guard let text = value as? String, let seconds = ISO8601Duration.seconds(text) else {
            throw InvalidFields(errors: [FieldError(pointer: "/overlap", message: "overlap must be an ISO 8601 duration such as PT1H")])
        }
        guard seconds <= Self.maximumOverlap else {
            throw InvalidFields(errors: [FieldError(pointer: "/overlap", message: "overlap must be at most 7 days (P7D)")])
        }
        overlap = seconds
    }
}

extension Unicode.Scalar.Properties {
    /// A control character (C0, DEL, C1) or a line or paragraph separator: nothing a name written into logs,
    /// audit entries and the console should hold.
    fileprivate var isControlLike: Bool {
        generalCategory == .control || generalCategory == .lineSeparator || generalCategory == .paragraphSeparator
            || generalCategory == .format  // bidi overrides and isolates (U+202A…202E, U+2066…2069), zero-width marks
    }
}
