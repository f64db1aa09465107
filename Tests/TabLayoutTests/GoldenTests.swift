import Foundation
import Testing

@testable import TabLayout

/// Every layout of the configs fixture (the seeds' layouts) compiled for en and fr, compared byte for byte
/// with `Fixtures/expected/<account>.<locale>.json`. `UPDATE_GOLDEN=1 swift test` rewrites them (review the diff).
@Suite struct GoldenTests {
    static let accounts = ["default", "ikhoyo", "jack", "jill", "john", "mdv", "nine"]

    @Test(arguments: accounts, ["en", "fr"])
    func compiledLayoutMatchesGoldenFile(account: String, locale: String) throws {
        let (documents, tables) = try Fixtures.configs()
        let document = try #require(documents[account])
        let resolved = try LayoutResolver.resolve(name: account, version: 1, document: document) { documents[$0] }
        let compiled = LayoutCompiler.compile(resolved, for: ClientContext(locale: locale), globalStrings: tables)
        let bytes = CanonicalJSON.encode(compiled.document)
        let expectedPath = "expected/\(account).\(locale).json"
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try Data(bytes + [0x0A]).write(to: Fixtures.root.appendingPathComponent(expectedPath))
        }
        let expected = try Fixtures.bytes(expectedPath)
        #expect(String(decoding: bytes + [0x0A], as: UTF8.self) == String(decoding: expected, as: UTF8.self))
    }

    @Test func seed000PlistCompilesByteForByte() throws {
        let source = try Fixtures.bytes("sources/seed000.plist")
        #expect(!source.starts(with: Array("<?xml".utf8)), "the fixture is the article's plist: no declaration")
        let (_, tables) = try Fixtures.configs()
        let document = try LayoutSource.parse(source)
        let resolved = try LayoutResolver.resolve(name: "seed", version: 1, document: document) { _ in nil }
        let compiled = LayoutCompiler.compile(resolved, for: ClientContext(locale: "fr"), globalStrings: tables)
        #expect(
            String(decoding: CanonicalJSON.encode(compiled.document), as: UTF8.self)
                == #"{"appearance":{"animator":{"name":"none"},"height":49},"initialIndex":0,"layout":"seed","locale":"fr","tabs":[{"id":"home","image":"tabbar_home_icon.png","navigation":true,"reselect":"popToRoot","rootViewController":"HomeViewController","tag":0,"title":"Accueil","titleKey":"HOME_TAB"}],"version":1}"#
        )
        #expect(
            compiled.legacy
                == .array([
                    .object([
                        "TabBarTitle": .string("Accueil"), "TabBarImage": .string("tabbar_home_icon.png"),
                        "RootViewController": .string("HomeViewController"),
                    ])
                ]))
    }

    @Test func threeEncodingsOfOneDocumentCompileAlike() throws {
        let json = try LayoutSource.parse(try Fixtures.bytes("configs/layouts/jack.json"), format: .json)
        let xml = try LayoutSource.parse(try Fixtures.bytes("sources/jack.xml.plist"))
        let binary = try LayoutSource.parse(try Fixtures.bytes("sources/jack.bplist"))
        #expect(xml == json)
        #expect(binary == json)
    }

    @Test func plistOutputCarriesTheSameDocument() throws {
        let value: JSONValue = .object([
            "b": .array([.integer(1), .real(2.5), .bool(true)]), "a": .string("x < y & z"), "c": .object([:]),
        ])
        let text = String(decoding: PropertyListXML.encode(value), as: UTF8.self)
        #expect(text.contains("<key>a</key>\n\t<string>x &lt; y &amp; z</string>"))
        #expect(text.range(of: "<key>a</key>")!.lowerBound < text.range(of: "<key>b</key>")!.lowerBound)
        #expect(text.contains("<real>2.5</real>"))
        let reread = try XMLPlistReader.read(PropertyListXML.encode(value))
        #expect(reread["a"]?.value == .string("x < y & z"))
    }
}
