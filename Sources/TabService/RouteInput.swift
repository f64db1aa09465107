import MicroHTTPD
import TabAccess
import TabJSON

/// A type a route input is read as (Hummingbird's `Parameters.require(_:as:)`, swift-openapi-generator's
/// `Operations.X.Input`): its parse, the refusal a bad value gets, and its OpenAPI schema, so that the handler, the
/// answer to a bad value and `openapi.yaml` cannot disagree.
protocol RouteInputValue: Sendable {
    /// The value `text` (as sent, percent-decoded) stands for.
    /// - Parameter name: the input's name, for the refusal.
    /// - Throws: ``InputRefusal``: the problem a bad value gets.
    init(input text: String, named name: String) throws(InputRefusal)

    /// The OpenAPI `schema` of the input, YAML in flow style.
    static var schema: String { get }

    /// The statuses a value of it can be refused with, listed in the operations of the routes that declare it
    /// (400 unless said).
    static var refusals: [Int] { get }
}

extension RouteInputValue {
    static var refusals: [Int] { [400] }
}

/// Why a route input's value was refused.
enum InputRefusal: Error {
    /// This problem is the answer (e.g. 404 for a path that names nothing that can exist).
    case problem(Problem)
    /// The value is wrong, said at the input's JSON Pointer (`/name`); the route's wrong fields are answered together in
    /// one 400 whose detail names "the `label` query" (``RouteInputs/parse(_:request:match:label:)``): for query inputs.
    case field(String)
}

/// Any text.
extension String: RouteInputValue {
    init(input text: String, named name: String) { self = text }

    static var schema: String { "{type: string}" }
}

/// One input a route declares: where it is read, its name, and its type's parse and schema. A handler reads the value
/// from ``RouteMatch/inputs`` by the same location, name and type.
struct RouteInput: Sendable {
    /// Where an input is read.
    enum Location: String, Sendable {
        /// A `{name}` of the path template: always present.
        case path
        /// A query argument (`?name=`): optional.
        case query
        /// A request header field: optional.
        case header
    }

    let location: Location
    let name: String
    /// The OpenAPI schema of its type.
    let schema: String
    /// The statuses a bad value of it gets (``RouteInputValue/refusals``).
    let refusals: [Int]
    /// The shared `components/parameters` entry that documents it, when one does (`ifMatch`, `account`).
    let component: String?
    /// Its OpenAPI `description`, when it has one.
    let description: String?
    /// A header field that may repeat (`If-Match`) is read whole: its values joined with ", " (RFC 9110 §5.3).
    let joinsRepeats: Bool
    /// The type's parse.
    let parse: @Sendable (String) throws(InputRefusal) -> any Sendable

    private init<Value: RouteInputValue>(
        _ location: Location, _ name: String, _ type: Value.Type, component: String?, description: String?, joinsRepeats: Bool = false
    ) {
        self.location = location
        self.name = name
        schema = Value.schema
        refusals = Value.refusals
        self.component = component
        self.description = description
        self.joinsRepeats = joinsRepeats
        parse = { text throws(InputRefusal) in try Value(input: text, named: name) }
    }

    /// The path template's `{name}`, read as `Value`; documented by the parameter `component` when given.
    static func path<Value: RouteInputValue>(_ name: String, _ type: Value.Type, component: String? = nil) -> RouteInput {
        RouteInput(.path, name, type, component: component, description: nil)
    }

    /// The query argument `name`, read as `Value` when present; documented by the parameter `component` when given.
    static func query<Value: RouteInputValue>(
        _ name: String, _ type: Value.Type, component: String? = nil, description: String? = nil
    ) -> RouteInput {
        RouteInput(.query, name, type, component: component, description: description)
    }

    /// The header field `name`, read as `Value` when present (every value of it, joined, when it `repeats`);
    /// documented by the parameter `component` when given.
    static func header<Value: RouteInputValue>(
        _ name: String, _ type: Value.Type, component: String? = nil, description: String? = nil, repeats: Bool = false
    ) -> RouteInput {
        RouteInput(.header, name, type, component: component, description: description, joinsRepeats: repeats)
    }

    /// Its OpenAPI `parameters` entry (path parameters are required): its shared component's `$ref` when it has one.
    var parameterYAML: String {
        if let component { return "$ref: '#/components/parameters/\(component)'" }
        let required = location == .path ? ", required: true" : ""
        let described = description.map { ", description: '\($0)'" } ?? ""
        return "{name: \(name), in: \(location.rawValue)\(required)\(described), schema: \(schema)}"
    }
}

/// The typed values of a route's declared inputs, parsed by the router before the handler runs: a handler reads
/// only what its route declares (an undeclared name reads as nothing). Kept beside the declarations (the route's own
/// array, shared): the first ``inline`` in inline slots, so that the read path's inputs cost no allocation per request;
/// the rest (write routes, with their options) in an array.
struct RouteInputs: Sendable {
    /// How many inputs are held without an allocation.
    static let inline = 4

    private var declared: [RouteInput] = []
    private var values: ((any Sendable)?, (any Sendable)?, (any Sendable)?, (any Sendable)?) = (nil, nil, nil, nil)
    /// The values of the inputs past the inline ones, by index − ``inline``.
    private var overflow: [(any Sendable)?] = []

    /// No inputs (a route that declares none).
    init() {}

    private init(declared: [RouteInput]) {
        self.declared = declared
        if declared.count > Self.inline { overflow = Array(repeating: nil, count: declared.count - Self.inline) }
    }

    /// The value of the declared input at `location` named `name`, nil when absent or undeclared.
    private func value(_ location: RouteInput.Location, _ name: String) -> (any Sendable)? {
        guard let index = declared.firstIndex(where: { $0.location == location && $0.name == name }) else { return nil }
        return switch index {
        case 0: values.0
        case 1: values.1
        case 2: values.2
        case 3: values.3
        default: overflow[index - Self.inline]
        }
    }

    private mutating func set(_ index: Int, _ value: any Sendable) {
        switch index {
        case 0: values.0 = value
        case 1: values.1 = value
        case 2: values.2 = value
        case 3: values.3 = value
        default: overflow[index - Self.inline] = value
        }
    }

    /// The declared path input `{name}`; a path input is always there once its route matched.
    func path<Value: RouteInputValue>(_ name: String, as type: Value.Type = Value.self) -> Value {
        guard let value = value(.path, name) as? Value else {
            preconditionFailure("{\(name)} is not a declared path input of type \(Value.self)")
        }
        return value
    }

    /// The declared query input `name`, nil when the request has none (or the route declares none of that name and type).
    func query<Value: RouteInputValue>(_ name: String, as type: Value.Type = Value.self) -> Value? {
        value(.query, name) as? Value
    }

    /// The declared header input `name`, nil when the request has none (or the route declares none of that name and type).
    func header<Value: RouteInputValue>(_ name: String, as type: Value.Type = Value.self) -> Value? {
        value(.header, name) as? Value
    }

    /// Reads and parses `declared` from the request, in order.
    /// - Throws: the first ``InputRefusal/problem(_:)``, else one 400 with every ``InputRefusal/field(_:)`` at its
    ///   pointer ("the `label` query has N problems").
    static func parse(_ declared: [RouteInput], request: borrowing HTTPRequest, match: RouteMatch, label: String) throws(Problem)
        -> RouteInputs
    {
        var inputs = RouteInputs(declared: declared)
        var wrong: [FieldError] = []
        for (index, input) in declared.enumerated() {
            let text: String?
            switch input.location {
            case .path: text = match[input.name]
            case .query: text = request.query(input.name)
            case .header: text = input.joinsRepeats ? request.headerList(input.name) : request.header(input.name)
            }
            guard let text else { continue }
            do throws(InputRefusal) {
                inputs.set(index, try input.parse(text))
            } catch {
                switch error {
                case .problem(let problem): throw problem
                case .field(let message): wrong.append(FieldError(pointer: "/" + input.name, message: message))
                }
            }
        }
        guard wrong.isEmpty else { throw .invalidFields(InvalidFields(errors: wrong), what: "\(label) query", kind: .badRequest) }
        return inputs
    }
}
