import Benchmark
import HeaderFields

// What an iOS app sends (URLSession/CFNetwork) when it revalidates its layout, and what the
// read path decides from it: format, locale, coding, and whether its ETag is current (the 304 path).
let accept: [UInt8] = Array("*/*".utf8)
let acceptLanguage: [UInt8] = Array("fr-FR,fr;q=0.9,en;q=0.8".utf8)
let acceptEncoding: [UInt8] = Array("gzip, deflate, br".utf8)
let ifNoneMatch: [UInt8] = Array(#""5d41402abc4b2a76b9719d911017c592-br""#.utf8)

let offers = MediaTypeOffers(["application/json", "application/x-plist"])
let locales = LocaleTable(["de", "en", "es", "fr", "ja", "pt_BR"])
let current = EntityTag(opaque: "5d41402abc4b2a76b9719d911017c592-br")

/// The caches the read path keeps (one per question and offer set).
let formatCache = DecisionCache<Int?>()
let localeCache = DecisionCache<Int?>()
let codingCache = DecisionCache<ContentCoding?>()

/// Every decision of one request, the way the read path makes them; returns a value that depends on all of them.
@inline(never)
func decide(cached: Bool) -> Int {
    accept.withUnsafeBufferPointer { accept in
        acceptLanguage.withUnsafeBufferPointer { language in
            acceptEncoding.withUnsafeBufferPointer { encoding in
                ifNoneMatch.withUnsafeBufferPointer { tag in
                    let format: Int?
                    let locale: Int?
                    let coding: ContentCoding?
                    if cached {
                        format = formatCache.decision(CollectionOfOne(accept)) {
                            AcceptMediaType.choose(CollectionOfOne(accept), offers: offers)
                        }
                        locale = localeCache.decision(CollectionOfOne(language)) {
                            AcceptLanguage.choose(CollectionOfOne(language), table: locales)
                        }
                        coding = codingCache.decision(CollectionOfOne(encoding)) {
                            AcceptEncoding.choose(CollectionOfOne(encoding), available: [.br, .gzip])
                        }
                    } else {
                        format = AcceptMediaType.choose(CollectionOfOne(accept), offers: offers)
                        locale = AcceptLanguage.choose(CollectionOfOne(language), table: locales)
                        coding = AcceptEncoding.choose(CollectionOfOne(encoding), available: [.br, .gzip])
                    }
                    let notModified = EntityTagList.matchesWeakly(CollectionOfOne(tag), current: current)
                    return (format ?? 9) &* 1000 &+ (locale ?? 9) &* 100 &+ Int(coding?.rawValue ?? 9) &* 10 &+ (notModified ? 1 : 0)
                }
            }
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput], scalingFactor: .kilo, maxDuration: .seconds(2))

    // The target: 0 allocations per request on the 304 path with iOS headers, after warm-up.
    Benchmark("iOS revalidation: Accept, Accept-Language, Accept-Encoding by DecisionCache, If-None-Match (after warm-up)") {
        benchmark in
        // Warm-up: the first request decides and fills the caches; what is measured is every request after it.
        precondition(decide(cached: true) == 300 + 20 + 1, "fr, br, 304")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(decide(cached: true)) }
    }
    Benchmark("iOS revalidation: the same decisions parsed every time, no cache") { benchmark in
        precondition(decide(cached: false) == 300 + 20 + 1, "fr, br, 304")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(decide(cached: false)) }
    }
}
