import Testing

@testable import TabLayout
@testable import TabLint

/// The lint as tables: a layout in, the rules it trips out, edges included.
@Suite struct LayoutLintTests {
    static func layout(_ json: String) throws -> ResolvedLayout {
        try LayoutResolver.resolve(name: "lint", version: nil, document: try LayoutSource.parse(Array(json.utf8), format: .json)) { _ in nil
        }
    }

    static func tabs(_ count: Int, platforms: String? = nil) -> String {
        (0..<count).map { i in
            let only = platforms.map { #","platforms":\#($0)"# } ?? ""
            return #"{"id":"t\#(i)","title":"Tab \#(i)","rootViewController":"T\#(i)"\#(only)}"#
        }.joined(separator: ",")
    }

    static func rules(_ json: String, global: [String: StringsTable] = [:]) throws -> [String] {
        LayoutLint.warnings(try layout(json), globalStrings: global).map { "\($0.rule.rawValue) \($0.pointer)" }
    }

    // MARK: The bar

    /// (source, warnings)
    @Test(arguments: [
        (#"{"tabs":[\#(LayoutLintTests.tabs(5))]}"#, []),
        (#"{"tabs":[\#(LayoutLintTests.tabs(6))]}"#, ["android-more /tabs", "iphone-overflow /tabs"]),
        (#"{"maxVisibleTabs":5,"tabs":[\#(LayoutLintTests.tabs(7))]}"#, []),
        (#"{"maxVisibleTabs":6,"tabs":[\#(LayoutLintTests.tabs(7))]}"#, ["android-more /tabs"]),
        (#"{"maxVisibleTabs":3,"tabs":[\#(LayoutLintTests.tabs(7))]}"#, []),
        (#"{"tabs":[\#(LayoutLintTests.tabs(6, platforms: #"["iphone"]"#))]}"#, ["iphone-overflow /tabs"]),
        (#"{"tabs":[\#(LayoutLintTests.tabs(6, platforms: #"["android"]"#))]}"#, ["android-more /tabs"]),
        (#"{"tabs":[]}"#, []),
    ])
    func barRules(source: String, expected: [String]) throws {
        #expect(try Self.rules(source) == expected)
    }

    @Test func androidMoreSaysWhatAndroidGets() throws {
        let warning = try #require(LayoutLint.warnings(try Self.layout(#"{"tabs":[\#(Self.tabs(7))]}"#)).first)
        #expect(warning.rule == .androidMore)
        #expect(warning.message.contains("4 tabs and More"))
        #expect(
            warning.json == .object(["pointer": .string("/tabs"), "rule": .string("android-more"), "message": .string(warning.message)]))
    }

    // MARK: Words

    /// (source, warnings)
    @Test(arguments: [
        (#"{"tabs":[{"title":"","rootViewController":"A"}]}"#, ["icon-only /tabs/0/title"]),
        (#"{"tabs":[{"title":"","accessibilityLabel":"Home","rootViewController":"A"}]}"#, []),
        (#"{"tabs":[{"title":"Home","rootViewController":"A"}]}"#, []),
        // Empty in French only.
        (
            #"{"tabs":[{"title":"HOME","rootViewController":"A"}],"strings":{"en":{"HOME":"Home"},"fr":{"HOME":""}}}"#,
            ["icon-only /tabs/0/title"]
        ),
        (
            #"{"tabs":[{"id":"a","title":"A","rootViewController":"A","children":[{"title":"","rootViewController":"B"}]}]}"#,
            ["icon-only /tabs/0/children/0/title"]
        ),
    ])
    func iconOnly(source: String, expected: [String]) throws {
        #expect(try Self.rules(source) == expected)
    }

    /// (source, warnings)
    @Test(arguments: [
        (#"{"tabs":[{"title":"HOME","rootViewController":"A"}],"strings":{"en":{"HOME":"Home"},"fr":{"HOME":"Accueil"}}}"#, []),
        (
            #"{"tabs":[{"title":"HOME","rootViewController":"A"}],"strings":{"en":{"HOME":"Home"},"fr":{}}}"#,
            ["missing-string /tabs/0/title"]
        ),
        // fr-CA finds its text in fr.
        (#"{"tabs":[{"title":"HOME","rootViewController":"A"}],"strings":{"en":{"HOME":"Home"},"fr":{"HOME":"Accueil"},"fr-CA":{}}}"#, []),
        (
            #"{"tabs":[{"title":"Home","accessibilityLabel":"HOME_LABEL","rootViewController":"A"}],"strings":{"en":{"HOME_LABEL":"Home"},"de":{"X":"y"}}}"#,
            ["missing-string /tabs/0/accessibilityLabel"]
        ),
        (
            #"{"tabs":[{"id":"a","title":"A","rootViewController":"A"}],"groups":[{"id":"g","title":"LIB","tabs":["a"]}],"strings":{"en":{"LIB":"Library"},"fr":{"X":"y"}}}"#,
            ["missing-string /groups/0/title"]
        ),
        // Text that no table has as a key is literal text, not a missing string.
        (#"{"tabs":[{"title":"Home","rootViewController":"A"}],"strings":{"en":{"X":"y"},"fr":{}}}"#, []),
    ])
    func missingString(source: String, expected: [String]) throws {
        #expect(try Self.rules(source) == expected)
    }

    @Test func missingStringCountsTheGlobalTables() throws {
        let source = #"{"tabs":[{"title":"HOME","rootViewController":"A"}]}"#
        let global = ["en": StringsTable(["HOME": "Home"]), "de": StringsTable(["OTHER": "x"])]
        #expect(try Self.rules(source, global: global) == ["missing-string /tabs/0/title"])
        #expect(try Self.rules(source, global: ["en": StringsTable(["HOME": "Home"]), "de": StringsTable(["HOME": "Start"])]) == [])
    }

    // MARK: Colours

    /// (first, second, ratio): WCAG's own vectors and the edges.
    @Test(arguments: [
        ("#FFFFFF", "#000000", 21.0), ("#777777", "#FFFFFF", 4.48), ("#FFFFFF", "#FFFFFF", 1.0), ("#000000FF", "#FFFFFF00", 21.0),
        ("#ff0000", "#FFFFFF", 4.0), ("#767676", "#FFFFFF", 4.54),
    ])
    func contrastRatio(first: String, second: String, ratio: Double) throws {
        let computed = try #require(LayoutLint.contrastRatio(first, second))
        #expect(abs(computed - ratio) < 0.01, "\(first) on \(second): \(computed)")
        #expect(LayoutLint.contrastRatio(second, first) == computed)
    }

    @Test func aColourThatIsNoneHasNoRatio() {
        #expect(LayoutLint.contrastRatio("blue", "#FFFFFF") == nil)
        #expect(LayoutLint.contrastRatio("#12345", "#FFFFFF") == nil)
    }

    /// (appearance, warnings)
    @Test(arguments: [
        (##"{"backgroundColor":"#FFFFFF","tintColor":"#007AFF","unselectedTintColor":"#767676"}"##, []),
        (##"{"backgroundColor":"#FFFFFF","tintColor":"#FFFF00"}"##, ["contrast /appearance/tintColor"]),
        (##"{"tintColor":"#FFFF00"}"##, []),
        // 3:1 exactly is enough; just under is not (#949494 on white is 3.03, #959595 2.99).
        (##"{"backgroundColor":"#FFFFFF","unselectedTintColor":"#949494"}"##, []),
        (##"{"backgroundColor":"#FFFFFF","unselectedTintColor":"#959595"}"##, ["contrast /appearance/unselectedTintColor"]),
        // Dark keeps the light tint against its own background.
        (
            ##"{"backgroundColor":"#FFFFFF","tintColor":"#000080","dark":{"backgroundColor":"#000000"}}"##,
            ["contrast /appearance/tintColor"]
        ),
        (##"{"backgroundColor":"#FFFFFF","tintColor":"#000080","dark":{"backgroundColor":"#000000","tintColor":"#0A84FF"}}"##, []),
        (##"{"backgroundColor":"#000000","dark":{"tintColor":"#101010"}}"##, ["contrast /appearance/dark/tintColor"]),
    ])
    func contrast(appearance: String, expected: [String]) throws {
        #expect(try Self.rules(#"{"tabs":[],"appearance":\#(appearance)}"#) == expected)
    }

    @Test func aContrastWarningSaysTheSchemeAndTheRatio() throws {
        let warning = try #require(
            LayoutLint.warnings(
                try Self.layout(##"{"tabs":[],"appearance":{"backgroundColor":"#000000","dark":{"tintColor":"#101010"}}}"##)
            ).first)
        #expect(warning.message.contains("dark") && warning.message.contains(":1"))
        #expect(warning.description.hasPrefix("/appearance/dark/tintColor: contrast: "))
    }
}
