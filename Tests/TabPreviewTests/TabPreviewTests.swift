import Foundation
import TabLayout
import TabPreview
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The repository's `configs/` (layouts and global strings) and `docs/`.
enum Repository {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func layoutNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("configs/layouts").path).sorted()
    }

    /// `configs/layouts/<name>.*` compiled as the server would (bases from the same folder, global strings from
    /// `configs/strings`), without a version number.
    static func compiled(_ account: String, locale: String = "en", platform: Platform? = nil) throws -> CompiledLayout {
        var documents: [String: LayoutDocument] = [:]
        for file in try layoutNames() {
            let bytes = [UInt8](try Data(contentsOf: root.appendingPathComponent("configs/layouts/" + file)))
            documents[(file as NSString).deletingPathExtension] = try LayoutSource.parse(
                bytes, format: file.hasSuffix(".json") ? .json : nil)
        }
        var tables: [String: StringsTable] = [:]
        let stringsFolder = root.appendingPathComponent("configs/strings")
        for file in try FileManager.default.contentsOfDirectory(atPath: stringsFolder.path) {
            let bytes = [UInt8](try Data(contentsOf: stringsFolder.appendingPathComponent(file)))
            tables[(file as NSString).deletingPathExtension] = try StringsTable.read(bytes)
        }
        let document = try #require(documents[account])
        let resolved = try LayoutResolver.resolve(name: account, version: nil, document: document) { documents[$0] }
        return LayoutCompiler.compile(resolved, for: ClientContext(locale: locale, platform: platform), globalStrings: tables)
    }

    /// A layout written in the test, compiled for `en`.
    static func compiled(json: String) throws -> CompiledLayout {
        let resolved = try LayoutResolver.resolve(
            name: "test", version: 3, document: try LayoutSource.parse(Array(json.utf8), format: .json)
        ) {
            _ in nil
        }
        return LayoutCompiler.compile(resolved, for: ClientContext(locale: "en"), globalStrings: [:])
    }
}

/// The drawing, parsed back with libxml2 (FoundationXML's `XMLDocument`), a parser the renderer does not use.
struct ParsedSVG {
    let root: XMLElement

    init(_ bytes: [UInt8]) throws {
        root = try #require(try XMLDocument(data: Data(bytes), options: []).rootElement())
    }

    /// Every element below the root named `name` (`*`: every one) at any depth, in document order (XPath would
    /// need a prefix for SVG's namespace).
    func elements(named name: String) -> [XMLElement] {
        var found: [XMLElement] = []
        func visit(_ element: XMLElement) {
            for child in element.children ?? [] {
                guard let child = child as? XMLElement else { continue }
                if name == "*" || child.localName == name { found.append(child) }
                visit(child)
            }
        }
        visit(root)
        return found
    }

    /// The bar's items (`<g class="tab …">`), in order.
    var items: [XMLElement] { root.childElements("g").filter { $0.classes.contains("tab") } }
}

extension XMLElement {
    /// The attribute's value. (`attribute(forName:)` finds nothing on an element in a namespace in
    /// swift-corelibs-foundation, so the list is searched.)
    func value(_ attribute: String) -> String? { attributes?.first { $0.name == attribute }?.stringValue }

    /// The child elements named `name` (by local name: the SVG namespace is the default one).
    func childElements(_ name: String) -> [XMLElement] {
        (children ?? []).compactMap { $0 as? XMLElement }.filter { $0.localName == name }
    }

    func child(_ name: String, class className: String? = nil) -> XMLElement? {
        childElements(name).first { className == nil || $0.value("class") == className }
    }

    var classes: [String] { (value("class") ?? "").split(separator: " ").map(String.init) }
}

@Suite struct TabPreviewTests {
    @Test func isAnSVG11DocumentOfThePhonesWidthAndTheBarsHeight() throws {
        let svg = try ParsedSVG(try TabPreview.svg(try Repository.compiled("jack")))
        #expect(svg.root.localName == "svg")
        #expect(svg.root.uri == "http://www.w3.org/2000/svg")
        #expect(svg.root.value("version") == "1.1")
        #expect(svg.root.value("width") == "390")
        #expect(svg.root.value("height") == "56")  // jack's appearance.height
        let background = try #require(svg.root.childElements("rect").first { $0.value("id") == "background" })
        #expect(background.value("fill") == "#F8F8F8")
        #expect(background.value("height") == "56")
    }

    @Test func drawsATitlePerVisibleTabAndMoreWhenTabsOverflow() throws {
        let layout = try Repository.compiled("jack")
        let svg = try ParsedSVG(try TabPreview.svg(layout))
        let items = svg.items
        // jack: six tabs, maxVisibleTabs 5 → four tabs and More.
        #expect(items.map { $0.value("id") } == ["tab-home", "tab-favourites", "tab-web", "tab-news", "more"])
        #expect(items.map { $0.child("text", class: "title")?.stringValue } == ["Home", "Favourites", "Web", "News", "More"])
        #expect(items.last?.classes.contains("more") == true)
        let french = try ParsedSVG(try TabPreview.svg(try Repository.compiled("jack", locale: "fr")))
        #expect(french.items.map { $0.child("text", class: "title")?.stringValue } == ["Maison", "Favoris", "Toile", "News", "Plus"])
    }

    @Test func hasNoMoreWhenEveryTabFits() throws {
        let layout = try Repository.compiled(
            json: #"{"tabs":[{"id":"a","title":"A","rootViewController":"A"},{"id":"b","title":"B","rootViewController":"B"}]}"#)
        let items = try ParsedSVG(try TabPreview.svg(layout)).items
        #expect(items.map { $0.value("id") } == ["tab-a", "tab-b"])
        #expect(items.allSatisfy { !$0.classes.contains("more") })
    }

    @Test func theInitialTabIsSelectedAndTinted() throws {
        let svg = try ParsedSVG(try TabPreview.svg(try Repository.compiled("jack")))
        let items = svg.items
        let selected = items.filter { $0.classes.contains("selected") }
        try #require(selected.count == 1)
        #expect(selected.map { $0.value("id") } == ["tab-favourites"])  // jack's initialTab
        // tintColor #0A84FF; unselectedTintColor #8E8E93CC (SVG 1.1 has no 8-digit colours: #8E8E93 at 0.8).
        #expect(selected[0].child("text", class: "title")?.value("fill") == "#0A84FF")
        #expect(selected[0].child("rect", class: "icon")?.value("stroke") == "#0A84FF")
        for item in items where item !== selected[0] {
            let title = try #require(item.child("text", class: "title"))
            #expect(title.value("fill") == "#8E8E93")
            #expect(title.value("fill-opacity") == "0.8")
        }
        // jack's animator is "underline": the selected item alone has one.
        #expect(svg.elements(named: "rect").filter { $0.value("class") == "underline" }.count == 1)
        #expect(selected[0].child("rect", class: "underline") != nil)
    }

    @Test func aSelectedTabParameterMovesTheTintAndATabBehindMoreSelectsMore() throws {
        let layout = try Repository.compiled("jack")
        let web = try ParsedSVG(try TabPreview.svg(layout, selected: "web")).items
        #expect(web.filter { $0.classes.contains("selected") }.map { $0.value("id") } == ["tab-web"])
        let profile = try ParsedSVG(try TabPreview.svg(layout, selected: "profile")).items
        #expect(profile.filter { $0.classes.contains("selected") }.map { $0.value("id") } == ["more"])
        #expect(throws: TabPreviewError.unknownTab("nope", known: ["home", "favourites", "web", "news", "profile", "options"])) {
            try TabPreview.svg(layout, selected: "nope")
        }
        #expect(throws: TabPreviewError.widthOutOfRange(10)) { try TabPreview.svg(layout, width: 10) }
    }

    @Test func aDocumentThatIsNoCompiledLayoutIsRefusedWithThePointerAtFault() throws {
        #expect(throws: TabPreviewError.notACompiledLayout(pointer: "")) { try TabPreview.svg(document: .array([])) }
        #expect(throws: TabPreviewError.notACompiledLayout(pointer: "/tabs")) { try TabPreview.svg(document: .object([:])) }
        let badColour = JSONValue.object(["tabs": .array([]), "appearance": .object(["tintColor": .string("blue")])])
        #expect(throws: TabPreviewError.notACompiledLayout(pointer: "/appearance/tintColor")) {
            try TabPreview.svg(document: badColour)
        }
        let tabWithoutID = JSONValue.object(["tabs": .array([.object(["title": .string("A")])])])
        #expect(throws: TabPreviewError.notACompiledLayout(pointer: "/tabs/0")) { try TabPreview.svg(document: tabWithoutID) }
    }

    @Test func badgesAreDrawnAsRedPillsWithTheirText() throws {
        let items = try ParsedSVG(try TabPreview.svg(try Repository.compiled("jack"))).items
        let favourites = try #require(items.first { $0.value("id") == "tab-favourites" })
        let badge = try #require(favourites.child("g", class: "badge"))
        #expect(badge.child("rect")?.value("fill") == "#FF3B30")
        #expect(badge.child("text")?.stringValue == "3")
        #expect(items.filter { $0.child("g", class: "badge") != nil }.count == 1)
    }

    @Test func iconsAreNeutralGlyphsNamingTheImage() throws {
        let items = try ParsedSVG(try TabPreview.svg(try Repository.compiled("jack"))).items
        try #require(items.count == 5)
        let home = items[0]
        #expect(home.child("rect", class: "icon") != nil)
        #expect(home.child("text", class: "icon-name")?.stringValue == "tabbar…")  // tabbar_home_icon.png, cut to fit
        #expect(home.child("title")?.stringValue == "Home, image tabbar_home_icon.png")
        // The selected favourites tab shows its selectedImage.
        #expect(items[1].child("text", class: "icon-name")?.stringValue == "star.f…")
        #expect(items[1].child("title")?.stringValue == "Favourites, image star.fill, badge 3, selected")
    }

    @Test func textIsEscapedAndCharactersXMLCannotHoldAreReplaced() throws {
        // A document given as JSON (validation keeps control characters out of layouts; the renderer does not
        // rely on it).
        let document = JSONValue.object([
            "layout": .string("a&b"), "locale": .string("en"), "initialIndex": .integer(0),
            "appearance": .object(["height": .integer(49)]),
            "tabs": .array([
                .object([
                    "id": .string("a"), "title": .string("<b>&\"x\"'\u{1}"), "badge": .string("]]>"), "image": .string("a\"b"),
                ])
            ]),
        ])
        let bytes = try TabPreview.svg(document: document)
        let items = try ParsedSVG(bytes).items
        try #require(items.count == 1)
        #expect(items[0].child("text", class: "title")?.stringValue == "<b>&\"x\"'\u{FFFD}")
        #expect(items[0].child("g", class: "badge")?.child("text")?.stringValue == "]]>")
        #expect(items[0].child("title")?.stringValue == "<b>&\"x\"'\u{FFFD}, image a\"b, badge ]]>, selected")
        #expect(try ParsedSVG(bytes).root.childElements("title").first?.stringValue == "Tab bar of a&b, locale en")
        try expectWellFormedToPython(bytes)
        try expectValidSVG11(bytes, name: "escaping")
    }

    @Test func theSameLayoutGivesTheSameBytes() throws {
        let a = try TabPreview.svg(try Repository.compiled("jack"))
        let b = try TabPreview.svg(try Repository.compiled("jack"))
        #expect(a == b)
        #expect(try TabPreview.svg(try Repository.compiled("jack"), selected: "web") != a)
    }

    /// An emptied configs/layouts would otherwise leave the test below with nothing to compare, and pass.
    @Test func theConfigsHoldLayoutsToDraw() throws {
        #expect(try Repository.layoutNames().count >= 7)
    }

    /// `docs/preview-<layout>.svg` is what the renderer draws for each layout in `configs/layouts` (locale `en`).
    /// `UPDATE_PREVIEWS=1 swift test --filter TabPreviewTests` rewrites them.
    @Test(arguments: try Repository.layoutNames().map { ($0 as NSString).deletingPathExtension })
    func docsPicturesAreTheRenderersOutput(account: String) throws {
        let bytes = try TabPreview.svg(try Repository.compiled(account))
        let file = Repository.root.appendingPathComponent("docs/preview-\(account).svg")
        if ProcessInfo.processInfo.environment["UPDATE_PREVIEWS"] == "1" {
            try Data(bytes).write(to: file)
        }
        let stored = try? Data(contentsOf: file)
        #expect(stored == Data(bytes), "docs/preview-\(account).svg is stale: UPDATE_PREVIEWS=1 swift test --filter TabPreviewTests")
        try expectWellFormedToPython(bytes)
        try expectValidSVG11(bytes, name: account)
        // What a DTD cannot see: SVG 1.1 paints are `#RRGGBB` (eight digits are CSS Color 4), opacities 0–1.
        for element in try ParsedSVG(bytes).elements(named: "*") {
            for attribute in element.attributes ?? [] {
                let value = attribute.stringValue ?? ""
                switch attribute.name {
                case "fill", "stroke":
                    #expect(value == "none" || value.wholeMatch(of: /#[0-9A-F]{6}/) != nil, "\(attribute.name)=\(value)")
                case "fill-opacity", "stroke-opacity":
                    #expect(Double(value).map { (0...1).contains($0) } == true, "\(attribute.name)=\(value)")
                default: break
                }
            }
        }
    }
}

// MARK: - Independent checkers

/// Python's expat (xml.etree), a parser unrelated to libxml2, must read the bytes.
func expectWellFormedToPython(_ bytes: [UInt8]) throws {
    let result = try run(
        "/usr/bin/env", ["python3", "-c", "import sys, xml.etree.ElementTree as E; E.fromstring(sys.stdin.buffer.read())"], input: bytes)
    #expect(result.status == 0, "python3 xml.etree refused the SVG: \(result.output)")
}

/// With `xmllint` (Debian's libxml2-utils, or `$XMLLINT`) and the SVG 1.1 DTD (Debian's w3c-sgml-lib, or
/// `$SVG11_DTD`), the drawing must be valid SVG 1.1; without them this check is left out, unless
/// `REQUIRE_SVG_VALIDATION=1` (as in CI) makes their absence a failure.
func expectValidSVG11(_ bytes: [UInt8], name: String) throws {
    let environment = ProcessInfo.processInfo.environment
    let xmllint = environment["XMLLINT"] ?? findOnPath("xmllint")
    let dtd = environment["SVG11_DTD"] ?? "/usr/share/xml/w3c-sgml-lib/schema/dtd/REC-SVG11-20110816/svg11.dtd"
    guard let xmllint, FileManager.default.fileExists(atPath: dtd) else {
        if environment["REQUIRE_SVG_VALIDATION"] == "1" { Issue.record("xmllint or the SVG 1.1 DTD is missing") }
        return
    }
    let file = FileManager.default.temporaryDirectory.appendingPathComponent(
        "preview-\(name)-\(ProcessInfo.processInfo.processIdentifier).svg")
    try Data(bytes).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let result = try run(xmllint, ["--noout", "--nonet", "--dtdvalid", dtd, file.path], input: [])
    #expect(result.status == 0, "xmllint: not valid SVG 1.1: \(result.output)")
}

func findOnPath(_ command: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(command)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// Runs a program with `input` on its stdin; its stdout and stderr together, and its exit status. Killed after 30 s.
func run(_ executable: String, _ arguments: [String], input: [UInt8]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let stdin = Pipe()
    let output = Pipe()
    process.standardInput = stdin
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let deadline = DispatchWorkItem { process.terminate() }
    DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: deadline)
    stdin.fileHandleForWriting.write(Data(input))
    try stdin.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    deadline.cancel()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
