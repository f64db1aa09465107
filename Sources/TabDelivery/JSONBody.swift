import Foundation
import TabJSON

/// Reads a JSON request body field by field and collects every problem with its JSON Pointer, so that one 422
/// names all of them.
struct BodyReader {
    private(set) var problems: [FieldError] = []

    /// The body as a JSON object; an empty body is `{}` when `emptyIsObject`.
    /// - Throws: ``RolloutError/tooLarge(limit:)`` over `limit` bytes, ``RolloutError/invalidBody(_:)`` when the
    ///   body is not JSON or not an object.
    static func object(_ body: [UInt8], limit: Int, emptyIsObject: Bool = false) throws(RolloutError) -> [String: JSONValue] {
        if body.count > limit { throw .tooLarge(limit: limit) }
        if emptyIsObject, body.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) { return [:] }
        guard let value = JSONValue.parse(Data(body)) else {
            throw .invalidBody([FieldError(pointer: "", message: "the body is not JSON")])
        }
        guard case .object(let members) = value else {
            throw .invalidBody([FieldError(pointer: "", message: "the body must be a JSON object, not \(value.kind)")])
        }
        return members
    }

    /// `base` extended by an object member (RFC 6901: `~` and `/` escaped).
    static func pointer(_ base: String, _ key: String) -> String {
        base + "/" + FieldError.escape(key)
    }

    /// `base` extended by an array index.
    static func pointer(_ base: String, _ index: Int) -> String { base + "/\(index)" }

    mutating func fail(_ pointer: String, _ message: String) {
        problems.append(FieldError(pointer: pointer, message: message))
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

    /// The string member `key` of `object`, nil when absent (or not a string); an empty one is refused, saying `whenEmpty`.
    mutating func nonEmptyString(
        _ object: [String: JSONValue], _ key: String, at base: String, maximumLength: Int, whenEmpty: String = "is empty"
    ) -> String? {
        guard let value = object[key] else { return nil }
        let pointer = Self.pointer(base, key)
        let text = string(value, at: pointer, maximumLength: maximumLength)
        if text?.isEmpty == true { fail(pointer, whenEmpty) }
        return text
    }

    /// The member `key` of `object` as the case of `Case` it names, nil when absent or wrong (refused as "must be one
    /// of "a", "b", not 'x'").
    mutating func oneOf<Case: RawRepresentable & CaseIterable>(
        _ type: Case.Type, _ object: [String: JSONValue], _ key: String, at base: String
    ) -> Case? where Case.RawValue == String {
        let pointer = Self.pointer(base, key)
        guard let value = object[key], let text = string(value, at: pointer, maximumLength: 32) else { return nil }
        guard let named = Case(rawValue: text) else {
            fail(pointer, "must be one of \(Case.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), not '\(text)'")
            return nil
        }
        return named
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
        case .real(let real): number = real
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
        case .real(let number): "\(number)"
        default: value.kind
        }
    }
}
