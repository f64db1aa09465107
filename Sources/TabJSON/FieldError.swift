import Foundation

/// One refused value of a request body or layout source: its JSON Pointer (RFC 6901; `""` for the whole), the line it
/// stands on when known (XML plist and JSON sources), and what is wrong. problem+json's `errors` are these.
public struct FieldError: Sendable, Equatable, CustomStringConvertible {
    /// Where, e.g. `/accounts/1`; `""` for the whole document or body.
    public var pointer: String
    /// The 1-based line of the value in an XML plist or JSON source; nil for request bodies.
    public var line: Int?
    /// What is wrong.
    public var message: String

    /// A refused value at `pointer` (on `line`, when known).
    public init(pointer: String, line: Int? = nil, message: String) {
        self.pointer = pointer
        self.line = line
        self.message = message
    }

    /// `line: pointer: message` (the line only when known), the whole document written `(document)`.
    public var description: String { described(whole: "(document)") }

    /// `line: pointer: message` (the line only when known), with `whole` for the empty pointer (`(body)`, or `""`).
    public func described(whole: String) -> String {
        let place = pointer.isEmpty ? whole : pointer
        if let line { return "\(line): \(place): \(message)" }
        return "\(place): \(message)"
    }

    /// One reference token escaped for a JSON Pointer (RFC 6901 §3: `~` → `~0`, `/` → `~1`).
    public static func escape(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}
