import Compression
import Dispatch
import HashTreeCollections
import HeaderFields
import Logging
import MicroHTTPD
import Synchronization
import TabBuilds
import TabLayout
import TabPreview
import TabStore

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
    private let sweeps = Atomic<UInt64>(0)

    init(limit: Int) { self.limit = limit }

    /// Sweeps finished so far: answers remembered before one may hold a representation it dropped (``ReadMemo``).
    var generation: UInt64 { sweeps.load(ordering: .acquiring) }

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

    /// Counts a sweep that dropped representations, after it dropped them.
    func swept() { sweeps.add(1, ordering: .releasing) }
}

/// A layout ready to serve: resolved once, its variants compiled on first request and kept.
final class LayoutEntry: Sendable {
    let resolved: ResolvedLayout
    /// The locales its tables (own and global) have, sorted: the candidates for `Accept-Language`.
    let locales: [String]
    let defaultLocaleIndex: Int
    /// Chooses among `locales` for an `Accept-Language` (shared by every layout with the same locales).
    let negotiator: LocaleNegotiator
    /// Milliseconds of the newest layout record among its own and its bases'.
    let layoutModifiedMillis: Int64
    /// Milliseconds of each global strings table's current version, by locale.
    let stringsModifiedMillis: [String: Int64]
    /// The account's previous version was committed within the same second as the current one.
    let changedTwiceInOneSecond: Bool
    /// The request headers that choose among this layout's representations: `Accept` and `Accept-Language`
    /// always, the platform header only when the platform can change the layout (``LayoutCompiler/dependsOnPlatform(_:)``),
    /// the app-version header only when some tab is targeted by it.
    let vary: String
    let globalStrings: [String: StringsTable]
    /// What ``vary`` adds to the layout's own headers (kept for ``replacingStrings(_:modified:changed:)``).
    private let extraVary: String?
    /// `Tabs-Revoked` of the layout's account, carried by every 200 and 304 of its representations (nil: none revoked).
    let revokedHeader: HTTPHeader?
    private let variants = Mutex<[VariantKey: Representation]>([:])
    private let budget: VariantBudget
    /// Variants kept per layout; beyond it an arbitrary one is dropped (the global bound is ``VariantBudget``).
    static let variantLimit = 512

    init(
        resolved: ResolvedLayout, globalStrings: [String: StringsTable], layoutModifiedMillis: Int64,
        stringsModifiedMillis: [String: Int64], changedTwiceInOneSecond: Bool, budget: VariantBudget, extraVary: String? = nil,
        revokedHeader: HTTPHeader? = nil
    ) {
        self.revokedHeader = revokedHeader
        self.resolved = resolved
        self.globalStrings = globalStrings
        self.budget = budget
        var locales = Set(resolved.strings.keys).union(globalStrings.keys)
        locales.insert(resolved.defaultLocale)
        self.locales = locales.sorted()
        self.defaultLocaleIndex = self.locales.firstIndex(of: resolved.defaultLocale) ?? 0
        self.negotiator = LocaleNegotiator.shared(for: self.locales)
        self.layoutModifiedMillis = layoutModifiedMillis
        self.stringsModifiedMillis = stringsModifiedMillis
        self.changedTwiceInOneSecond = changedTwiceInOneSecond
        self.extraVary = extraVary
        var vary = "Accept, Accept-Language, Accept-Encoding"
        if LayoutCompiler.dependsOnPlatform(resolved) { vary += ", X-Client-Platform" }
        if !resolved.versionBounds.isEmpty { vary += ", X-App-Version" }
        if let extraVary { vary += ", " + extraVary }
        self.vary = vary
    }

    deinit {
        let budget = self.budget
        variants.withLock { cache in for representation in cache.values { budget.removed(representation) } }
    }

    /// The index of the locale for `?locale=` (`fr-CA` falls back to `fr`), else the default locale's.
    func localeIndex(asked: String) -> Int { negotiator.table.match(asked) ?? defaultLocaleIndex }

    /// The index of the locale for an `Accept-Language` field (nil: none sent), else the default locale's.
    func localeIndex(acceptLanguage field: UnsafeBufferPointer<UInt8>?) -> Int {
        guard let field else { return defaultLocaleIndex }
        return negotiator.choose(field) ?? defaultLocaleIndex
    }

    /// The newest input of a representation in `locale`: the layout records, and the strings tables of that
    /// locale, its language and the default locale (a change to another locale's table does not move it).
    func lastModifiedMillis(locale: String) -> Int64 {
        var newest = layoutModifiedMillis
        for table in [locale, LocaleMatcher.language(of: locale), resolved.defaultLocale] {
            newest = max(newest, stringsModifiedMillis[table] ?? 0)
        }
        return newest
    }

    /// This layout over new global strings tables after `changed` (a locale's table) was written. What a layout resolves
    /// to does not depend on strings tables, so nothing is resolved again; the representations of every locale that
    /// `changed` does not feed (a locale reads its own table, its language's and the default locale's) are carried
    /// over with their bytes and tags, so that readers of those locales neither wait for a compile nor lose their
    /// 304s. Nil when the locales themselves change (representations name their locale by index).
    func replacingStrings(_ globalStrings: [String: StringsTable], modified: [String: Int64], changed: String) -> LayoutEntry? {
        let entry = LayoutEntry(
            resolved: resolved, globalStrings: globalStrings, layoutModifiedMillis: layoutModifiedMillis,
            stringsModifiedMillis: modified, changedTwiceInOneSecond: changedTwiceInOneSecond, budget: budget, extraVary: extraVary,
            revokedHeader: revokedHeader)
        guard entry.locales == locales else { return nil }
        let defaultLocale = resolved.defaultLocale
        let kept = variants.withLock { cache in
            cache.filter { key, _ in
                let locale = locales[Int(key.locale)]
                return changed != locale && changed != LocaleMatcher.language(of: locale) && changed != defaultLocale
            }
        }
        let budget = self.budget
        entry.variants.withLock { cache in
            for (key, representation) in kept {
                cache[key] = representation
                _ = budget.added(representation)  // counted by each entry holding it until that entry goes
            }
        }
        return entry
    }

    /// Drops every cached representation; the number dropped.
    func dropAll() -> Int {
        let budget = self.budget
        return variants.withLock { cache in
            for representation in cache.values { budget.removed(representation) }
            defer { cache = [:] }
            return cache.count
        }
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
    /// - Parameter brotliNow: the client accepts br and not gzip (a cache in front that reduced `Accept-Encoding` to
    ///   `br`): a brotli form still being made is made now, for this request, so that no cache stores identity for it.
    /// - Parameter build: a declared build's client gets only the tabs it can open (``BuildGate/trimmed(_:for:)``),
    ///   the rest named in `Tabs-Withheld`; with `builds` declared, every representation varies on platform and version.
    func representation(
        _ key: VariantKey, platform: Platform?, appVersion: AppVersion?, cacheControl: String, metrics: Metrics, brotliNow: Bool = false,
        build: Build? = nil, buildsDeclared: Bool = false
    ) throws(RepresentationError) -> (Representation, sweep: Bool) {
        if let hit = variants.withLock({ $0[key] }) {
            metrics.cacheHits.add(1, ordering: .relaxed)
            hit.markUsed()
            return (brotliNow ? completed(key, hit) : hit, false)
        }
        metrics.cacheMisses.add(1, ordering: .relaxed)
        let locale = locales[Int(key.locale)]
        let (layout, withheld) = build.map { BuildGate.trimmed(resolved, for: $0) } ?? (resolved, [])
        if let build, BuildGate.opensNone(of: resolved, trimmed: layout, for: build) { throw .nothingToOpen }
        let compiled = LayoutCompiler.compile(
            layout, for: ClientContext(locale: locale, platform: platform, appVersion: appVersion), globalStrings: globalStrings)
        let extraHeaders = withheld.isEmpty ? [] : [HTTPHeader("Tabs-Withheld", withheld.joined(separator: ", "))]
        let body: [UInt8]
        switch key.format {
        case .json: body = CanonicalJSON.encode(compiled.document)
        case .plist: body = PropertyListXML.encode(compiled.document)
        case .legacyPlist: body = PropertyListXML.encode(compiled.legacy)
        case .preview, .previewDark:
            do throws(TabPreviewError) {
                body = try TabPreview.svg(compiled, selected: nil, scheme: key.format == .previewDark ? .dark : .light, platform: platform)
            } catch {
                throw .preview(error)
            }
        }
        // gzip -9 of a layout takes tens of microseconds: made now. brotli at quality 11 takes milliseconds: made on
        // the compression queue, never on a request's thread; until it lands, br clients get gzip or identity.
        let gzipped = Compressor.gzipped(body)
        let lastModified = lastModifiedMillis(locale: locale) / 1000
        var varies = self.vary
        if buildsDeclared {
            for name in ["X-Client-Platform", "X-App-Version"] where !varies.contains(name) { varies += ", " + name }
        }
        let vary = varies
        let ambiguous = changedTwiceInOneSecond
        let revoked = revokedHeader.map { [$0] } ?? []
        let make: @Sendable ([ContentCoding: [UInt8]]) throws(RepresentationError) -> Representation = {
            codings throws(RepresentationError) in
            try RepresentationError.wrap { () throws(MicroHTTPDError) -> Representation in
                try Representation(
                    body: body, contentType: key.format.contentType, locale: locale, vary: vary, lastModifiedSeconds: lastModified,
                    ambiguous: ambiguous, cacheControl: cacheControl, codings: codings, extraHeaders: extraHeaders,
                    sharedExtraHeaders: revoked)
            }
        }
        let completer: @Sendable () -> Representation? = {
            guard let brotli = Compressor.brotlied(body) else { return nil }
            var codings: [ContentCoding: [UInt8]] = [.br: brotli]
            codings[.gzip] = gzipped
            return try? make(codings)
        }
        let built = try RepresentationError.wrap { () throws(MicroHTTPDError) -> Representation in
            try Representation(
                body: body, contentType: key.format.contentType, locale: locale, vary: vary, lastModifiedSeconds: lastModified,
                ambiguous: ambiguous, cacheControl: cacheControl, codings: gzipped.map { [.gzip: $0] } ?? [:], extraHeaders: extraHeaders,
                sharedExtraHeaders: revoked, completer: completer)
        }
        let budget = self.budget
        let (cached, sweep) = variants.withLock { cache -> (Representation, Bool) in
            if let raced = cache[key] { return (raced, false) }
            if cache.count >= Self.variantLimit, let victim = cache.first {
                cache[victim.key] = nil
                budget.removed(victim.value)
            }
            cache[key] = built
            return (built, budget.added(built))
        }
        if cached === built {
            if brotliNow { return (completed(key, built), sweep) }
            // Weak: an entry dropped meanwhile (a newer snapshot, a sweep) needs no brotli form.
            Compressor.queue.async { [weak self] in _ = self?.completed(key, built) }
        }
        return (cached, sweep)
    }

    /// The cached representation for `key` when it can be served as it is: cached, and complete when the client
    /// needs the brotli form now (nil: it must be built, off the request's thread).
    func ready(_ key: VariantKey, brotliNow: Bool, metrics: Metrics) -> Representation? {
        guard let hit = variants.withLock({ $0[key] }), !brotliNow || hit.completer == nil else { return nil }
        metrics.cacheHits.add(1, ordering: .relaxed)
        hit.markUsed()
        return hit
    }

    /// `partial` with its brotli form made (now, on the caller's thread), and swapped into the cache in its place.
    func completed(_ key: VariantKey, _ partial: Representation) -> Representation {
        guard let completer = partial.completer else { return partial }
        let current = variants.withLock { $0[key] }
        guard current === partial else { return current ?? partial }  // completed or dropped meanwhile
        guard let full = completer() else { return partial }
        let budget = self.budget
        return variants.withLock { cache in
            guard cache[key] === partial else { return cache[key] ?? full }
            cache[key] = full
            budget.removed(partial)
            // A sweep is started by requests' own additions; this swap only accounts for the bytes.
            if budget.added(full) { budget.sweepFinished() }
            return full
        }
    }
}
