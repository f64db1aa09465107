import FuzzSupport
import TabLayout

/// The whole compile of any source (format sniffed), for every platform, an app version and two locales,
/// encoded both ways.
let fuzz: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32 = { data, size in
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let document = try? LayoutSource.parse(bytes),
        let resolved = try? LayoutResolver.resolve(name: "fuzz", version: 1, document: document, lookup: { _ in nil })
    else { return 0 }
    for platform in [nil] + Platform.allCases.map(Optional.some) {
        for locale in ["en", "fr-CA"] {
            let compiled = LayoutCompiler.compile(
                resolved, for: ClientContext(locale: locale, platform: platform, appVersion: AppVersion("2.1")), globalStrings: [:])
            _ = CanonicalJSON.encode(compiled.document)
            _ = PropertyListXML.encode(compiled.legacy)
        }
    }
    return 0
}

// SwiftPM gives an executable its own `main`; libFuzzer's driver runs from it (see Fuzz/README.md).
exit(runFuzzer(fuzz))
