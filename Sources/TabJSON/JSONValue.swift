import Foundation

/// A JSON value: what request bodies are read as, and what layouts, answers and events are written from
/// (``CanonicalJSON``).
public enum JSONValue: Sendable, Equatable {
    case null
    case string(String)
    case integer(Int64)
    case real(Double)
    case bool(Bool)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses JSON text with Foundation's parser (fast on large bodies), telling `true` from `1` and `5` from `5.0`
    /// by the number's stored type; nil when `data` is not JSON.
    public static func parse(_ data: Data) -> JSONValue? {
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
            case "d", "f", "Q": self = .real(number.doubleValue)
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
    public var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .real: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
