import HashTreeCollections
import MicroHTTPD
import Synchronization
import TabLayout
import TabStore

/// The representations a client can ask for.
enum RepresentationFormat: UInt8, Sendable {
    /// The compiled document as canonical JSON.
    case json
    /// The compiled document as an XML property list.
    case plist
    /// Seed 000's `ApplicationHierarchy.plist` array.
    case legacyPlist

    var contentType: String {
        switch self {
        case .json: "application/json"
        case .plist, .legacyPlist: "application/x-plist"
        }
    }
}

/// Which variant of a layout a request selects. Every member is a small index, so the set of keys of a
/// layout is finite: locales × 7 platform choices × (2 × app-version bounds + 2) × 3 formats.
struct VariantKey: Hashable, Sendable {
    var locale: UInt16
    var platform: UInt8
    var versionClass: UInt16
    var format: RepresentationFormat
}

/// One representation, built once: its strong ETag and the 200 and 304 responses that every request for it
/// shares.
final class Representation: Sendable {
    let etag: String
    let ok: PreparedResponse
    let notModified: PreparedResponse
    /// The memory it holds, for the cache's bound: the body twice (the 200's and the 304's buffers) and ~2 KiB
    /// of headers, response objects, cache slot and allocator overhead (100,000 five-tab variants measured
    /// ~3.5 KB each in RSS).
    let cost: Int
    /// Set by each request that uses it, cleared by each sweep of the cache: a representation found clear was
    /// not asked for since the previous sweep (the second-chance rule).
    private let recentlyUsed = Atomic<Bool>(true)

    init(body: [UInt8], format: RepresentationFormat, locale: String, entry: LayoutEntry, cacheControl: String) throws(MicroHTTPDError) {
        let etag = EntityTag.strong(for: body)
        self.etag = etag
        self.cost = 2 * body.count + 2048
        // What a 304 repeats (RFC 9110 §15.4.5): validators and caching fields, not representation metadata
        // such as Content-Language.
        let shared = [
            HTTPHeader("ETag", etag), HTTPHeader("Cache-Control", cacheControl), HTTPHeader("Vary", entry.vary),
            HTTPHeader("Last-Modified", entry.lastModified),
        ]
        ok = try PreparedResponse(
            status: 200,
            headers: [HTTPHeader("Content-Type", format.contentType), HTTPHeader("Content-Language", locale)] + shared, body: body)
        notModified = try PreparedResponse(status: 304, headers: shared, body: body)
    }

    /// Notes a request for it: a read of the bit, and a write only the first time after a sweep.
    func markUsed() {
        if !recentlyUsed.load(ordering: .relaxed) { recentlyUsed.store(true, ordering: .relaxed) }
    }

    /// Whether a request used it since the last call (and clears that).
    func takeUsed() -> Bool { recentlyUsed.exchange(false, ordering: .relaxed) }
}

/// The memory that cached representations hold across every layout, and its bound. Past the limit, the
/// service sweeps every layout's cache and drops the representations that no request used since the sweep
/// before (second chance, as in CLOCK); they are compiled again if asked for.
final class VariantBudget: Sendable {
    /// Bytes that cached representations may hold before a sweep.
    let limit: Int
    private let held = Atomic<Int>(0)
    private let count = Atomic<Int>(0)
    private let sweeping = Atomic<Bool>(false)
    let evictions = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    var bytes: Int { held.load(ordering: .relaxed) }
    var representations: Int { count.load(ordering: .relaxed) }

    /// Counts a cached representation; true when the total is past the limit and the caller is the one to
    /// sweep (one sweep at a time; ``sweepFinished()`` ends it).
    func added(_ representation: Representation) -> Bool {
        count.add(1, ordering: .relaxed)
        let total = held.add(representation.cost, ordering: .relaxed).newValue
        return total > limit && sweeping.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
    }

    func removed(_ representation: Representation) {
        count.subtract(1, ordering: .relaxed)
        held.subtract(representation.cost, ordering: .relaxed)
    }

    func sweepFinished() { sweeping.store(false, ordering: .releasing) }
}

/// A layout ready to serve: resolved once, its variants compiled on first request and kept.
final class LayoutEntry: Sendable {
    let resolved: ResolvedLayout
    /// The locales its tables (own and global) have, sorted: the candidates for `Accept-Language`.
    let locales: [String]
    let defaultLocaleIndex: Int
    let lastModified: String
    let lastModifiedSeconds: Int64
    /// The request headers that choose among this layout's representations: `Accept` and `Accept-Language`
    /// always, the platform and app-version headers only when some tab is targeted by them.
    let vary: String
    private let globalStrings: [String: StringsTable]
    private let variants = Mutex<[VariantKey: Representation]>([:])
    private let budget: VariantBudget
    /// Variants kept per layout; beyond it an arbitrary one is dropped (the global bound is ``VariantBudget``).
    static let variantLimit = 512

    init(resolved: ResolvedLayout, globalStrings: [String: StringsTable], modifiedMillis: Int64, budget: VariantBudget) {
        self.resolved = resolved
        self.globalStrings = globalStrings
        self.budget = budget
        var locales = Set(resolved.strings.keys).union(globalStrings.keys)
        locales.insert(resolved.defaultLocale)
        self.locales = locales.sorted()
        self.defaultLocaleIndex = self.locales.firstIndex(of: resolved.defaultLocale) ?? 0
        self.lastModifiedSeconds = modifiedMillis / 1000
        self.lastModified = UTCDateTime(unixSeconds: modifiedMillis / 1000).httpDate
        var vary = "Accept, Accept-Language"
        if Self.targetsPlatforms(resolved.tabs) { vary += ", X-Client-Platform" }
        if !resolved.versionBounds.isEmpty { vary += ", X-App-Version" }
        self.vary = vary
    }

    deinit {
        let budget = self.budget
        variants.withLock { cache in for representation in cache.values { budget.removed(representation) } }
    }

    /// Drops the representations not used since the previous sweep; the number dropped.
    func sweep() -> Int {
        let budget = self.budget
        return variants.withLock { cache in
            var dropped = 0
            for (key, representation) in cache where !representation.takeUsed() {
                cache[key] = nil
                budget.removed(representation)
                dropped += 1
            }
            return dropped
        }
    }

    private static func targetsPlatforms(_ tabs: [TabSpec]) -> Bool {
        tabs.contains { $0.platforms != nil || targetsPlatforms($0.children) }
    }

    /// The app-version class of `version`: which side of every bound it lies on (0 when the client gave none).
    func versionClass(_ version: AppVersion?) -> UInt16 {
        guard let version else { return 0 }
        let bounds = resolved.versionBounds
        var below = 0
        var equal = 0
        for bound in bounds {
            if bound < version { below += 1 } else if bound == version { equal = 1 }
        }
        return UInt16(1 + 2 * below + equal)
    }

    /// The representation for `key`, compiled now if this is its first request (or was dropped since), and
    /// whether the cache is now past its bound and the caller should sweep it.
    func representation(
        _ key: VariantKey, platform: Platform?, appVersion: AppVersion?, cacheControl: String, metrics: Metrics
    ) throws(MicroHTTPDError) -> (Representation, sweep: Bool) {
        if let hit = variants.withLock({ $0[key] }) {
            metrics.cacheHits.add(1, ordering: .relaxed)
            hit.markUsed()
            return (hit, false)
        }
        metrics.cacheMisses.add(1, ordering: .relaxed)
        let locale = locales[Int(key.locale)]
        let compiled = LayoutCompiler.compile(
            resolved, for: ClientContext(locale: locale, platform: platform, appVersion: appVersion), globalStrings: globalStrings)
        let body: [UInt8]
        switch key.format {
        case .json: body = CanonicalJSON.encode(compiled.document)
        case .plist: body = PropertyListXML.encode(compiled.document)
        case .legacyPlist: body = PropertyListXML.encode(compiled.legacy)
        }
        let built = try Representation(body: body, format: key.format, locale: locale, entry: self, cacheControl: cacheControl)
        let budget = self.budget
        return variants.withLock { cache in
            if let raced = cache[key] { return (raced, false) }
            if cache.count >= Self.variantLimit, let victim = cache.first {
                cache[victim.key] = nil
                budget.removed(victim.value)
            }
            cache[key] = built
            return (built, budget.added(built))
        }
    }
}

/// Everything the read path needs, immutable; a write builds a new one and swaps it in.
///
/// The per-account maps are persistent hash tries: a snapshot after one write shares every untouched
/// account's node with the one before it, so a write costs O(log accounts + dependents), not O(accounts).
final class Snapshot: Sendable {
    /// Accounts with a layout of their own that compiles (`default` among them when it exists).
    let entries: TreeDictionary<String, LayoutEntry>
    /// Every account's current validated document (for resolving overlays), compiled or not.
    let documents: TreeDictionary<String, LayoutDocument>
    let records: TreeDictionary<String, StoredVersion>
    /// The accounts whose document names each account in `extends` (the reverse of `extends`).
    let extendedBy: TreeDictionary<String, Set<String>>
    let globalStrings: [String: StringsTable]
    let stringsRecords: [String: StoredStrings]
    /// The bound on the representations that entries cache (one for the service, shared by its snapshots).
    let budget: VariantBudget

    init(
        entries: TreeDictionary<String, LayoutEntry>, documents: TreeDictionary<String, LayoutDocument>,
        records: TreeDictionary<String, StoredVersion>, extendedBy: TreeDictionary<String, Set<String>>,
        globalStrings: [String: StringsTable], stringsRecords: [String: StoredStrings], budget: VariantBudget
    ) {
        self.budget = budget
        self.entries = entries
        self.documents = documents
        self.records = records
        self.extendedBy = extendedBy
        self.globalStrings = globalStrings
        self.stringsRecords = stringsRecords
    }

    /// The entry that serves `account`: its own, else `default`'s.
    func entry(for account: String) -> LayoutEntry? { entries[account] ?? entries["default"] }

    /// Accounts whose layout extends `account`, directly or through others.
    func dependents(of account: String) -> Set<String> {
        var result: Set<String> = []
        var frontier = [account]
        while let next = frontier.popLast() {
            for name in extendedBy[next] ?? [] where name != account && result.insert(name).inserted {
                frontier.append(name)
            }
        }
        return result
    }

    /// Resolves `account`'s document against this snapshot's documents.
    func resolve(_ account: String, version: Int?, document: LayoutDocument, strict: Bool) throws(LayoutError) -> ResolvedLayout {
        try LayoutResolver.resolve(name: account, version: version, document: document, strict: strict) { documents[$0] }
    }
}
