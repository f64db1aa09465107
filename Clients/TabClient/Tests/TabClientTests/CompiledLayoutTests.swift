import Foundation
import Testing

@testable import TabClient

/// The typed model: what decodes, what validation refuses (and says), what the client sends.
@Suite struct CompiledLayoutTests {
    static let valid = Data(
        #"""
        {"appearance":{"animator":{"name":"underline","params":{"thickness":2}},"backgroundColor":"#F8F8F8","height":56,
         "x-shadow":true},
         "initialIndex":4,"locale":"fr","layout":"jack","version":7,"x-team":{"owner":"ios"},
         "more":{"title":"Plus","titleKey":"MORE_TAB","image":"ellipsis",
                 "tabs":[{"id":"settings","navigation":true,"reselect":"popToRoot","rootViewController":"SettingsViewController",
                          "tag":4,"title":"Réglages","titleKey":"SETTINGS_TAB"}]},
         "tabs":[{"id":"home","image":"house","navigation":true,"reselect":"popToRoot","rootViewController":"HomeViewController",
                  "tag":0,"title":"Accueil","titleKey":"HOME_TAB","params":{"url":"https://example.com","zoom":2,"ratio":1.5}},
                 {"id":"b","navigation":false,"reselect":"none","rootViewController":"B","tag":1,"title":"B","badge":"3"},
                 {"id":"c","navigation":true,"reselect":"popToRoot","rootViewController":"C","tag":2,"title":"C",
                  "children":[{"id":"c-1","navigation":true,"reselect":"popToRoot","rootViewController":"D","title":"C1"}]},
                 {"id":"d","navigation":true,"reselect":"x-future","rootViewController":"D","tag":3,"title":"D","x-note":"kept"}]}
        """#.utf8)

    @Test func decodesEveryFieldOfLayoutSection2() throws {
        let layout = try CompiledLayout.decode(Self.valid)
        #expect(layout.layout == "jack" && layout.version == 7 && layout.locale == "fr")
        #expect(layout.tabs.map(\.id) == ["home", "b", "c", "d"])
        #expect(layout.more?.tabs.map(\.tag) == [4])
        #expect(layout.initialTab?.id == "settings")
        #expect(layout.tabs[0].params?["zoom"] == .integer(2))
        #expect(layout.tabs[0].params?["ratio"] == .number(1.5))
        #expect(layout.tabs[1].navigation == false && layout.tabs[1].reselect == .none && layout.tabs[1].badge == "3")
        #expect(layout.tabs[2].children?.first?.tag == nil)
        #expect(layout.tabs[3].reselect.rawValue == "x-future")
        #expect(layout.tabs[3].extensions["x-note"] == .string("kept"))
        #expect(layout.extensions["x-team"] == .object(["owner": .string("ios")]))
        #expect(layout.appearance.height == 56 && layout.appearance.animator.params?["thickness"] == .integer(2))
        #expect(layout.appearance.extensions["x-shadow"] == .bool(true))
    }

    @Test func encodingAndDecodingAgainGivesTheSameLayout() throws {
        let layout = try CompiledLayout.decode(Self.valid)
        let again = try CompiledLayout.decode(try JSONEncoder().encode(layout))
        #expect(again == layout)
    }

    /// Decodes `valid`, lets `change` break it, and returns the pointers validation names.
    private func problems(_ change: (inout [String: Any]) -> Void) throws -> [String] {
        var object = try #require(try JSONSerialization.jsonObject(with: Self.valid) as? [String: Any])
        change(&object)
        let data = try JSONSerialization.data(withJSONObject: object)
        do {
            _ = try CompiledLayout.decode(data)
            return []
        } catch {
            guard case .invalidLayout(let problems) = error else { return ["unexpected \(error)"] }
            return problems.map(\.pointer)
        }
    }

    @Test func refusesALayoutWithoutTabs() throws {
        #expect(
            try problems {
                $0["tabs"] = [Any]()
                $0["more"] = nil
                $0["initialIndex"] = 0
            } == ["/tabs"])
    }

    @Test func refusesDuplicateIdsAnywhereInTheTree() throws {
        let pointers = try problems { object in
            var tabs = object["tabs"] as! [[String: Any]]
            var children = tabs[2]["children"] as! [[String: Any]]
            children[0]["id"] = "home"
            tabs[2]["children"] = children
            object["tabs"] = tabs
        }
        #expect(pointers == ["/tabs/2/children/0/id"])
    }

    @Test func refusesTagsOutOfOrderAndAnInitialIndexWithoutATab() throws {
        let pointers = try problems { object in
            var tabs = object["tabs"] as! [[String: Any]]
            tabs[1]["tag"] = 7
            object["tabs"] = tabs
            object["initialIndex"] = 5
        }
        #expect(pointers == ["/tabs/1/tag", "/initialIndex"])
    }

    @Test func refusesBadColoursAndHeights() throws {
        let pointers = try problems { object in
            object["appearance"] = ["height": 500, "tintColor": "blue", "animator": ["name": "none"]]
        }
        #expect(pointers == ["/appearance/height", "/appearance/tintColor"])
    }

    @Test func refusesWhatIsNotALayoutWithThePathOfTheValue() throws {
        #expect(throws: TabClientError.self) { try CompiledLayout.decode(Data("<html>captive portal</html>".utf8)) }
        do {
            _ = try CompiledLayout.decode(Data(#"{"layout":"a","locale":"en","appearance":{},"tabs":[{"id":"x"}]}"#.utf8))
            Issue.record("decoded a tab without a title")
        } catch {
            #expect("\(error)".contains("/tabs/0/title"))
        }
    }

    @Test func acceptLanguageListsThePreferredLanguagesWithFallingQValues() {
        var configuration = TabClientConfiguration(
            server: URL(string: "http://x")!, account: "a", preferredLanguages: ["fr-CA", "fr", "en"])
        #expect(configuration.acceptLanguage == "fr-CA, fr;q=0.9, en;q=0.8")
        configuration.preferredLanguages = []
        #expect(configuration.acceptLanguage == nil)
    }

    @Test func theBundleChoosesTheRepresentationForTheClient() throws {
        #expect(
            LayoutBundle(account: "a", representations: []).representation(preferredLanguages: [], platform: nil, appVersion: nil) == nil)
        let layout = try CompiledLayout.decode(Self.valid)
        let bundle = LayoutBundle(
            account: "jack",
            representations: [
                .init(locale: "en", etag: "\"en\"", layout: layout), .init(locale: "fr", etag: "\"fr\"", layout: layout),
                .init(locale: "fr", platform: "ipad", etag: "\"fr-ipad\"", etags: ["gzip": "\"fr-ipad-gz\""], layout: layout),
            ])
        #expect(bundle.representation(preferredLanguages: ["fr-CA", "en"], platform: nil, appVersion: nil)?.etag == "\"fr\"")
        #expect(bundle.representation(preferredLanguages: ["de"], platform: nil, appVersion: nil)?.etag == "\"en\"")
        let ipad = try #require(bundle.representation(preferredLanguages: ["fr"], platform: "ipad", appVersion: nil))
        #expect(ipad.validators == ["\"fr-ipad\"", "\"fr-ipad-gz\""])
    }
}
