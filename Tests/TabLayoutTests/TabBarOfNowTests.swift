import Foundation
import Testing

@testable import TabLayout

/// Tab bars as phones draw them now (docs/layout-format.md): dark colours, accessibility labels, the search tab,
/// groups and android's five items, as sources
/// say them (in JSON, XML and binary property lists), as overlays change them, and as every client gets them.
@Suite struct TabBarOfNowTests {
    static let source = """
        {
          "schemaVersion": 1,
          "defaultLocale": "en",
          "appearance": {"backgroundColor": "#ffffff", "tintColor": "#007aff", "dark": {"backgroundColor": "#000000", "tintColor": "#0a84ff"}},
          "moreTab": {"title": "MORE", "accessibilityLabel": "MORE_LABEL", "accessibilityHint": "Shows the other tabs"},
          "groups": [
            {"id": "library", "title": "LIBRARY", "tabs": ["home", "news"]},
            {"id": "ipad-only", "title": "Tools", "tabs": ["tools"]}
          ],
          "tabs": [
            {"id": "home", "title": "HOME", "rootViewController": "HomeViewController", "accessibilityLabel": "HOME_LABEL", "accessibilityHint": "Opens the start page"},
            {"id": "news", "title": "News", "rootViewController": "NewsViewController"},
            {"id": "search", "title": "Search", "rootViewController": "SearchViewController", "role": "search"},
            {"id": "tools", "title": "Tools", "rootViewController": "ToolsViewController", "platforms": ["ipad"]}
          ],
          "strings": {
            "en": {"HOME": "Home", "HOME_LABEL": "Home screen", "LIBRARY": "Library", "MORE": "More", "MORE_LABEL": "More tabs"},
            "fr": {"HOME": "Accueil", "HOME_LABEL": "Écran d'accueil", "LIBRARY": "Bibliothèque", "MORE": "Plus", "MORE_LABEL": "Autres onglets"}
          }
        }
        """

    static func resolved(_ json: String, bases: [String: String] = [:], strict: Bool = true) throws -> ResolvedLayout {
        let documents = try bases.mapValues { try LayoutSource.parse(Array($0.utf8), format: .json) }
        return try LayoutResolver.resolve(
            name: "test", version: 1, document: try LayoutSource.parse(Array(json.utf8), format: .json), strict: strict
        ) { documents[$0] }
    }

    static func compiled(_ json: String, locale: String = "en", platform: Platform? = nil) throws -> [String: JSONValue] {
        let layout = LayoutCompiler.compile(try resolved(json), for: ClientContext(locale: locale, platform: platform), globalStrings: [:])
        guard case .object(let object) = layout.document else { throw LayoutError(pointer: "", line: nil, "not an object") }
        return object
    }

    static func tabs(_ document: [String: JSONValue], _ key: String = "tabs") -> [[String: JSONValue]] {
        guard case .array(let tabs)? = document[key] else { return [] }
        return tabs.compactMap { if case .object(let tab) = $0 { tab } else { nil } }
    }

    static func ids(_ document: [String: JSONValue]) -> [String] {
        tabs(document).compactMap { if case .string(let id)? = $0["id"] { id } else { nil } }
    }

    // MARK: Compiled

    @Test func darkColoursAreCompiledAsWrittenInUpperCase() throws {
        let document = try Self.compiled(Self.source)
        guard case .object(let appearance)? = document["appearance"] else { Issue.record("no appearance"); return }
        #expect(appearance["tintColor"] == .string("#007AFF"))
        #expect(appearance["dark"] == .object(["backgroundColor": .string("#000000"), "tintColor": .string("#0A84FF")]))
    }

    @Test func accessibilityLabelsAreLocalizedLikeTitles() throws {
        let french = try Self.compiled(Self.source, locale: "fr")
        let home = Self.tabs(french)[0]
        #expect(home["accessibilityLabel"] == .string("Écran d'accueil"))
        #expect(home["accessibilityLabelKey"] == .string("HOME_LABEL"))
        #expect(home["accessibilityHint"] == .string("Opens the start page"))
        #expect(home["accessibilityHintKey"] == nil)
        #expect(Self.tabs(french)[1]["accessibilityLabel"] == nil)
    }

    @Test func theSearchTabKeepsItsRole() throws {
        let tabs = Self.tabs(try Self.compiled(Self.source))
        #expect(tabs.map { $0["role"] } == [nil, nil, .string("search"), nil])
    }

    @Test func groupsAreLocalizedAndKeepOnlyTheTabsTheClientGets() throws {
        let ipad = try Self.compiled(Self.source, locale: "fr", platform: .ipad)
        #expect(
            ipad["groups"]
                == .array([
                    .object([
                        "id": .string("library"), "title": .string("Bibliothèque"), "titleKey": .string("LIBRARY"),
                        "tabs": .array([.string("home"), .string("news")]),
                    ]),
                    .object(["id": .string("ipad-only"), "title": .string("Tools"), "tabs": .array([.string("tools")])]),
                ]))
        // An iPhone does not get the tools tab: its group, left empty, is dropped.
        guard case .array(let groups)? = try Self.compiled(Self.source, platform: .iphone)["groups"] else {
            Issue.record("no groups")
            return
        }
        #expect(groups.count == 1)
    }

    @Test func moreTakesAccessibilityLabelsToo() throws {
        var json = Self.source
        json = json.replacingOccurrences(of: "\"schemaVersion\": 1,", with: "\"schemaVersion\": 1, \"maxVisibleTabs\": 2,")
        guard case .object(let more)? = try Self.compiled(json, locale: "fr")["more"] else {
            Issue.record("no more")
            return
        }
        #expect(more["accessibilityLabel"] == .string("Autres onglets"))
        #expect(more["accessibilityLabelKey"] == .string("MORE_LABEL"))
        #expect(more["accessibilityHint"] == .string("Shows the other tabs"))
    }

    static func numbered(_ count: Int, maxVisibleTabs: Int? = nil) -> String {
        let tabs = (0..<count).map { #"{"id":"t\#($0)","title":"Tab \#($0)","rootViewController":"T\#($0)"}"# }
        let limit = maxVisibleTabs.map { #""maxVisibleTabs":\#($0),"# } ?? ""
        return #"{"schemaVersion":1,\#(limit)"tabs":[\#(tabs.joined(separator: ","))]}"#
    }

    /// (tabs, maxVisibleTabs, platform) → visible tabs and tabs behind More.
    @Test(
        arguments: [
            (7, nil, Platform.android, 4, 3), (7, nil, .iphone, 7, 0), (7, nil, nil, 7, 0), (5, nil, .android, 5, 0),
            (6, nil, .android, 4, 2), (7, 3, .android, 2, 5), (7, 6, .android, 4, 3), (7, 6, .iphone, 5, 2), (2, nil, .android, 2, 0),
        ] as [(Int, Int?, Platform?, Int, Int)])
    func androidGetsAtMostFiveItems(count: Int, limit: Int?, platform: Platform?, visible: Int, behindMore: Int) throws {
        let document = try Self.compiled(Self.numbered(count, maxVisibleTabs: limit), platform: platform)
        #expect(Self.tabs(document).count == visible)
        if case .object(let more)? = document["more"] {
            #expect(Self.tabs(more).count == behindMore)
            // Tags go on counting behind More.
            #expect(Self.tabs(more).first?["tag"] == .integer(Int64(visible)))
        } else {
            #expect(behindMore == 0)
        }
    }

    @Test func onlyLayoutsPastFiveTabsOrTargetedDependOnThePlatform() throws {
        #expect(!LayoutCompiler.dependsOnPlatform(try Self.resolved(Self.numbered(5))))
        #expect(LayoutCompiler.dependsOnPlatform(try Self.resolved(Self.numbered(6))))
        #expect(LayoutCompiler.dependsOnPlatform(try Self.resolved(Self.source)))
    }

    @Test func theLegacyArrayNamesALabelOnlyWhereOneIsSet() throws {
        let layout = LayoutCompiler.compile(try Self.resolved(Self.source), for: ClientContext(locale: "en"), globalStrings: [:])
        guard case .array(let entries) = layout.legacy else {
            Issue.record("no array")
            return
        }
        #expect(
            entries.first
                == .object([
                    "TabBarTitle": .string("Home"), "TabBarAccessibilityLabel": .string("Home screen"),
                    "RootViewController": .string("HomeViewController"),
                ]))
        if case .object(let news) = entries[1] { #expect(news["TabBarAccessibilityLabel"] == nil) }
    }

    // MARK: Inheritance

    @Test func anOverlayAddsAndReplacesGroupsAndDarkColoursKeyByKey() throws {
        let overlay = """
            {"extends": "base", "appearance": {"dark": {"unselectedTintColor": "#8e8e93", "tintColor": "#ffffff"}},
             "tabs": [{"id": "extra", "title": "Extra", "rootViewController": "ExtraViewController"}],
             "groups": [{"id": "ipad-only", "title": "More tools", "tabs": ["tools", "extra"]}, {"id": "new", "title": "New", "tabs": ["search"]}]}
            """
        let layout = try Self.resolved(overlay, bases: ["base": Self.source])
        #expect(
            layout.appearance.dark == DarkColours(backgroundColor: "#000000", tintColor: "#FFFFFF", unselectedTintColor: "#8E8E93"))
        #expect(layout.groups.map(\.id) == ["library", "ipad-only", "new"])
        #expect(layout.groups[1] == TabGroup(id: "ipad-only", title: "More tools", tabs: ["tools", "extra"]))
    }

    @Test func anOverlaysSecondSearchTabIsRefusedAtItsRole() throws {
        let overlay = #"{"extends": "base", "tabs": [{"id": "find", "title": "Find", "rootViewController": "F", "role": "search"}]}"#
        #expect(throws: LayoutError.self) { try Self.resolved(overlay, bases: ["base": Self.source]) }
        do {
            _ = try Self.resolved(overlay, bases: ["base": Self.source])
        } catch {
            let found = (error as? LayoutError)?.diagnostics
            #expect(found?.map(\.pointer) == ["/tabs/0/role"] && found?.first?.message.contains("'search'") == true)
        }
        // Replacing the inherited search tab by its id is no second one.
        let replaced = #"{"extends": "base", "tabs": [{"id": "search", "title": "Find", "rootViewController": "F", "role": "search"}]}"#
        #expect(try Self.resolved(replaced, bases: ["base": Self.source]).tabs.filter { $0.role == .search }.count == 1)
    }

    @Test func anOverlayThatRemovesAGroupedTabDropsItFromTheGroup() throws {
        let layout = try Self.resolved(#"{"extends": "base", "remove": ["news"]}"#, bases: ["base": Self.source])
        #expect(layout.groups[0].tabs == ["home"])
    }

    @Test func anOverlaysGroupMustNameTabsTheLayoutHas() {
        let overlay = #"{"extends": "base", "groups": [{"id": "x", "title": "X", "tabs": ["nope", "home"]}]}"#
        #expect(throws: LayoutError.self) { try Self.resolved(overlay, bases: ["base": Self.source]) }
        do {
            _ = try Self.resolved(overlay, bases: ["base": Self.source])
        } catch {
            // "home" is in the base's library group already.
            #expect((error as? LayoutError)?.diagnostics.map(\.pointer) == ["/groups/0/tabs/0", "/groups/0/tabs/1"])
        }
        // A rebuild after the base changed drops what it cannot keep instead.
        #expect((try? Self.resolved(overlay, bases: ["base": Self.source], strict: false))?.groups.last?.tabs == [])
    }

    // MARK: Refused, with pointer and line, in every encoding

    static let twoSearchTabs = """
        {"schemaVersion": 1, "tabs": [
          {"id": "a", "title": "A", "rootViewController": "A", "role": "search"},
          {"id": "b", "title": "B", "rootViewController": "B",
           "role": "search"}
        ]}
        """

    @Test func twoSearchTabsAreRefusedAtBoth() {
        let found = Fixtures.diagnostics(Self.twoSearchTabs)
        #expect(found.map(\.pointer) == ["/tabs/0/role", "/tabs/1/role"])
        #expect(found.map(\.line) == [2, 4])
        #expect(found[0].message.contains("/tabs/1/role") && found[1].message.contains("/tabs/0/role"))
    }

    /// (source, pointers refused)
    @Test(arguments: [
        (#"{"tabs":[{"title":"A","rootViewController":"A","role":"primary"}]}"#, ["/tabs/0/role"]),
        (#"{"tabs":[{"title":"A","rootViewController":"A","accessibilityLabel":7}]}"#, ["/tabs/0/accessibilityLabel"]),
        (
            #"{"tabs":[{"id":"a","title":"A","rootViewController":"A"}],"groups":[{"id":"g","title":"G","tabs":["a","b"]}]}"#,
            ["/groups/0/tabs/1"]
        ),
        (
            #"{"tabs":[{"id":"a","title":"A","rootViewController":"A"}],"groups":[{"id":"g","title":"G","tabs":["a"]},{"id":"h","title":"H","tabs":["a"]}]}"#,
            ["/groups/1/tabs/0"]
        ),
        (
            #"{"tabs":[{"id":"a","title":"A","rootViewController":"A"}],"groups":[{"id":"g","title":"G","tabs":[]},{"id":"g","title":"H","tabs":[]}]}"#,
            ["/groups/1/id"]
        ),
        (#"{"tabs":[{"id":"a","title":"A","rootViewController":"A"}],"groups":[{"id":"g","tabs":[]}]}"#, ["/groups/0"]),
        (#"{"tabs":[],"groups":{"id":"g"}}"#, ["/groups"]),
        (#"{"tabs":[],"appearance":{"dark":{"tintColor":"blue"}}}"#, ["/appearance/dark/tintColor"]),
        (#"{"tabs":[],"appearance":{"dark":{"height":40}}}"#, ["/appearance/dark/height"]),
        (#"{"tabs":[],"moreTab":{"accessibilityLabel":false}}"#, ["/moreTab/accessibilityLabel"]),
    ])
    func refusedWithThePointer(source: String, pointers: [String]) {
        #expect(Fixtures.diagnostics(source).map(\.pointer) == pointers)
    }

    @Test func anXMLPropertyListIsRefusedWithLines() {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0">
            <dict>
              <key>tabs</key>
              <array>
                <dict><key>id</key><string>a</string><key>title</key><string>A</string>
                  <key>rootViewController</key><string>A</string><key>role</key><string>search</string></dict>
                <dict><key>id</key><string>b</string><key>title</key><string>B</string>
                  <key>rootViewController</key><string>B</string>
                  <key>role</key><string>search</string></dict>
              </array>
              <key>groups</key>
              <array><dict><key>id</key><string>g</string><key>title</key><string>G</string>
                <key>tabs</key><array><string>zzz</string></array></dict></array>
            </dict>
            </plist>
            """
        let found = Fixtures.diagnostics(Array(xml.utf8))
        #expect(found.map(\.pointer) == ["/tabs/0/role", "/tabs/1/role", "/groups/0/tabs/0"])
        #expect(found.map(\.line) == [7, 10, 14])
    }

    @Test func aBinaryPropertyListIsRefusedWithPointers() throws {
        let tab: (String, String) -> [String: Any] = { id, role in ["id": id, "title": id, "rootViewController": id, "role": role] }
        let root: [String: Any] = ["tabs": [tab("a", "search"), tab("b", "search")], "appearance": ["dark": ["tintColor": "#12"]]]
        let data = try PropertyListSerialization.data(fromPropertyList: root, format: .binary, options: 0)
        let found = Fixtures.diagnostics([UInt8](data))
        #expect(Set(found.map(\.pointer)) == ["/tabs/0/role", "/tabs/1/role", "/appearance/dark/tintColor"])
    }

    @Test(arguments: [PropertyListSerialization.PropertyListFormat.xml, .binary])
    func everyNewFieldReadsTheSameFromAPropertyList(format: PropertyListSerialization.PropertyListFormat) throws {
        let json = try LayoutSource.parse(Array(Self.source.utf8), format: .json)
        let object = try JSONSerialization.jsonObject(with: Data(Self.source.utf8))
        let plist = try PropertyListSerialization.data(fromPropertyList: object, format: format, options: 0)
        #expect(try LayoutSource.parse([UInt8](plist), format: nil) == json)
    }
}
