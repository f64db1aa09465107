import Foundation

/// A JSON value as read from a request body, before it is checked field by field.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses JSON text with Foundation's parser (fast on large bodies), telling `true` from `1` and `5` from `5.0`
    /// by the number's stored type; nil when `data` is not JSON.
    static func parse(_ data: Data) -> JSONValue? {
        guard let any = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        return JSONValue(any)
    }

    private init?(_ any: Any) {
        switch any {
        case is NSNull:
            self = .null
        case let text as String:
            self = .string(text)
        case let number as NSNumber:
            switch String(cString: number.objCType) {
            case "c", "B": self = .bool(number.boolValue)
            case "d", "f", "Q": self = .number(number.doubleValue)
            default: self = .integer(number.int64Value)
            }
        case let items as [Any]:
            var values: [JSONValue] = []
            values.reserveCapacity(items.count)
            for item in items {
                guard let value = JSONValue(item) else { return nil }
                values.append(value)
            }
            self = .array(values)
        case let members as [String: Any]:
            var values: [String: JSONValue] = [:]
            for (key, member) in members {
                guard let value = JSONValue(member) else { return nil }
                values[key] = value
            }
            self = .object(values)
        default:
            return nil
        }
    }

    /// The kind of value, for messages: "a string", "an array".
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Reads a JSON request body field by field and collects every problem with its JSON Pointer, so that one 422
/// names all of them.
struct BodyReader {
    private(set) var problems: [FieldProblem] = []

    /// The body as a JSON object; an empty body is `{}` when `emptyIsObject`.
    /// - Throws: ``RolloutError/tooLarge(limit:)`` over `limit` bytes, ``RolloutError/invalidBody(_:)`` when the
    ///   body is not JSON or not an object.
    static func object(_ body: [UInt8], limit: Int, emptyIsObject: Bool = false) throws(RolloutError) -> [String: JSONValue] {
        if body.count > limit { throw .tooLarge(limit: limit) }
        if emptyIsObject, body.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) { return [:] }
        guard let value = JSONValue.parse(Data(body)) else {
            throw .invalidBody([FieldProblem(pointer: "", message: "the body is not JSON")])
        }
        guard case .object(let members) = value else {
            throw .invalidBody([FieldProblem(pointer: "", message: "the body must be a JSON object, not \(value.kind)")])
        }
        return members
    }

    /// `base` extended by an object member (RFC 6901: `~` and `/` escaped).
    static func pointer(_ base: String, _ key: String) -> String {
        base + "/" + key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    /// `base` extended by an array index.
    static func pointer(_ base: String, _ index: Int) -> String { base + "/\(index)" }

    mutating func fail(_ pointer: String, _ message: String) {
        problems.append(FieldProblem(pointer: pointer, message: message))
    }

    /// Takes the problems of `error` (an ``RolloutError/invalidBody(_:)`` relative to a value) as found at `pointer`.
    mutating func fail(_ pointer: String, _ error: RolloutError) {
        guard case .invalidBody(let inner) = error else { return fail(pointer, error.description) }
        for problem in inner { fail(pointer + problem.pointer, problem.message) }
    }

    /// Refuses members other than `known` (a misspelt field would otherwise be silently ignored).
    mutating func refuseUnknown(_ object: [String: JSONValue], known: Set<String>, at base: String) {
        for key in object.keys.sorted() where !known.contains(key) {
            let expected = known.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            fail(Self.pointer(base, key), "unknown member (expected \(expected))")
        }
    }

    /// The throw that ends reading: every problem collected, or nothing when there was none.
    func finish() throws(RolloutError) {
        if !problems.isEmpty { throw .invalidBody(problems) }
    }

    mutating func string(_ value: JSONValue, at pointer: String, maximumLength: Int) -> String? {
        guard case .string(let text) = value else {
            fail(pointer, "must be a string, not \(value.kind)")
            return nil
        }
        if text.unicodeScalars.count > maximumLength {
            fail(pointer, "is longer than \(maximumLength) characters")
            return nil
        }
        return text
    }

    mutating func bool(_ value: JSONValue, at pointer: String) -> Bool? {
        guard case .bool(let flag) = value else {
            fail(pointer, "must be true or false, not \(value.kind)")
            return nil
        }
        return flag
    }

    /// A version number: a whole number ≥ 1.
    mutating func version(_ value: JSONValue, at pointer: String) -> Int? {
        guard case .integer(let number) = value, number >= 1, number <= Int64(Int32.max) else {
            fail(pointer, "must be a version number (a whole number from 1), not \(Self.shown(value))")
            return nil
        }
        return Int(number)
    }

    /// A percent from 0 to 100, in hundredths at the finest.
    mutating func percent(_ value: JSONValue, at pointer: String) -> Percent? {
        let number: Double
        switch value {
        case .integer(let whole): number = Double(whole)
        case .number(let real): number = real
        default:
            fail(pointer, "must be a number from 0 to 100, not \(value.kind)")
            return nil
        }
        guard let percent = Percent(number) else {
            if number < 0 || number > 100 || !number.isFinite {
                fail(pointer, "must be from 0 to 100, not \(Self.shown(value))")
            } else {
                fail(pointer, "must be in hundredths of a percent at the finest (a bucket is 1/10,000 of installs)")
            }
            return nil
        }
        return percent
    }

    /// An RFC 3339 time.
    mutating func time(_ value: JSONValue, at pointer: String) -> Timestamp? {
        guard case .string(let text) = value, let time = Timestamp.parseRFC3339(text) else {
            fail(pointer, "must be an RFC 3339 time such as 2026-11-25T16:00:00Z, not \(Self.shown(value))")
            return nil
        }
        return time
    }

    /// A value shown in a message: strings quoted and shortened, numbers as written, others by kind.
    static func shown(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): "'\(ISODuration.shown(text))'"
        case .integer(let number): "\(number)"
        case .number(let number): "\(number)"
        default: value.kind
        }
    }
}
