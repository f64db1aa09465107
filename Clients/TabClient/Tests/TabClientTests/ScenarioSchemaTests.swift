import Foundation
import Testing

/// The runner's known keys are `scenario.schema.json`'s: an unknown key anywhere in a scenario is refused by its pointer.
@Suite struct ScenarioSchemaTests {
    static let unknown = "notAKeyOfTheFormat"

    /// One object of most kinds, and free-form members (headers, file names, a layout's extra, a request's json).
    static func scenario() throws -> [String: Any] {
        let text = """
            {"about": "a scenario of most kinds of object", "covers": ["keys"], "config": {"account": "jack"},
             "bundle": {"version": 1},
             "files": {"jack.tabs.json": {"cache": {"etag": "v2", "layout": {"version": 2, "extra": {"anything": 1}}}}},
             "steps": [{"do": "refresh",
               "answers": [{"status": 200, "headers": {"X-Anything": "1"}, "bodyRepeat": {"text": "[", "times": 2}}],
               "expect": {"outcome": "updated", "cache": {"etag": "v2"}, "colors": {"dark": {"tintColor": "#ffffff"}},
                 "requests": [{"target": "/", "json": {"anything": {"deep": 1}}}], "files": {"any-name": "x"}}}]}
            """
        return try ScenarioRun.object(Data(text.utf8), "the test's scenario")
    }

    /// `value` with `key` added to the object at `pointer` (no escapes: these pointers have none).
    static func adding(_ key: String, at pointer: String, to value: Any) -> Any {
        adding(key, at: ArraySlice(pointer.split(separator: "/").map(String.init)), to: value)
    }

    static func adding(_ key: String, at parts: ArraySlice<String>, to value: Any) -> Any {
        guard let part = parts.first else {
            guard var object = value as? [String: Any] else { return value }
            object[key] = true
            return object
        }
        if var array = value as? [Any], let index = Int(part), array.indices.contains(index) {
            array[index] = adding(key, at: parts.dropFirst(), to: array[index])
            return array
        }
        guard var object = value as? [String: Any], let member = object[part] else { return value }
        object[part] = adding(key, at: parts.dropFirst(), to: member)
        return object
    }

    @Test func aScenarioOfKnownKeysPassesFreeFormMembersIncluded() throws {
        try ScenarioSchema.load().checkKeys(Self.scenario())
    }

    @Test(arguments: [
        "/", "/config", "/bundle", "/files/jack.tabs.json", "/files/jack.tabs.json/cache", "/files/jack.tabs.json/cache/layout",
        "/steps/0", "/steps/0/answers/0", "/steps/0/answers/0/bodyRepeat", "/steps/0/expect", "/steps/0/expect/cache",
        "/steps/0/expect/colors", "/steps/0/expect/colors/dark", "/steps/0/expect/requests/0",
    ])
    func anUnknownKeyIsRefusedWhereverItIs(place: String) throws {
        let scenario = try #require(Self.adding(Self.unknown, at: place, to: Self.scenario()) as? [String: Any])
        let error = #expect(throws: ScenarioError.self) { try ScenarioSchema.load().checkKeys(scenario) }
        #expect(error?.description == "\(place): unknown key '\(Self.unknown)'")
    }

    @Test func theRunnerRefusesAScenarioWithAnUnknownKeyBeforeItRuns() throws {
        let scenario = Self.adding("outcom", at: "/steps/0/expect", to: try Self.scenario())
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("misspelt.json")
        try JSONSerialization.data(withJSONObject: scenario).write(to: file)
        let error = #expect(throws: ScenarioError.self) { try ScenarioRun(file: file) }
        #expect(error?.description == "/steps/0/expect: unknown key 'outcom'")
    }
}
