import Testing

@testable import TabLayout

/// A document-shape source with `tabs` (each `[id, title]` plus extra JSON members) and extra top-level members.
private func source(_ tabs: [String], top: String = "") -> [UInt8] {
    Array(#"{"schemaVersion":1,\#(top.isEmpty ? "" : top + ",")"tabs":[\#(tabs.joined(separator: ","))]}"#.utf8)
}

private func tab(_ id: String, _ title: String? = nil, _ extra: String = "") -> String {
    #"{"id":"\#(id)","title":"\#(title ?? id.uppercased())","rootViewController":"VC"\#(extra.isEmpty ? "" : "," + extra)}"#
}

private func diff(_ old: [UInt8]?, _ new: [UInt8]?) throws -> LayoutDiff {
    try LayoutDiff(from: old, fromFormat: .json, to: new, toFormat: .json)
}

struct LayoutDiffTests {
    @Test func identicalSourcesHaveNoChangesWhateverTheirKeyOrder() throws {
        let a = source([tab("home"), tab("news")], top: ##""appearance":{"height":50,"tintColor":"#FF0000"}"##)
        let b =
            Array(
                #"{"tabs":[{"rootViewController":"VC","title":"HOME","id":"home"},{"title":"NEWS","id":"news","rootViewController":"VC"}],"#
                    .utf8) + Array(##""appearance":{"tintColor":"#FF0000","height":50.0},"schemaVersion":1}"##.utf8)
        #expect(try diff(a, b).changes == [])
        #expect(try diff(a, b).plainText() == "")
    }

    @Test func addedTabCarriesItsPointerAndValue() throws {
        let d = try diff(source([tab("home")]), source([tab("home"), tab("news")]))
        #expect(
            d.changes == [
                LayoutChange(
                    .added, tab: "news", pointer: "/tabs/1",
                    to: .object(["id": .string("news"), "title": .string("NEWS"), "rootViewController": .string("VC")]))
            ])
        #expect(d.plainText() == #"added news /tabs/1 {"id":"news","rootViewController":"VC","title":"NEWS"}"# + "\n")
    }

    @Test func removedTabIsNamedAtItsOldPointer() throws {
        let d = try diff(source([tab("home"), tab("news"), tab("profile")]), source([tab("home"), tab("profile")]))
        #expect(d.changes.map(\.operation) == [.removed])
        #expect(d.changes[0].tab == "news")
        #expect(d.changes[0].pointer == "/tabs/1")
        #expect(d.changes[0].to == nil)
        #expect(d.changes[0].from?.member("title") == .string("NEWS"))
    }

    @Test func insertingOrRemovingATabMovesNoOtherTab() throws {
        let d = try diff(source([tab("a"), tab("b"), tab("c")]), source([tab("z"), tab("a"), tab("c")]))
        #expect(d.changes.map(\.operation) == [.removed, .added])
        #expect(d.changes.map(\.tab) == ["b", "z"])
    }

    @Test func reorderedTabIsMovedWithOldAndNewPointers() throws {
        let d = try diff(source([tab("a"), tab("b"), tab("c"), tab("d")]), source([tab("b"), tab("c"), tab("a"), tab("d")]))
        #expect(d.changes == [LayoutChange(.moved, tab: "a", pointer: "/tabs/2", from: .string("/tabs/0"), to: .string("/tabs/2"))])
        #expect(d.plainText() == "moved a /tabs/0 -> /tabs/2\n")
    }

    @Test func changedFieldsAreListedOneByOneWithOldAndNewValues() throws {
        let old = source([tab("home", "Home", #""badge":"1","params":{"url":"https://a.example","zoom":1}"#)])
        let new = source([tab("home", "Start", #""image":"house","params":{"url":"https://b.example","zoom":1}"#)])
        let d = try diff(old, new)
        #expect(
            d.changes == [
                LayoutChange(.removed, tab: "home", pointer: "/tabs/0/badge", from: .string("1")),
                LayoutChange(.added, tab: "home", pointer: "/tabs/0/image", to: .string("house")),
                LayoutChange(
                    .changed, tab: "home", pointer: "/tabs/0/params/url", from: .string("https://a.example"),
                    to: .string("https://b.example")),
                LayoutChange(.changed, tab: "home", pointer: "/tabs/0/title", from: .string("Home"), to: .string("Start")),
            ])
        #expect(
            d.plainText()
                == """
                removed home /tabs/0/badge "1"
                added home /tabs/0/image "house"
                changed home /tabs/0/params/url "https://a.example" -> "https://b.example"
                changed home /tabs/0/title "Home" -> "Start"

                """)
    }

    @Test func movedAndChangedTabGetsBothChanges() throws {
        let d = try diff(source([tab("a", "A"), tab("b"), tab("c")]), source([tab("b"), tab("c"), tab("a", "Eh")]))
        #expect(d.changes.map(\.operation) == [.moved, .changed])
        #expect(d.changes.map(\.tab) == ["a", "a"])
        #expect(d.changes.map(\.pointer) == ["/tabs/2", "/tabs/2/title"])
    }

    @Test func childrenAreMatchedByIDAtAnyDepth() throws {
        let old = source([
            tab("home"),
            tab("more", nil, #""children":[\#(tab("opt-a", "A")),\#(tab("opt-b")),\#(tab("opt-c"))]"#),
        ])
        let new = source([
            tab("home", nil, #""children":[\#(tab("opt-c"))]"#),
            tab("more", nil, #""children":[\#(tab("opt-a", "Option A")),\#(tab("opt-d"))]"#),
        ])
        let d = try diff(old, new)
        #expect(
            d.changes == [
                LayoutChange(.removed, tab: "opt-b", pointer: "/tabs/1/children/1", from: d.changes.first?.from),
                LayoutChange(
                    .moved, tab: "opt-c", pointer: "/tabs/0/children/0", from: .string("/tabs/1/children/2"),
                    to: .string("/tabs/0/children/0")),
                LayoutChange(.changed, tab: "opt-a", pointer: "/tabs/1/children/0/title", from: .string("A"), to: .string("Option A")),
                LayoutChange(.added, tab: "opt-d", pointer: "/tabs/1/children/1", to: d.changes.last?.to),
            ])
        #expect(d.changes.first?.from?.member("id") == .string("opt-b"))
        #expect(d.changes.last?.to?.member("id") == .string("opt-d"))
    }

    @Test func aTabRemovedWithItsParentIsPartOfTheParentsChange() throws {
        let d = try diff(source([tab("home"), tab("more", nil, #""children":[\#(tab("opt"))]"#)]), source([tab("home")]))
        #expect(d.changes.map(\.operation) == [.removed])
        #expect(d.changes[0].tab == "more")
        guard case .array(let children)? = d.changes[0].from?.member("children") else {
            Issue.record("the removed tab's value lacks its children")
            return
        }
        #expect(children.count == 1)
    }

    @Test func layoutLevelKeysHaveNoTab() throws {
        let old = source(
            [tab("home"), tab("news")],
            top: ##""initialTab":"home","maxVisibleTabs":5,"appearance":{"tintColor":"#FF0000"},"strings":{"en":{"HOME":"Home"}}"##)
        let new = source(
            [tab("home"), tab("news")],
            top:
                ##""initialTab":"news","appearance":{"tintColor":"#00FF00","height":60},"strings":{"en":{"HOME":"Start"},"fr":{"HOME":"Maison"}}"##
        )
        let d = try diff(old, new)
        #expect(
            d.changes == [
                LayoutChange(.added, pointer: "/appearance/height", to: .integer(60)),
                LayoutChange(.changed, pointer: "/appearance/tintColor", from: .string("#FF0000"), to: .string("#00FF00")),
                LayoutChange(.changed, pointer: "/initialTab", from: .string("home"), to: .string("news")),
                LayoutChange(.removed, pointer: "/maxVisibleTabs", from: .integer(5)),
                LayoutChange(.changed, pointer: "/strings/en/HOME", from: .string("Home"), to: .string("Start")),
                LayoutChange(.added, pointer: "/strings/fr", to: .object(["HOME": .string("Maison")])),
            ])
        #expect(
            d.plainText()
                == """
                added /appearance/height 60
                changed /appearance/tintColor "#FF0000" -> "#00FF00"
                changed /initialTab "home" -> "news"
                removed /maxVisibleTabs 5
                changed /strings/en/HOME "Home" -> "Start"
                added /strings/fr {"HOME":"Maison"}

                """)
    }

    @Test func aTextLineStaysOneLineWhateverTheKeysAndValuesHold() throws {
        let d = try diff(
            source([tab("a")], top: #""strings":{"en":{"K":"x"}}"#),
            source([tab("a")], top: #""strings":{"en":{"K":"two\nlines","L\n":"y"}}"#))
        #expect(
            d.plainText()
                == #"""
                changed /strings/en/K "x" -> "two\nlines"
                added "/strings/en/L\n" "y"

                """#)
    }

    @Test func aDeletedVersionRemovesOrAddsEverything() throws {
        let layout = source([tab("home"), tab("more", nil, #""children":[\#(tab("opt"))]"#)], top: #""maxVisibleTabs":3"#)
        let gone = try diff(layout, nil)
        #expect(gone.changes.map(\.operation) == [.removed, .removed, .removed, .removed])
        #expect(gone.changes.map(\.pointer) == ["/maxVisibleTabs", "/schemaVersion", "/tabs/0", "/tabs/1"])
        let back = try diff(nil, layout)
        #expect(back.changes.map(\.operation) == [.added, .added, .added, .added])
        #expect(back.changes.map(\.tab) == [nil, nil, "home", "more"])
        #expect(try diff(nil, nil).isEmpty)
    }

    @Test func legacyAliasesAndDerivedIDsMatchTheDocumentShape() throws {
        let legacy = Array(
            """
            <plist version="1.0"><array>
            <dict><key>TabBarTitle</key><string>HOME_TAB</string><key>RootViewController</key><string>HomeViewController</string></dict>
            <dict><key>TabBarTitle</key><string>Web</string><key>TabBarImage</key><string>globe</string>
            <key>RootViewController</key><string>SampleWebView</string></dict>
            </array></plist>
            """.utf8)
        let document = source([
            #"{"title":"HOME_TAB","rootViewController":"HomeViewController"}"#,
            #"{"id":"samplewebview","title":"Web","image":"earth","rootViewController":"SampleWebView"}"#,
        ])
        let d = try LayoutDiff(from: legacy, to: document, toFormat: .json)
        #expect(
            d.changes == [
                LayoutChange(.added, pointer: "/schemaVersion", to: .integer(1)),
                LayoutChange(.changed, tab: "samplewebview", pointer: "/tabs/1/image", from: .string("globe"), to: .string("earth")),
            ])
    }

    @Test func jsonBodyIsCanonicalAndFollowsTheAPI() throws {
        let d = try diff(source([tab("a"), tab("b")]), source([tab("b"), tab("a", "Eh")]))
        #expect(
            String(decoding: d.jsonBody(account: "jack", from: 3, to: 4), as: UTF8.self)
                == #"{"account":"jack","changes":[{"from":"/tabs/0","op":"moved","pointer":"/tabs/1","tab":"a","to":"/tabs/1"},"#
                + #"{"from":"A","op":"changed","pointer":"/tabs/1/title","tab":"a","to":"Eh"}],"from":3,"to":4}"#)
        #expect(
            String(decoding: LayoutDiff(changes: []).jsonBody(account: "x", from: nil, to: 1), as: UTF8.self)
                == #"{"account":"x","changes":[],"to":1}"#)
    }

    @Test func aSourceWhoseTabsCannotBeMatchedIsRefusedWithItsDiagnostics() throws {
        #expect(throws: LayoutError.self) { try diff(source([tab("a")]), Array(#"{"tabs":[{"title":"x"}]}"#.utf8)) }
        #expect(throws: LayoutError.self) { try diff(source([tab("a")]), source([tab("a"), tab("a")])) }
        #expect(throws: LayoutError.self) { try diff(source([tab("a")]), Array(#"{"tabs":[{"id":"a"#.utf8)) }
    }

    @Test func aVersionThatBreaksOnlyALaterRuleIsStillCompared() throws {
        // Not valid today (an unknown key; a maxVisibleTabs of 1), yet every tab can be read and matched.
        let old = source([tab("a"), tab("b")], top: #""maxVisibleTabs":1,"colour":"red""#)
        #expect(throws: LayoutError.self) { try LayoutSource.parse(old, format: .json) }
        let d = try diff(old, source([tab("b"), tab("a")]))
        #expect(d.changes.map(\.operation) == [.removed, .removed, .moved])
        #expect(d.changes.map(\.pointer) == ["/colour", "/maxVisibleTabs", "/tabs/1"])
    }
}

extension JSONValue {
    fileprivate func member(_ key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }
}
