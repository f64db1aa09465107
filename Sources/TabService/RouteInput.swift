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

    /// The OpenAPI `schema` of the input.
    static var schema: APISchema { get }

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

    static var schema: APISchema { .string() }
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
    let schema: APISchema
    /// The statuses a bad value of it gets (``RouteInputValue/refusals``).
    let refusals: [Int]
    /// The shared `components/parameters` entry that documents it, when one does (`ifMatch`, `account`).
    let component: String?
    /// Its OpenAPI `description`, when it has one.
    let description: String?
    /// A header field that may repeat (`If-Match`) is read whole: its values joined with ", " (RFC 9110 §5.3).
    let joinsRepeats: Bool
    /// The header field read when the query argument is absent (`X-Client-Platform` for `?platform=`): the value is
    /// parsed with the header's name. Its OpenAPI schema and description follow.
    let fallbackHeader: String?
    let fallbackSchema: APISchema?
    let fallbackDescription: String?
    /// The type whose parse reads it; nil for an input the handler reads in place
    /// (``readInPlace(_:_:schema:description:)``). A metatype, not a closure: reading it on the read path touches no
    /// reference count that every worker thread shares.
    let type: (any RouteInputValue.Type)?

    private init<Value: RouteInputValue>(
        _ location: Location, _ name: String, _ type: Value.Type, component: String?, description: String?, joinsRepeats: Bool = false,
        fallbackHeader: String? = nil, fallbackSchema: APISchema? = nil, fallbackDescription: String? = nil
    ) {
        self.location = location
        self.name = name
        schema = Value.schema
        refusals = Value.refusals
        self.component = component
        self.description = description
        self.joinsRepeats = joinsRepeats
        self.fallbackHeader = fallbackHeader
        self.fallbackSchema = fallbackSchema ?? Value.schema
        self.fallbackDescription = fallbackDescription
        self.type = type
    }

    private init(_ location: Location, _ name: String, schema: APISchema, description: String?) {
        self.location = location
        self.name = name
        self.schema = schema
        refusals = []
        component = nil
        self.description = description
        joinsRepeats = false
        fallbackHeader = nil
        fallbackSchema = nil
        fallbackDescription = nil
        type = nil
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

    /// The query argument `name`, else the header field `header` (every value of it, joined, when it `repeats`), read as
    /// `Value` when either is present (`?platform=` over `X-Client-Platform`); `Value` is given the name it was read
    /// under. Documented as two parameters, the header's with `headerSchema` (`Value`'s unless given) and
    /// `headerDescription` ("As ?name=" unless given).
    static func query<Value: RouteInputValue>(
        _ name: String, orHeader header: String, _ type: Value.Type, component: String? = nil, description: String? = nil,
        headerSchema: APISchema? = nil, headerDescription: String? = nil, repeats: Bool = false
    ) -> RouteInput {
        RouteInput(
            .query, name, type, component: component, description: description, joinsRepeats: repeats, fallbackHeader: header,
            fallbackSchema: headerSchema, fallbackDescription: headerDescription)
    }

    /// An input the handler reads from the request itself, declared so that `openapi.yaml` lists it: a negotiation or
    /// conditional header field read as bytes where it is (`Accept-Language`, `If-None-Match`), a repeated query
    /// argument. The router does not read it; it has no slot in ``RouteInputs``.
    static func readInPlace(_ location: Location, _ name: String, schema: APISchema = .string(), description: String? = nil)
        -> RouteInput
    {
        RouteInput(location, name, schema: schema, description: description)
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
        guard let component else {
            return APIParameter(name, in: location.rawValue, schema, required: location == .path, description: description).yaml
        }
        return APIParameter.component(component).yaml
    }

    /// Its OpenAPI `parameters` entries: ``parameterYAML``, then the header field read in its absence, if any.
    var parameterYAMLs: [String] {
        guard let fallbackHeader else { return [parameterYAML] }
        let described = fallbackDescription ?? "As ?\(name)= (which wins)."
        return [parameterYAML, APIParameter.header(fallbackHeader, fallbackSchema ?? schema, description: described).yaml]
    }
}

/// The typed values of a route's declared inputs, parsed by the router before the handler runs: a handler reads
/// only what its route declares (an undeclared name reads as nothing). Kept beside the declarations (the route's own
/// array, shared): the first ``inline`` in inline slots, each boxed as `any Sendable` when larger than three words;
/// the rest (write routes, with their options) in an array. The client plane's handlers read theirs themselves
/// (``Endpoint/readsItsInputs``), with no box and no lookup by name.
struct RouteInputs: Sendable {
    /// How many inputs are held without an allocation.
    static let inline = 10

    private var declared: [RouteInput] = []
    private var values:
        (
            (any Sendable)?, (any Sendable)?, (any Sendable)?, (any Sendable)?, (any Sendable)?, (any Sendable)?, (any Sendable)?,
            (any Sendable)?, (any Sendable)?, (any Sendable)?
        ) = (nil, nil, nil, nil, nil, nil, nil, nil, nil, nil)
    /// The values of the inputs past the inline ones, by index − ``inline``.
    private var overflow: [(any Sendable)?] = []

    /// No inputs (a route that declares none).
    init() {}

    private init(declared: [RouteInput]) {
        self.declared = declared
        // Inputs read in place come last and hold no value.
        let held = declared.lastIndex { $0.type != nil }.map { $0 + 1 } ?? 0
        if held > Self.inline { overflow = Array(repeating: nil, count: held - Self.inline) }
    }

    /// The value of the declared input at `location` named `name`, nil when absent or undeclared.
    private func value(_ location: RouteInput.Location, _ name: String) -> (any Sendable)? {
        guard let index = declared.firstIndex(where: { $0.location == location && $0.name == name }) else { return nil }
        return switch index {
        case 0: values.0
        case 1: values.1
        case 2: values.2
        case 3: values.3
        case 4: values.4
        case 5: values.5
        case 6: values.6
        case 7: values.7
        case 8: values.8
        case 9: values.9
        default: overflow[index - Self.inline]
        }
    }

    private mutating func set(_ index: Int, _ value: any Sendable) {
        switch index {
        case 0: values.0 = value
        case 1: values.1 = value
        case 2: values.2 = value
        case 3: values.3 = value
        case 4: values.4 = value
        case 5: values.5 = value
        case 6: values.6 = value
        case 7: values.7 = value
        case 8: values.8 = value
        case 9: values.9 = value
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
        // By index, reading fields in place: a copy of each declaration would retain its schema and refusals, shared
        // by every worker thread, on every request.
        for index in declared.indices {
            guard let type = declared[index].type, let (text, name) = declared[index].text(in: request, match: match) else { continue }
            do throws(InputRefusal) {
                inputs.set(index, try type.init(input: text, named: name))
            } catch {
                try refuse(error, declared[index].name, into: &wrong)
            }
        }
        try finish(wrong, label: label)
        return inputs
    }

    /// Reads `input` from the request as `Value`, nil when absent: what a handler that reads its declared inputs
    /// itself calls (``Endpoint/readsItsInputs``). Specialized for `Value`, so that no value is boxed.
    /// - Throws: the ``InputRefusal/problem(_:)`` that answers a bad value; a field refusal is added to `wrong`
    ///   (answered by ``finish(_:label:)``).
    static func read<Value: RouteInputValue>(
        _ input: RouteInput, as type: Value.Type, _ request: borrowing HTTPRequest, _ match: RouteMatch, wrong: inout [FieldError]
    ) throws(Problem) -> Value? {
        guard let (text, name) = input.text(in: request, match: match) else { return nil }
        do throws(InputRefusal) {
            return try Value(input: text, named: name)
        } catch {
            try refuse(error, input.name, into: &wrong)
            return nil
        }
    }

    /// Throws a refusal's problem, or adds its field error at the input's pointer to `wrong`.
    private static func refuse(_ refusal: InputRefusal, _ name: String, into wrong: inout [FieldError]) throws(Problem) {
        switch refusal {
        case .problem(let problem): throw problem
        case .field(let message): wrong.append(FieldError(pointer: "/" + name, message: message))
        }
    }

    /// One 400 for every field refusal of the route's inputs ("the `label` query has N problems"), if any.
    static func finish(_ wrong: [FieldError], label: String) throws(Problem) {
        guard wrong.isEmpty else { throw .invalidFields(InvalidFields(errors: wrong), what: "\(label) query", kind: .badRequest) }
    }
}

extension RouteInput {
    /// This input's text in the request and the name it was read under (its fallback header's when the query
    /// argument is absent), nil when the request has neither.
    func text(in request: borrowing HTTPRequest, match: RouteMatch) -> (text: String, name: String)? {
        let text: String? =
            switch location {
            case .path: match[name]
            case .query: request.query(name)
            case .header: Self.header(name, request, joined: joinsRepeats)
            }
        if let text { return (text, name) }
        guard let fallbackHeader, let text = Self.header(fallbackHeader, request, joined: joinsRepeats) else { return nil }
        return (text, fallbackHeader)
    }

    /// The header field `name`, its values joined when `joined` (`If-Match`, and `Prefer` read for `?wait=`): a String
    /// only when the request has the field.
    private static func header(_ name: String, _ request: borrowing HTTPRequest, joined: Bool) -> String? {
        joined ? request.withCombinedHeader(name) { $0.map { String(decoding: $0, as: UTF8.self) } } : request.header(name)
    }
}
