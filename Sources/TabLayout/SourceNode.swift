/// A value read from a source (JSON, XML or binary property list), with the 1-based line it starts on
/// when the format has lines. Readers build it; the validator turns it into a ``LayoutDocument``.
public struct SourceNode: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int64)
        case real(Double)
        case bool(Bool)
        /// An ISO 8601 date, as property lists carry them (kept as text).
        case date(String)
        case data([UInt8])
        case array([SourceNode])
        case dictionary([Member])
        /// JSON's null (only JSON has one; a layout refuses it, a Merge Patch uses it to delete).
        case null
    }

    /// One key and value of a dictionary, in source order.
    public struct Member: Sendable, Equatable {
        public var key: String
        public var node: SourceNode

        public init(key: String, node: SourceNode) {
            self.key = key
            self.node = node
        }
    }

    public var value: Value
    public var line: Int?

    public init(_ value: Value, line: Int? = nil) {
        self.value = value
        self.line = line
    }

    /// The member named `key`, when this is a dictionary that has one.
    public subscript(key: String) -> SourceNode? {
        guard case .dictionary(let members) = value else { return nil }
        return members.first { $0.key == key }?.node
    }

    /// What a person calls this kind of value in an error message.
    var kindName: String {
        switch value {
        case .string: "a string"
        case .integer: "an integer"
        case .real: "a number"
        case .bool: "a boolean"
        case .date: "a date"
        case .data: "data"
        case .array: "an array"
        case .dictionary: "a dictionary"
        case .null: "null"
        }
    }
}

/// JSON Pointers (RFC 6901) for diagnostics.
enum JSONPointer {
    /// `parent` + "/" + `token`, escaping `~` and `/` as RFC 6901 requires.
    static func appending(_ parent: String, _ token: String) -> String {
        guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return parent + "/" + token }
        return parent + "/" + token.replacingOccurrences("~", "~0").replacingOccurrences("/", "~1")
    }

    static func appending(_ parent: String, _ index: Int) -> String { parent + "/" + String(index) }

    /// The unescaped reference tokens of `pointer` ("" is the whole document).
    static func tokens(_ pointer: String) -> [String]? {
        if pointer.isEmpty { return [] }
        guard pointer.hasPrefix("/") else { return nil }
        return pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
            String($0).replacingOccurrences("~1", "/").replacingOccurrences("~0", "~")
        }
    }
}

extension String {
    /// Foundation-free substring replacement (this target keeps Foundation out of its hot paths).
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        // Most strings hold no occurrence: a byte scan for the target's first byte rules that out cheaply.
        guard let first = target.utf8.first, utf8.contains(first), contains(target) else { return self }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
