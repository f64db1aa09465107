import Testing

@testable import TabLayout

/// One test per kind of diagnostic: the JSON Pointer of the bad value and, for text formats, its line.
@Suite struct DiagnosticTests {
    func only(_ diagnostics: [FieldError]) throws -> FieldError {
        try #require(diagnostics.count == 1, "expected one diagnostic, got \(diagnostics)")
        return diagnostics[0]
    }

    @Test func reportsEveryErrorAtOnceWithPointerAndLine() {
        let source = """
            {
              "schemaVersion": 1,
              "tabs": [
                {"title": "A", "rootViewController": "AViewController", "reselect": "sometimes"},
                {"title": "B", "rootViewController": "BViewController",
                 "image": 42}
              ]
            }
            """
        let found = Fixtures.diagnostics(source)
        #expect(found.map(\.pointer) == ["/tabs/0/reselect", "/tabs/1/image"])
        #expect(found.map(\.line) == [4, 6])
    }

    @Test func unknownKeyIsRefusedButXKeysPass() throws {
        let d = try only(Fixtures.diagnostics(#"{"tabs":[{"title":"A","rootViewController":"A","imgae":"x","x-note":1}]}"#))
        #expect(d.pointer == "/tabs/0/imgae")
        #expect(d.message.contains("unknown"))
    }

    @Test func missingRequiredMembersNameTheTab() {
        let found = Fixtures.diagnostics(#"{"tabs":[{"image":"x"}]}"#)
        #expect(found.map(\.pointer) == ["/tabs/0", "/tabs/0"])
        #expect(found.contains { $0.message.contains("title") } && found.contains { $0.message.contains("rootViewController") })
        #expect(
            found.map(\.message) == ["the tab has no title (or TabBarTitle)", "the tab has no rootViewController (or RootViewController)"])
    }

    @Test func tabsAreRequiredWithoutExtends() throws {
        #expect(try only(Fixtures.diagnostics(#"{"schemaVersion":1}"#)).pointer == "/tabs")
    }

    @Test func unknownSchemaVersionIsRefused() throws {
        #expect(try only(Fixtures.diagnostics(#"{"schemaVersion":2,"tabs":[]}"#)).pointer == "/schemaVersion")
    }

    @Test func badIdDuplicateIdAndDerivedIds() throws {
        #expect(try only(Fixtures.diagnostics(#"{"tabs":[{"id":"Home","title":"A","rootViewController":"A"}]}"#)).pointer == "/tabs/0/id")
        let duplicate = try only(
            Fixtures.diagnostics(
                #"{"tabs":[{"id":"a","title":"A","rootViewController":"A"},{"id":"a","title":"B","rootViewController":"B"}]}"#))
        // At the tab that repeats the id, naming the first (an operator wants the culprit, not the list).
        #expect(duplicate.pointer == "/tabs/1/id" && duplicate.message.contains("'a'") && duplicate.message.contains("/tabs/0/id"))
        let document = try LayoutSource.parse(
            Array(
                #"{"tabs":[{"title":"A","rootViewController":"MyApp.HomeViewController"},{"title":"B","rootViewController":"HomeViewController"},{"id":"home-2","title":"C","rootViewController":"X"}]}"#
                    .utf8))
        #expect(document.tabs.map(\.id) == ["home", "home-3", "home-2"])
    }

    @Test func enumsColoursHeightsAndAnimators() {
        let found = Fixtures.diagnostics(
            ##"{"tabs":[{"title":"A","rootViewController":"A","platforms":["iphone","watch"]}],"appearance":{"height":200,"backgroundColor":"#12345","animator":{"name":"spin"}},"maxVisibleTabs":1}"##
        )
        #expect(
            Set(found.map(\.pointer))
                == [
                    "/tabs/0/platforms/1", "/appearance/height", "/appearance/backgroundColor", "/appearance/animator/name",
                    "/maxVisibleTabs",
                ])
    }

    @Test func appVersionsMustBeDottedAndOrdered() {
        let found = Fixtures.diagnostics(
            #"{"tabs":[{"title":"A","rootViewController":"A","minAppVersion":"2.x"},{"title":"B","rootViewController":"B","minAppVersion":"3.0","maxAppVersion":"2.9"}]}"#
        )
        #expect(found.map(\.pointer) == ["/tabs/0/minAppVersion", "/tabs/1/minAppVersion"])
    }

    @Test func nullIsRefused() throws {
        #expect(
            try only(Fixtures.diagnostics(#"{"tabs":[{"title":"A","rootViewController":"A","params":{"a":null}}]}"#)).pointer
                == "/tabs/0/params/a")
    }

    @Test func limitsOnTabsChildrenAndStrings() {
        let many = (0..<65).map { #"{"title":"T","rootViewController":"T\#($0)ViewController"}"# }.joined(separator: ",")
        #expect(Fixtures.diagnostics(#"{"tabs":[\#(many)]}"#).map(\.pointer) == ["/tabs"])
        var nested = #"{"title":"L","rootViewController":"L"}"#
        for level in 0..<5 { nested = #"{"id":"l\#(level)","title":"L","rootViewController":"L","children":[\#(nested)]}"# }
        #expect(
            Fixtures.diagnostics(#"{"tabs":[\#(nested)]}"#).map(\.pointer) == [
                "/tabs/0/children/0/children/0/children/0/children/0/children"
            ])
        let long = String(repeating: "x", count: 4097)
        #expect(Fixtures.diagnostics(#"{"tabs":[{"title":"\#(long)","rootViewController":"A"}]}"#).map(\.pointer) == ["/tabs/0/title"])
    }

    @Test func nestingDeeperThan64IsRefusedBeforeRecursion() throws {
        let d = try only(Fixtures.diagnostics(try Fixtures.bytes("sources/deep.json"), format: .json))
        #expect(d.message.contains("deeper than 64"))
        #expect(d.pointer == "/" + (0..<64).map { _ in "0" }.joined(separator: "/"))
    }

    @Test func jsonSyntaxErrorsHaveLines() throws {
        let d = try only(Fixtures.diagnostics("{\n  \"tabs\": [\n    {\"title\": \"A\",,}\n  ]\n}"))
        #expect(d.line == 3)
        #expect(d.pointer == "/tabs/0")
    }

    @Test func duplicateKeysAreRefused() throws {
        #expect(try only(Fixtures.diagnostics(#"{"tabs":[],"tabs":[]}"#)).message.contains("duplicate"))
    }

    @Test func sourceOverOneMebibyteIsTooLarge() {
        let big = [UInt8](repeating: 0x20, count: LayoutLimits.sourceBytes + 1)
        #expect(throws: LayoutError.self) { try LayoutSource.parse(big) }
        do {
            _ = try LayoutSource.parse(big)
        } catch {
            #expect(error.kind == .tooLarge)
        }
    }

    @Test func xmlPlistErrorsHaveLinesOfTheValue() throws {
        let source = """
            <plist version="1.0">
            <array>
            <dict>
            <key>TabBarTitle</key><string>HOME_TAB</string>
            <key>TabBarImage</key><integer>42</integer>
            <key>RootViewController</key><string>HomeViewController</string>
            </dict>
            </array>
            </plist>
            """
        let d = try only(Fixtures.diagnostics(Array(source.utf8)))
        #expect(d.pointer == "/0/TabBarImage" && d.line == 5)
    }

    @Test func dtdDeclaringEntitiesIsRefused() throws {
        let d = try only(Fixtures.diagnostics(try Fixtures.bytes("sources/entities.plist")))
        #expect(d.message.contains("entities") && d.line == 2)
    }

    @Test func unknownEntityReferenceIsRefused() throws {
        let d = try only(
            Fixtures.diagnostics(Array(#"<plist><array><dict><key>TabBarTitle</key><string>&xxe;</string></dict></array></plist>"#.utf8)))
        #expect(d.message.contains("&xxe;"))
    }

    @Test(arguments: ["cycle.bplist", "badref.bplist", "badoffset.bplist", "fanout.bplist"])
    func hostileBinaryPlistsAreErrorsNotHangs(file: String) throws {
        let d = try only(Fixtures.diagnostics(try Fixtures.bytes("sources/" + file)))
        #expect(d.message.hasPrefix("binary plist:"))
    }

    @Test func extendsNamesAnAccountOrIsRefusedAtItsPointer() throws {
        let d = try only(Fixtures.diagnostics(#"{"extends":"a b","tabs":[{"title":"A","rootViewController":"A"}]}"#))
        #expect(d.pointer == "/extends")
        #expect(d.message == "'a b' is not an account name ([A-Za-z0-9._-]{1,128})")
        #expect(Fixtures.diagnostics(#"{"extends":"base.v2_x-1","tabs":[{"title":"A","rootViewController":"A"}]}"#).isEmpty)
    }

    @Test func anAccountNameIsOneTo128OfItsCharacters() {
        #expect(AccountName("acme-1.b_c")?.text == "acme-1.b_c")
        #expect(AccountName(String(repeating: "a", count: 128)) != nil)
        for refused in ["", String(repeating: "a", count: 129), "a b", "a/b", "é", "a%2F"] {
            #expect(AccountName(refused) == nil, "\(refused) accepted")
        }
    }

    @Test func truncatedBinaryPlistIsAnError() throws {
        let bytes = try Fixtures.bytes("sources/jack.bplist")
        for cut in [8, 40, bytes.count / 2, bytes.count - 1] {
            #expect(!Fixtures.diagnostics(Array(bytes.prefix(cut))).isEmpty)
        }
    }

    @Test func inheritanceErrors() throws {
        let overlay = try LayoutSource.parse(Array(#"{"extends":"base","remove":["nope"],"order":["ghost"]}"#.utf8))
        let base = try LayoutSource.parse(Array(#"{"tabs":[{"title":"A","rootViewController":"A"}]}"#.utf8))
        #expect(throws: LayoutError.self) { try LayoutResolver.resolve(name: "o", version: 1, document: overlay) { _ in nil } }
        do {
            _ = try LayoutResolver.resolve(name: "o", version: 1, document: overlay) { $0 == "base" ? base : nil }
            Issue.record("unknown remove/order ids should fail")
        } catch {
            #expect(error.diagnostics.map(\.pointer) == ["/remove/0", "/order/0"])
        }
        let a = try LayoutSource.parse(Array(#"{"extends":"b"}"#.utf8))
        let b = try LayoutSource.parse(Array(#"{"extends":"a"}"#.utf8))
        do {
            _ = try LayoutResolver.resolve(name: "a", version: 1, document: a) { $0 == "a" ? a : b }
            Issue.record("a cycle should fail")
        } catch {
            #expect(error.diagnostics.first?.message.contains("cycle") == true)
        }
        var chain: [String: LayoutDocument] = [:]
        for i in 0..<9 { chain["l\(i)"] = try LayoutSource.parse(Array(#"{"extends":"l\#(i + 1)"}"#.utf8)) }
        chain["l9"] = base
        do {
            _ = try LayoutResolver.resolve(name: "l0", version: 1, document: chain["l0"]!) { chain[$0] }
            Issue.record("a chain deeper than 8 should fail")
        } catch {
            #expect(error.diagnostics.first?.message.contains("deeper than 8") == true)
        }
    }
}
