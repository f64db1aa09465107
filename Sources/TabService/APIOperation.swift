/// A route's OpenAPI operation, written once beside its handler as values (``APISchema``, ``APIParameter``,
/// ``APIHeader``) rendered as `openapi.yaml`'s YAML; security, 401/429 and HEAD come from the route.
struct APIOperation: Sendable {
    var summary: String
    /// `parameters` entries besides the route's declared inputs (generated from them, first), as YAML.
    var parameters: [String] = []
    /// The `requestBody` value as YAML, nil for operations without a body.
    var requestBody: String?
    /// Status code → the response's YAML value.
    var responses: [(status: Int, yaml: String)]

    /// - Parameters:
    ///   - parameters: the parameters the handler reads itself (not declared inputs).
    ///   - requestBody: the `requestBody` (``body(_:)``, ``requestBody(_:)``), for bodies one JSON schema does not state.
    ///   - responses: status → answer (``json(_:_:headers:)``, ``answer(_:_:headers:)``, ``response(_:)``).
    ///   - problems: the statuses answered with a problem document.
    init(
        _ summary: String, parameters: [APIParameter] = [], requestBody: String? = nil, responses: [(Int, String)] = [],
        problems: [Int] = []
    ) {
        self.summary = summary
        self.parameters = parameters.map(\.yaml)
        self.requestBody = requestBody
        self.responses = responses.map { (status: $0.0, yaml: $0.1) } + problems.map { (status: $0, yaml: Self.problem) }
    }

    /// An operation whose request body is `body` (JSON), required unless `bodyRequired` is false, said either way.
    init(
        _ summary: String, parameters: [APIParameter] = [], body: APISchema, bodyRequired: Bool = true,
        responses: [(Int, String)] = [], problems: [Int] = []
    ) {
        let requestBody = YAMLNode.map([("required", .scalar(String(bodyRequired))), ("content", Self.content(["application/json": body]))])
        self.init(summary, parameters: parameters, requestBody: Self.value(requestBody), responses: responses, problems: problems)
    }

    /// A JSON answer: its description, headers and body's schema.
    static func json(_ description: String, _ schema: APISchema, headers: KeyValuePairs<String, APIHeader> = [:]) -> String {
        answer(description, ["application/json": schema], headers: headers)
    }

    /// An answer: its description, headers and a schema per media type (none: an answer without a body, or one the
    /// description names).
    static func answer(
        _ description: String, _ content: KeyValuePairs<String, APISchema> = [:], headers: KeyValuePairs<String, APIHeader> = [:]
    ) -> String {
        var members: [(key: String, value: YAMLNode)] = [("description", .text(description))]
        if !headers.isEmpty { members.append(("headers", .map(headers.map { ($0.key, $0.value.node) }))) }
        if !content.isEmpty { members.append(("content", Self.content(content))) }
        return value(.map(members))
    }

    /// A required request body with a schema per media type, for `requestBody`.
    static func body(_ content: KeyValuePairs<String, APISchema>) -> String {
        YAMLNode.map([("required", "true"), ("content", Self.content(content))]).block
    }

    /// The shared answer `components/responses/<name>`.
    static func response(_ name: String) -> String { YAMLNode.component("responses", name).flow }

    /// The shared request body `components/requestBodies/<name>`.
    static func requestBody(_ name: String) -> String { YAMLNode.component("requestBodies", name).flow }

    /// A map as a member's value: block style, unless that is one line (then flow: `key: {a: b}`, not `key: a: b`).
    private static func value(_ map: YAMLNode) -> String {
        let block = map.block
        return block.contains("\n") ? block : map.flow
    }

    private static func content(_ content: KeyValuePairs<String, APISchema>) -> YAMLNode {
        .map(content.map { ($0.key, .map([("schema", $0.value.node)])) })
    }

    /// The component every error answer refers to.
    static let problem = response("Problem")
}

/// A parameter a handler reads itself (a ``RouteInput`` documents its own), as `openapi.yaml` lists it.
struct APIParameter: Sendable {
    /// Its `parameters` entry, one line.
    let yaml: String

    /// The shared parameter `components/parameters/<name>`.
    static func component(_ name: String) -> APIParameter {
        APIParameter(yaml: "$ref: '#/components/parameters/\(name)'")
    }

    /// The query argument `name`; one that may repeat (`?locale=a&locale=b`) is an `exploded` array.
    static func query(
        _ name: String, _ schema: APISchema = .string(), required: Bool = false, description: String? = nil, exploded: Bool = false
    ) -> APIParameter {
        APIParameter(name, in: "query", schema, required: required, description: description, exploded: exploded)
    }

    /// The header field `name`.
    static func header(_ name: String, _ schema: APISchema = .string(), description: String? = nil) -> APIParameter {
        APIParameter(name, in: "header", schema, required: false, description: description, exploded: false)
    }

    private init(yaml: String) { self.yaml = yaml }

    /// The parameter `name` read from `location` (`path`, `query`, `header`).
    init(
        _ name: String, in location: String, _ schema: APISchema, required: Bool = false, description: String? = nil,
        exploded: Bool = false
    ) {
        var members: [(key: String, value: YAMLNode)] = [("name", .scalar(name)), ("in", .scalar(location))]
        if required { members.append(("required", "true")) }
        if let description { members.append(("description", .text(description))) }
        members.append(("schema", schema.node))
        if exploded { members += [("style", "form"), ("explode", "true")] }
        yaml = YAMLNode.map(members).flow
    }
}

/// A header of an answer.
enum APIHeader: Sendable {
    /// The shared header `components/headers/<name>`.
    case component(String)
    /// A header whose value matches `schema`.
    case schema(APISchema)

    var node: YAMLNode {
        switch self {
        case .component(let name): .component("headers", name)
        case .schema(let schema): .map([("schema", schema.node)])
        }
    }
}
