import HeaderFields
import Testing

/// HeaderFields against the Foundation-based code it replaces (OldNegotiation.swift), over many generated field
/// values built from the shapes clients send and from the shapes that broke parsers: same inputs, same answers.
@Suite struct DifferentialTests {
    /// Field values per test (each compared against every offer or locale set).
    static let iterations = 30_000

    static let mediaRanges = [
        "application/json", "application/x-plist", "APPLICATION/JSON", "Application/X-Plist", "application/*", "*/*",
        "text/html", "text/*", "*/json", "*", "application", "/json", "//application/json", "/application/json",
        "application//json", "application/json/", "application/", " application/json ", "\tapplication/*\t", "",
        " ", "application/xhtml+xml", "image/webp", "a/b/c", "APPLICATION/*", "application /json", "*/ *",
    ]
    static let parameters = [
        "q=0", "q=1", "q=0.5", "Q=0.9", "q=0.000", "q=1.0", "q=1.000", "q=0.8", "q=0.001", "q= 0.5", "q =0.5",
        "q=abc", "q=", "q=2", "q=-1", "q=1e-1", "q=1E0", "q=INF", "q=nan", "q=.5", "q=5.", "q=0x1p-1", "q=+0.5",
        "level=1", "charset=utf-8", "q=0.99999999999999999999", "q=0.0000000000000001", "q=0.123456789012345",
        "q=0.1234567890123456", "q=00.5", "q=0.5 ", " q=0.7", "q=0.9;q=0", "", " ",
    ]
    static let separators = [",", ", ", " , ", ",,", " ,", ",\t", ", ,"]
    static let parameterSeparators = [";", "; ", " ; ", ";;", "\t;"]

    static func randomValue(_ elements: [String], using generator: inout SeededGenerator) -> String {
        var value = ""
        for index in 0..<Int.random(in: 0...5, using: &generator) {
            if index > 0 { value += generator.pick(separators) }
            value += generator.pick(elements)
            for _ in 0..<Int.random(in: 0...2, using: &generator) where generator.chance(50) {
                value += generator.pick(parameterSeparators) + generator.pick(parameters)
            }
        }
        if generator.chance(10) { value = generator.pick([",", ";", " ", ";q=0.5,"]) + value }
        if generator.chance(10) { value += generator.pick([",", ";", " ", ";q"]) }
        return value
    }

    @Test func acceptChoosesWhatTheOldNegotiationChose() {
        var generator = SeededGenerator(state: 14)
        let offerSets: [[(Int, String)]] = [
            [(0, "application/json"), (1, "application/x-plist")], [(0, "application/x-plist")],
        ]
        let tables = offerSets.map { MediaTypeOffers($0.map(\.1)) }
        var compared = 0
        var mismatches: [String] = []
        for _ in 0..<Self.iterations {
            let value = Self.randomValue(Self.mediaRanges, using: &generator)
            let (lines, combined) = randomLines(for: value, using: &generator)
            for (offers, table) in zip(offerSets, tables) {
                let old = OldNegotiation.choose(accept: combined, offers: offers)
                let new = withLines(lines) { AcceptMediaType.choose($0, offers: table) }
                compared += 1
                if old != new, mismatches.count < 10 {
                    mismatches.append("\(lines) offers \(offers.map(\.1)): old \(old as Any), new \(new as Any)")
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(compared == 2 * Self.iterations)
    }

    static let languageTags = [
        "fr", "fr-FR", "FR-fr", "fr_FR", "fr-CA", "en", "en-US", "en-GB", "EN", "de", "de-DE-1996", "pt-BR", "pt_br", "PT-br",
        "pt", "zh-Hant-TW", "zh-Hant", "zh_hant", "zh", "*", "", " ", "x", "fr-", "-fr", "fr--CA", "fr__CA", "q=1",
        "en-us-x-private", "ja", "es-419", "es", "i-klingon", "-", "_", "*-*", " fr ", "\tfr-FR", "fr - FR", "ES",
    ]
    static let localeSets: [[String]] = [
        ["en", "fr"], ["de", "en", "en-GB", "es", "fr", "fr-CA", "ja", "pt_BR", "zh-Hant"], ["en"], [], ["EN-us", "fr_ca"],
        ["fr", "fr-CA", "fr_CA"], ["de-DE", "de"],
    ]

    @Test func acceptLanguageChoosesWhatTheOldLocaleMatcherChose() {
        var generator = SeededGenerator(state: 15)
        let tables = Self.localeSets.map(LocaleTable.init)
        var compared = 0
        var mismatches: [String] = []
        for _ in 0..<Self.iterations {
            let value = Self.randomValue(Self.languageTags, using: &generator)
            let (lines, combined) = randomLines(for: value, using: &generator)
            for (available, table) in zip(Self.localeSets, tables) {
                let old = OldLocaleMatcher.choose(acceptLanguage: combined, available: available, fallback: "DEFAULT")
                let new = withLines(lines) { AcceptLanguage.choose($0, table: table) }.map { available[$0] } ?? "DEFAULT"
                compared += 1
                if old != new, mismatches.count < 10 { mismatches.append("\(lines) in \(available): old \(old), new \(new)") }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(compared == Self.iterations * Self.localeSets.count)
    }

    /// `?locale=` goes through the same matcher: one tag, no list, no q.
    @Test func singleTagMatchesAsTheOldMatch() {
        let tables = Self.localeSets.map(LocaleTable.init)
        var generator = SeededGenerator(state: 16)
        let tags =
            Self.languageTags + (0..<2000).map { _ in generator.pick(Self.languageTags) + generator.pick(["", "-", "_", "-CA", "_x"]) }
        for tag in tags {
            for (available, table) in zip(Self.localeSets, tables) {
                #expect(OldLocaleMatcher.match(tag, available) == table.match(tag).map { available[$0] }, "\(tag) in \(available)")
            }
        }
    }
}
