import Foundation

/// The known keys of the scenario format, read from `Clients/conformance/scenario.schema.json`, the one place they are
/// written: every object a scenario holds is matched to its schema (through `$ref`, `properties`,
/// `additionalProperties` and `items`) and a key its `properties` do not name is refused, so that a scenario never
/// passes by being half read. Not a JSON Schema validator: types and enums are `scripts/scenario-schema-check`'s, which
/// validates every scenario fully.
struct ScenarioSchema {
    typealias Object = [String: Any]

    let root: Object
    let definitions: [String: Object]

    /// - Throws: ``ScenarioError`` when the schema has no `$defs`.
    init(_ root: Object) throws {
        guard let definitions = root["$defs"] as? [String: Object] else { throw ScenarioError("scenario.schema.json has no $defs") }
        self.root = root
        self.definitions = definitions
    }

    /// `scenario.schema.json` beside the scenarios.
    static func load() throws -> ScenarioSchema {
        let file = ConformanceTests.directory.appendingPathComponent("scenario.schema.json")
        return try ScenarioSchema(ScenarioRun.object(Data(contentsOf: file), file.lastPathComponent))
    }

    /// Refuses the first key the schema does not name, with its JSON Pointer: `/steps/0/expect: unknown key 'x'`.
    /// - Throws: ``ScenarioError``.
    func checkKeys(_ scenario: Object) throws {
        try check(scenario, against: root, at: "")
    }

    private func check(_ value: Any, against node: Object, at place: String) throws {
        if let reference = node["$ref"] as? String {
            let prefix = "#/$defs/"
            guard reference.hasPrefix(prefix), let definition = definitions[String(reference.dropFirst(prefix.count))] else {
                throw ScenarioError("scenario.schema.json: no definition \(reference)")
            }
            try check(value, against: definition, at: place)
        }
        if let object = value as? Object {
            let properties = node["properties"] as? Object
            let values = node["additionalProperties"] as? Object
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                let path = place + "/" + key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
                if let properties {
                    guard let schema = properties[key] as? Object else {
                        throw ScenarioError("\(place.isEmpty ? "/" : place): unknown key '\(key)'")
                    }
                    try check(member, against: schema, at: path)
                }
                if let values { try check(member, against: values, at: path) }
            }
        }
        if let array = value as? [Any], let items = node["items"] as? Object {
            for (index, element) in array.enumerated() { try check(element, against: items, at: "\(place)/\(index)") }
        }
    }
}
