import Foundation
import Testing

@testable import TabLayout
@testable import TabPreview

/// `?scheme=dark`, the search tab drawn apart and the iPad's sidebar of groups.
@Suite struct SchemesAndSidebarTests {
    static let source = """
        {"schemaVersion": 1,
         "appearance": {"backgroundColor": "#FFFFFF", "tintColor": "#007AFF", "unselectedTintColor": "#6E6E73",
                        "dark": {"backgroundColor": "#1C1C1E", "tintColor": "#0A84FF"}},
         "groups": [{"id": "read", "title": "Reading", "tabs": ["home", "news"]}, {"id": "find", "title": "Finding", "tabs": ["search"]}],
         "tabs": [
           {"id": "home", "title": "Home", "rootViewController": "A", "image": "house"},
           {"id": "search", "title": "Search", "rootViewController": "S", "role": "search", "image": "magnifyingglass"},
           {"id": "news", "title": "News", "rootViewController": "N"}
         ]}
        """

    static func compiled(platform: Platform? = nil) throws -> CompiledLayout {
        let resolved = try LayoutResolver.resolve(
            name: "now", version: 1, document: try LayoutSource.parse(Array(source.utf8), format: .json)
        ) { _ in nil }
        return LayoutCompiler.compile(resolved, for: ClientContext(locale: "en", platform: platform), globalStrings: [:])
    }

    @Test func theDarkSchemeDrawsTheDarkBackgroundAndKeepsTheLightColoursItLeavesOut() throws {
        let svg = try ParsedSVG(try TabPreview.svg(try Self.compiled(), scheme: .dark))
        let background = try #require(svg.elements(named: "rect").first { $0.value("id") == "background" })
        #expect(background.value("fill") == "#1C1C1E")
        let titles = svg.items.compactMap { $0.child("text", class: "title") }
        // home is selected (dark tint); news keeps the light unselected tint.
        #expect(titles.map { $0.value("fill") } == ["#0A84FF", "#6E6E73", "#6E6E73"])
        let light = try ParsedSVG(try TabPreview.svg(try Self.compiled()))
        #expect(light.elements(named: "rect").first { $0.value("id") == "background" }?.value("fill") == "#FFFFFF")
    }

    @Test func aLayoutWithoutDarkColoursIsDrawnDarkWithUIKitsDarkDefaults() throws {
        let layout = try Repository.compiled(json: #"{"tabs":[{"title":"A","rootViewController":"A"}]}"#)
        let svg = try ParsedSVG(try TabPreview.svg(layout, scheme: .dark))
        #expect(svg.elements(named: "rect").first { $0.value("id") == "background" }?.value("fill") == TabPreview.defaultDarkBackground)
    }

    @Test func theSearchTabIsDrawnApartAtTheTrailingEnd() throws {
        let svg = try ParsedSVG(try TabPreview.svg(try Self.compiled(), width: 390))
        let items = svg.items
        #expect(items.map { $0.value("id") } == ["tab-home", "tab-search", "tab-news"])
        let search = try #require(items.first { $0.classes.contains("search") })
        let centre = try #require(Double(search.child("text", class: "title")?.value("x") ?? ""))
        // The trailing 64-point slot; the two others share the rest.
        #expect(centre == 390 - 32)
        #expect(items[2].child("text", class: "title")?.value("x") == "244.5")
        #expect(search.child("circle", class: "search-well") != nil)
    }

    @Test func anIPadDrawsTheGroupsAsASidebar() throws {
        let svg = try ParsedSVG(try TabPreview.svg(try Self.compiled(platform: .ipad), width: 1024, platform: .ipad))
        let sidebar = try #require(svg.root.childElements("g").first { $0.value("id") == "sidebar" })
        let texts = sidebar.childElements("text").map { $0.stringValue ?? "" }
        #expect(texts == ["Reading", "Home", "News", "Finding", "Search"])
        #expect(svg.elements(named: "rect").first { $0.value("id") == "background" }?.value("x") == "220")
        // A phone's picture has no sidebar.
        let phone = try ParsedSVG(try TabPreview.svg(try Self.compiled(platform: .iphone), width: 1024, platform: .iphone))
        #expect(!phone.root.childElements("g").contains { $0.value("id") == "sidebar" })
    }

    @Test(arguments: [(ColourScheme.light, Platform?.none), (.dark, .ipad), (.dark, .iphone), (.light, .ipad)])
    func everyDrawingIsValidSVG11(scheme: ColourScheme, platform: Platform?) throws {
        let bytes = try TabPreview.svg(try Self.compiled(platform: platform), scheme: scheme, platform: platform)
        try expectValidSVG11(bytes, name: "now-\(scheme.rawValue)-\(platform?.rawValue ?? "any")")
    }
}
