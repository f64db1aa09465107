import Benchmark
import TabLayout

/// A 20-tab document with two locales (the size of a real app's layout), in JSON and as an XML plist.
let twentyTabs: [UInt8] = {
    let tabs = (0..<20).map { i in
        #"{"id":"tab\#(i)","title":"TAB_\#(i)","image":"icon\#(i)","rootViewController":"Tab\#(i)ViewController","badge":"\#(i)","params":{"url":"https://example.com/\#(i)","zoom":\#(i)},"platforms":["iphone","ipad"],"minAppVersion":"1.\#(i)"}"#
    }
    let en = (0..<20).map { #""TAB_\#($0)":"Tab \#($0)""# }.joined(separator: ",")
    let fr = (0..<20).map { #""TAB_\#($0)":"Onglet \#($0)""# }.joined(separator: ",")
    return Array(
        ##"{"schemaVersion":1,"maxVisibleTabs":5,"moreTab":{"title":"MORE"},"appearance":{"height":56,"backgroundColor":"#F8F8F8","animator":{"name":"underline"}},"strings":{"en":{\##(en)},"fr":{\##(fr)}},"tabs":[\##(tabs.joined(separator: ","))]}"##
            .utf8)
}()

let document = try! LayoutSource.parse(twentyTabs, format: .json)
let resolved = try! LayoutResolver.resolve(name: "bench", version: 1, document: document) { _ in nil }
let compiled = LayoutCompiler.compile(
    resolved, for: ClientContext(locale: "fr", platform: .iphone, appVersion: AppVersion("1.9")), globalStrings: [:])
let xmlSource = PropertyListXML.encode(.object(["tabs": compiled.document]))

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput], maxDuration: .seconds(2))

    Benchmark("Compile 20 tabs, 2 locales (parse + resolve + compile + canonical JSON)") { benchmark in
        for _ in benchmark.scaledIterations {
            let document = try LayoutSource.parse(twentyTabs, format: .json)
            let resolved = try LayoutResolver.resolve(name: "bench", version: 1, document: document) { _ in nil }
            for locale in ["en", "fr"] {
                let layout = LayoutCompiler.compile(resolved, for: ClientContext(locale: locale), globalStrings: [:])
                blackHole(CanonicalJSON.encode(layout.document))
            }
        }
    }
    Benchmark("Compile a resolved layout for one client") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(LayoutCompiler.compile(resolved, for: ClientContext(locale: "fr", platform: .ipad), globalStrings: [:]))
        }
    }
    Benchmark("Canonical JSON of a compiled layout") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(CanonicalJSON.encode(compiled.document)) }
    }
    Benchmark("XML plist of a compiled layout") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(PropertyListXML.encode(compiled.document)) }
    }
    Benchmark("JSON reader, 20-tab source") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try JSONReader.read(twentyTabs)) }
    }
    Benchmark("XML plist reader, 20-tab layout") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try XMLPlistReader.read(xmlSource)) }
    }
    Benchmark("Strong ETag (SHA-256) of a compiled layout") { benchmark in
        let bytes = CanonicalJSON.encode(compiled.document)
        for _ in benchmark.scaledIterations { blackHole(EntityTag.strong(for: bytes)) }
    }
}
