/// A JSON Schema (OpenAPI 3.1's dialect) stated as a value where a route declares its body or an answer, rendered as
/// YAML for `openapi.yaml`: `.object(["name": .string(maxLength: 128)], required: ["name"])`.
struct APISchema: Sendable {
    /// The schema's keywords, in the order they are written.
    let keywords: [(key: String, value: YAMLNode)]

    /// Any value (`{}`).
    static let any = APISchema(keywords: [])
    /// `{type: object}`: an object whose members the description leaves open.
    static let anyObject = APISchema(keywords: [("type", "object")])
    static let boolean = APISchema(keywords: [("type", "boolean")])

    /// An object with these members (in order), of which `required` must be present; other members are refused when
    /// `closed`, or must match `additionalProperties`.
    static func object(
        _ properties: KeyValuePairs<String, APISchema> = [:], required: [String] = [], closed: Bool = false,
        additionalProperties: APISchema? = nil
    ) -> APISchema {
        var keywords: [(key: String, value: YAMLNode)] = [("type", "object")]
        if !required.isEmpty { keywords.append(("required", .list(required))) }
        if !properties.isEmpty { keywords.append(("properties", .map(properties.map { ($0.key, $0.value.node) }))) }
        if closed { keywords.append(("additionalProperties", "false")) }
        if let additionalProperties { keywords.append(("additionalProperties", additionalProperties.node)) }
        return APISchema(keywords: keywords)
    }

    /// An array of `items` (any items when nil).
    static func array(_ items: APISchema? = nil, minItems: Int? = nil, maxItems: Int? = nil) -> APISchema {
        var keywords: [(key: String, value: YAMLNode)] = [("type", "array")]
        if let minItems { keywords.append(("minItems", .scalar(String(minItems)))) }
        if let maxItems { keywords.append(("maxItems", .scalar(String(maxItems)))) }
        if let items { keywords.append(("items", items.node)) }
        return APISchema(keywords: keywords)
    }

    /// A string: `format` (`date-time`, `uri`), length bounds, a regular expression it matches (`pattern`), or one
    /// of `values`.
    static func string(
        format: String? = nil, minLength: Int? = nil, maxLength: Int? = nil, pattern: String? = nil, values: [String] = []
    ) -> APISchema {
        var keywords: [(key: String, value: YAMLNode)] = [("type", "string")]
        if let format { keywords.append(("format", .scalar(format))) }
        if let minLength { keywords.append(("minLength", .scalar(String(minLength)))) }
        if let maxLength { keywords.append(("maxLength", .scalar(String(maxLength)))) }
        if let pattern { keywords.append(("pattern", .text(pattern))) }
        if !values.isEmpty { keywords.append(("enum", .list(values))) }
        return APISchema(keywords: keywords)
    }

    /// An integer within `minimum`…`maximum` when given.
    static func integer(minimum: Int? = nil, maximum: Int? = nil) -> APISchema {
        bounded("integer", minimum: minimum, maximum: maximum)
    }

    /// A number within `minimum`…`maximum` when given.
    static func number(minimum: Int? = nil, maximum: Int? = nil) -> APISchema {
        bounded("number", minimum: minimum, maximum: maximum)
    }

    private static func bounded(_ type: YAMLNode, minimum: Int?, maximum: Int?) -> APISchema {
        var keywords: [(key: String, value: YAMLNode)] = [("type", type)]
        if let minimum { keywords.append(("minimum", .scalar(String(minimum)))) }
        if let maximum { keywords.append(("maximum", .scalar(String(maximum)))) }
        return APISchema(keywords: keywords)
    }

    /// The shared schema `components/schemas/<name>`.
    static func ref(_ name: String) -> APISchema {
        APISchema(keywords: [("$ref", .scalar("'#/components/schemas/\(name)'"))])
    }

    /// This schema, whose value may also be JSON `null`.
    var orNull: APISchema {
        APISchema(
            keywords: keywords.map { keyword in
                guard keyword.key == "type", case .scalar(let type) = keyword.value else { return keyword }
                return ("type", .list([type, "null"]))
            })
    }

    /// This schema with a `description`.
    func described(_ text: String) -> APISchema {
        APISchema(keywords: keywords + [("description", .text(text))])
    }

    /// This schema with `examples`.
    func examples(_ values: String...) -> APISchema {
        APISchema(keywords: keywords + [("examples", .list(values))])
    }

    var node: YAMLNode { .map(keywords) }
}

/// A YAML value as `openapi.yaml` writes it: flow style (`{type: string}`) when it fits on a line, block style when not.
indirect enum YAMLNode: Sendable, ExpressibleByStringLiteral {
    /// Written as is (a number, a keyword, a quoted string).
    case scalar(String)
    /// Text, quoted.
    case text(String)
    /// A sequence of plain words (quoted where YAML would read them otherwise).
    case list([String])
    case map([(key: String, value: YAMLNode)])

    init(stringLiteral value: String) { self = .scalar(value) }

    /// `{$ref: '#/components/<section>/<name>'}`: a shared entry of the document's `components`.
    static func component(_ section: String, _ name: String) -> YAMLNode {
        .map([("$ref", .scalar("'#/components/\(section)/\(name)'"))])
    }

    /// The longest flow-style value kept on one line.
    private static let flowWidth = 100

    /// In flow style.
    var flow: String {
        switch self {
        case .scalar(let value): value
        case .text(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .list(let words): "[" + words.map(Self.word).joined(separator: ", ") + "]"
        case .map(let members): "{" + members.map { "\($0.key): \($0.value.flow)" }.joined(separator: ", ") + "}"
        }
    }

    /// As the value of a key: one line (flow style), or the lines after the key (block style) each indented by two
    /// spaces relative to it.
    var yaml: String {
        flow.count > Self.flowWidth ? block : flow
    }

    /// A map in block style, one member a line (other values in flow style).
    var block: String {
        guard case .map(let members) = self, !members.isEmpty else { return flow }
        return members.map { member in
            let value = member.value.yaml
            guard value != member.value.flow else { return "\(member.key): \(value)" }
            return "\(member.key):\n" + value.split(separator: "\n").map { "  \($0)" }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// A list word, single-quoted unless YAML reads it as plain text.
    private static func word(_ text: String) -> String {
        let plain =
            text.first?.isLetter == true && text.allSatisfy { $0.isLetter || $0.isNumber || "-_.".contains($0) }
            && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"].contains(text.lowercased())
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
