import Testing

@testable import TabBuilds
@testable import TabLayout

/// The gate and the trim, in process: targeting decides which tabs a build would get; each one's view controller
/// (and, when the build lists images, its images) must be declared.
@Suite struct BuildGateTests {
    static func layout(_ json: String) throws -> ResolvedLayout {
        let document = try LayoutSource.parse(Array(json.utf8), format: .json)
        return try LayoutResolver.resolve(name: "app", version: 1, document: document) { _ in nil }
    }

    static let twoTabs = #"""
        {"schemaVersion": 1, "tabs": [
          {"id": "home", "title": "Home", "rootViewController": "HomeViewController"},
          {"id": "search", "title": "Search", "rootViewController": "SearchViewController", "image": "magnifier"}]}
        """#

    static func build(_ version: String, _ controllers: Set<String>, images: Set<String>? = nil) throws -> Build {
        Build(
            id: try BuildID(platform: "iphone", appVersion: version), viewControllers: controllers, images: images, note: nil,
            declaredAtMillis: 0, declaredBy: "ci")
    }

    @Test func aBuildWithoutTheScreenMissesItsTabAtThePointer() throws {
        let misses = BuildGate.misses(try Self.layout(Self.twoTabs), for: try Self.build("2.0", ["HomeViewController"]))
        #expect(misses.map(\.pointer) == ["/tabs/1/rootViewController"] && misses.first?.value == "SearchViewController")
        #expect(
            BuildGate.misses(try Self.layout(Self.twoTabs), for: try Self.build("2.1", ["HomeViewController", "SearchViewController"]))
                .isEmpty)
        // A build that lists its images must ship the tab's too.
        let imageless = try Self.build("2.1", ["HomeViewController", "SearchViewController"], images: [])
        #expect(BuildGate.misses(try Self.layout(Self.twoTabs), for: imageless).map(\.pointer) == ["/tabs/1/image"])
    }

    @Test func targetingIsTheWayThroughTheGate() throws {
        let targeted = Self.twoTabs.replacingOccurrences(
            of: #""rootViewController": "SearchViewController""#,
            with: #""rootViewController": "SearchViewController", "minAppVersion": "2.1""#)
        #expect(BuildGate.misses(try Self.layout(targeted), for: try Self.build("2.0", ["HomeViewController"])).isEmpty)
        let android = Self.twoTabs.replacingOccurrences(
            of: #""rootViewController": "SearchViewController""#,
            with: #""rootViewController": "SearchViewController", "platforms": ["android"]"#)
        #expect(BuildGate.misses(try Self.layout(android), for: try Self.build("2.0", ["HomeViewController"])).isEmpty)
    }

    @Test func theTrimWithholdsWhatTheBuildCannotOpen() throws {
        let (trimmed, withheld) = BuildGate.trimmed(try Self.layout(Self.twoTabs), for: try Self.build("2.0", ["HomeViewController"]))
        #expect(trimmed.tabs.map(\.id) == ["home"] && withheld == ["search"])
    }

    @Test func aBuildThatOpensNoneOfTheTabsItWouldGetIsToldApartFromTargeting() throws {
        // Home is for android only: an iPhone build gets Search alone, and without its screen opens nothing.
        let layout = try Self.layout(
            Self.twoTabs.replacingOccurrences(
                of: #""rootViewController": "HomeViewController""#,
                with: #""rootViewController": "HomeViewController", "platforms": ["android"]"#))
        let lacking = try Self.build("2.0", ["HomeViewController"])
        #expect(BuildGate.opensNone(of: layout, trimmed: BuildGate.trimmed(layout, for: lacking).layout, for: lacking))
        let having = try Self.build("2.0", ["SearchViewController"])
        #expect(!BuildGate.opensNone(of: layout, trimmed: BuildGate.trimmed(layout, for: having).layout, for: having))
        // A layout with nothing for the build at all is targeting's doing, not the build's.
        let androidOnly = try Self.layout(
            #"{"schemaVersion": 1, "tabs": [{"id": "a", "title": "A", "rootViewController": "X", "platforms": ["android"]}]}"#)
        #expect(!BuildGate.opensNone(of: androidOnly, trimmed: BuildGate.trimmed(androidOnly, for: lacking).layout, for: lacking))
    }

    @Test func aBuildsBodyIsCheckedFieldByField() throws {
        #expect(try BuildSpec.decode(Array(#"{"viewControllers": ["A", "B"], "note": "2.0 (1234)"}"#.utf8)).viewControllers == ["A", "B"])
        func pointers(_ body: String) -> [String] {
            do {
                _ = try BuildSpec.decode(Array(body.utf8))
                return []
            } catch {
                if case .invalidBody(let problems) = error { return problems.map(\.pointer) }
                return ["\(error)"]
            }
        }
        #expect(pointers(#"{"viewControllers": [1, "ok", ""]}"#) == ["/viewControllers/0", "/viewControllers/2"])
        #expect(pointers(#"{"viewControllers": ["\#(String(repeating: "x", count: 129))"]}"#) == ["/viewControllers/0"])
        #expect(pointers(#"{"images": []}"#) == ["/viewControllers"])
        #expect(pointers(#"{"viewControllers": [], "colour": 1}"#) == ["/colour"])
        let many = (0...BuildSpec.maximumNames).map { "\"V\($0)\"" }.joined(separator: ",")
        #expect(pointers(#"{"viewControllers": [\#(many)]}"#) == ["/viewControllers"])
        #expect(throws: BuildError.notJSON) { try BuildSpec.decode(Array("[]".utf8)) }
        #expect(throws: BuildError.unknownPlatform("watch")) { try BuildID(platform: "watch", appVersion: "1") }
        #expect(throws: BuildError.notAVersion("2.x")) { try BuildID(platform: "iphone", appVersion: "2.x") }
        #expect(try BuildID(platform: "iphone", appVersion: "2.0") == BuildID(platform: "iphone", appVersion: "2"))
    }
}
