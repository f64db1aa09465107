import HeaderFields
import Testing

/// The header sets real clients send (iOS URLSession, OkHttp, curl, …; docs/performance.md), and the rules of
/// RFC 9110 §12.5.3 for `Accept-Encoding`.
@Suite struct NegotiationTests {
    let offers = MediaTypeOffers(["application/json", "application/x-plist"])
    let locales = LocaleTable(["de", "en", "fr", "pt_BR"])

    @Test func realClientsGetJSONTheirLanguageAndBrotli() {
        let clients: [(accept: String?, language: String?, encoding: String?, expected: (Int?, String?, ContentCoding?))] = [
            ("*/*", "fr-FR,fr;q=0.9,en;q=0.8", "gzip, deflate, br", (0, "fr", .br)),  // iOS URLSession
            ("*/*", "en-US;q=1.0, fr-CA;q=0.9", "br;q=1.0, gzip;q=0.9, deflate;q=0.8", (0, "en", .br)),  // Alamofire
            (nil, "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7", "gzip", (0, "fr", .gzip)),  // OkHttp
            ("*/*", "en", "deflate, gzip, br, zstd", (0, "en", .br)),  // URLSession on Linux
            (
                "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8", "en-US,en;q=0.9",
                "gzip, deflate, br, zstd", (0, "en", .br)
            ),  // Chromium
            ("*/*", nil, nil, (0, nil, .identity)),  // curl
            ("application/x-plist", "pt-BR", "identity", (1, "pt_BR", .identity)),
            ("application/json;q=0, */*", "*", "gzip;q=0, br;q=0", (1, nil, .identity)),
        ]
        for client in clients {
            let lines: (String?) -> [String] = { $0.map { [$0] } ?? [] }
            let format = withLines(lines(client.accept)) { AcceptMediaType.choose($0, offers: offers) }
            let locale = withLines(lines(client.language)) { AcceptLanguage.choose($0, table: locales) }
            let coding = withLines(lines(client.encoding)) { AcceptEncoding.choose($0, available: [.br, .gzip]) }
            #expect(format == client.expected.0, "\(client)")
            #expect(locale.map { locales.locales[$0] } == client.expected.1, "\(client)")
            #expect(coding == client.expected.2, "\(client)")
        }
    }

    @Test(
        arguments: [
            // (field lines, codings that exist, expected coding; nil = 406)
            ([], "br gzip", "identity"),
            ([""], "br gzip", "identity"),
            (["gzip, deflate, br"], "br gzip", "br"),
            (["gzip, deflate, br"], "gzip", "gzip"),
            (["gzip, deflate, br"], "", "identity"),
            (["br;q=1.0, gzip;q=0.9, deflate;q=0.8"], "br gzip", "br"),
            (["gzip;q=1.0, br;q=0.9"], "br gzip", "gzip"),
            (["gzip;q=0.5, br;q=0.5"], "br gzip", "br"),
            (["gzip;q=0.5"], "br gzip", "gzip"),
            (["gzip;q=0.5"], "br", "identity"),
            (["br;q=0.001"], "br gzip", "br"),
            (["gzip;q=0.5, identity;q=0.5"], "br gzip", "gzip"),
            (["gzip;q=0.3, identity;q=0.5"], "br gzip", "identity"),
            (["gzip;q=0.9, br;q=0.8, identity"], "br gzip", "identity"),
            (["identity;q=0"], "", nil),
            (["identity;q=0"], "gzip", nil),
            (["identity;q=0, gzip"], "gzip", "gzip"),
            (["*;q=0"], "br gzip", nil),
            (["*;q=0, identity"], "br gzip", "identity"),
            (["*;q=0, gzip;q=0.1"], "br gzip", "gzip"),
            (["*"], "br gzip", "br"),
            (["*"], "", "identity"),
            (["br;q=0, *"], "br gzip", "gzip"),
            (["br;q=0, *;q=0.5"], "br gzip", "gzip"),
            (["identity;q=0, gzip;q=0"], "gzip", nil),
            (["x-gzip"], "br gzip", "gzip"),
            (["GZIP"], "br gzip", "gzip"),
            (["BR"], "br gzip", "br"),
            (["gzip;q=0, gzip"], "gzip", "identity"),
            (["br;q=abc"], "br gzip", "identity"),
            (["br;q=1.5"], "br", "br"),
            (["br;Q=0.001, identity;q=0"], "br", "br"),
            (["br;q=0.0001, identity;q=0"], "br", nil),
            (["gzip", "br"], "br gzip", "br"),
            (["identity;q=0", "br"], "gzip", nil),
            (["deflate, zstd"], "br gzip", "identity"),
            ([" br ; q=0.8 , gzip ; Q=0.9"], "br gzip", "gzip"),
            ([",,,"], "br gzip", "identity"),
        ] as [([String], String, String?)])
    func acceptEncodingFollowsRFC9110(lines: [String], available: String, expected: String?) {
        var codings: AvailableCodings = []
        if available.contains("br") { codings.insert(.br) }
        if available.contains("gzip") { codings.insert(.gzip) }
        let chosen = withLines(lines) { AcceptEncoding.choose($0, available: codings) }
        #expect(chosen.map { $0.token ?? "identity" } == expected)
    }

    @Test func equalWeightsGoToTheSmallestCoding() {
        let gzipSmaller = CodingPreference(identity: 1742, gzip: 500, br: 538)
        let brSmaller = CodingPreference(identity: 1742, gzip: 639, br: 538)
        let noBrotli = CodingPreference(identity: 1742, gzip: 639, br: nil)
        #expect(gzipSmaller.order == (.gzip, .br, .identity))
        #expect(brSmaller.order == (.br, .gzip, .identity))
        #expect(noBrotli.order == (.gzip, .identity, .br))
        #expect(CodingPreference(identity: 10, gzip: 10, br: 10) == .brotliFirst, "equal sizes keep br, gzip, identity")
        let choose = { (lines: [String], preference: CodingPreference) in
            withLines(lines) { AcceptEncoding.choose($0, available: [.br, .gzip], preference: preference) }
        }
        #expect(choose(["gzip, deflate, br"], brSmaller) == .br)
        #expect(choose(["gzip, deflate, br"], gzipSmaller) == .gzip)
        #expect(choose(["gzip", "br"], gzipSmaller) == .gzip, "lines are one list")
        #expect(choose(["*"], gzipSmaller) == .gzip)
        #expect(choose(["br;q=1.0, gzip;q=0.9"], gzipSmaller) == .br, "a higher weight beats a smaller size")
        #expect(choose(["identity, gzip;q=0.5"], gzipSmaller) == .identity)
        #expect(choose(["gzip;q=0, br;q=0, identity;q=0"], gzipSmaller) == nil)
    }

    @Test func fieldsSplitOverLinesDecideAsOneList() {
        #expect(withLines(["application/x-plist;q=0.5", "application/json"]) { AcceptMediaType.choose($0, offers: offers) } == 0)
        #expect(withLines(["application/json;q=0", "application/x-plist"]) { AcceptMediaType.choose($0, offers: offers) } == 1)
        #expect(withLines(["de;q=0.1", "fr"]) { AcceptLanguage.choose($0, table: locales) } == 2)
        #expect(withLines(["  ", "\t"]) { AcceptMediaType.choose($0, offers: offers) } == 0)
    }

    /// Every decision walks the field once: a megabyte of separators, dashes or quotes is decided (a quadratic walk
    /// of 1 MiB would take hours and trip the time limit; the cost per byte is measured in Benchmarks/, not here).
    @Test(.timeLimit(.minutes(1)), arguments: [",", ";", "-", "a-", ",;", "\"", "W/", "*/*;q=0.5,", "fr-FR;q=0.9,", "_", " "])
    func adversarialFieldsAreDecided(unit: String) {
        let field = String(repeating: unit, count: (1 << 20) / unit.utf8.count)
        let table = LocaleTable(["de", "en", "fr", "fr-FR", "pt_BR", "zh-Hant"])
        let current = EntityTag(opaque: "abc")
        withLines([field]) { lines in
            #expect(AcceptMediaType.choose(lines, offers: offers) != 1, "\(unit)")
            #expect(AcceptLanguage.choose(lines, table: table) == nil || unit.hasPrefix("fr"), "\(unit)")
            _ = AcceptEncoding.choose(lines, available: [.br, .gzip])
            // `*` matches any current tag; nothing else here names "abc".
            #expect(EntityTagList.matchesWeakly(lines, current: current) == unit.contains("*"), "\(unit)")
            #expect(EntityTagList.matchesStrongly(lines, current: current) == unit.contains("*"), "\(unit)")
            #expect(HTTPDate.seconds(lines, now: 0) == nil, "\(unit)")
        }
    }
}
